"""Which functions count as ops for the profiler, and how it times them.

While a profile is open, each op function's code is swapped for a small trampoline that
times a call to a copy of the original; stopping swaps the original code back. Every
reference to the function (``ember.add``, ``Tensor.add``, ``from ... import add``) sees the
same function object, so all are timed, and nothing is paid when no profile is open.
"""

from __future__ import annotations

import inspect
import types

# Tensor methods and helpers that are bookkeeping, not ops
_NOT_OPS = frozenset(
    {
        "backward",
        "register_hook",
        "register_post_accumulate_grad_hook",
        "retain_grad",
        "requires_grad_",
        "size",
        "dim",
        "numel",
        "nelement",
        "ndimension",
        "element_size",
        "tolist",
        "numpy",
        "data_ptr",
        "storage_offset",
        "stride",
        "is_contiguous",
        "is_floating_point",
        "is_complex",
        "get_device",
        "untyped_storage",
        "type",
        "make_view",
    }
)
_NOT_DUNDER_OPS = frozenset(
    {"__init__", "__new__", "__repr__", "__str__", "__format__", "__hash__", "__len__"}
)


def _is_op(name: str, obj, module_name: str) -> bool:
    if not isinstance(obj, types.FunctionType) or obj.__module__ != module_name:
        return False
    if name.startswith("__") and name.endswith("__"):
        return name not in _NOT_DUNDER_OPS
    return not name.startswith("_") and name not in _NOT_OPS


def op_functions() -> list:
    """(function, op name) for every op, each function once."""
    import importlib
    import pkgutil

    import ember.ops
    from ember import _creation, _tensor, _tensor_methods, linalg
    from ember.nn import functional

    op_modules = [
        importlib.import_module(f"ember.ops.{info.name}")
        for info in pkgutil.iter_modules(ember.ops.__path__)
        if not info.name.startswith("_")
    ]
    found: dict = {}
    for module in (*op_modules, _creation, functional, linalg):
        for name, obj in vars(module).items():
            if _is_op(name, obj, module.__name__):
                found.setdefault(
                    id(obj), (obj, obj.__name__ if obj.__name__ != "<lambda>" else name)
                )
    method_modules = {_tensor.__name__, _tensor_methods.__name__, "ember._inplace"}
    for name, obj in vars(_tensor.Tensor).items():
        if isinstance(obj, types.FunctionType) and obj.__module__ in method_modules:
            if _is_op(name, obj, obj.__module__):
                found.setdefault(id(obj), (obj, name.strip("_")))
    return list(found.values())


def op_name(fn, name: str) -> str:
    """The name of op ``fn`` that ``op_functions`` gave ``name``: ``zeros_like``,
    ``ones_like``, ... share one closure named ``make``, which the factory it closes over
    tells apart (for an export's or a graph's node)."""
    if name != "make":
        return name
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    factory = cells.get("factory")
    return f"{factory.cell_contents.__name__}_like" if factory is not None else name


_TRAMPOLINES: dict = {}


def closure_trampoline(n_free: int, keyword: str = "_ember_op") -> types.CodeType:
    """Code that calls ``keyword[0](keyword[1], args, kwargs)`` (``keyword`` a keyword-only
    argument) and has ``n_free`` free variables, so that it can replace the code of a closure
    with that many cells; the profiler's keyword is ``_ember_op``, autocast's ``_ember_amp``."""
    code = _TRAMPOLINES.get((keyword, n_free))
    if code is None:
        names = [f"_cell{i}" for i in range(n_free)]
        src = ["def _outer():"]
        src += [f"    {n} = None" for n in names]
        src.append(f"    def op(*args, {keyword}=None, **kwargs):")
        if names:
            src.append("        if 0:")
            src.append(f"            ({', '.join(names)},)")
        src.append(f"        return {keyword}[0]({keyword}[1], args, kwargs)")
        src.append("    return op")
        namespace: dict = {}
        exec("\n".join(src), namespace)
        code = _TRAMPOLINES[keyword, n_free] = namespace["_outer"]().__code__
    return code


class Patched:
    """The op functions timed by ``runner(entry, args, kwargs)`` until ``restore()``."""

    def __init__(self, runner):
        self._saved = []
        for fn, name in op_functions():
            original = types.FunctionType(
                fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
            )
            original.__kwdefaults__ = fn.__kwdefaults__
            self._saved.append((fn, fn.__code__, fn.__kwdefaults__))
            n_free = len(fn.__code__.co_freevars)
            fn.__code__ = closure_trampoline(n_free).replace(co_name=fn.__code__.co_name)
            fn.__kwdefaults__ = {"_ember_op": (runner, (original, name))}

    def restore(self) -> None:
        for fn, code, kwdefaults in self._saved:
            fn.__code__ = code
            fn.__kwdefaults__ = kwdefaults
        self._saved.clear()


_signatures: dict = {}


def unpatched(fn):
    """The op behind a patched op's trampolines: the profiler's (a profile may be open during
    an export or a graph's recording) and autocast's, which stays on an op that was not called
    since an autocast region closed inside a profile, until that op's next call restores it."""
    while fn.__kwdefaults__:
        if "_ember_op" in fn.__kwdefaults__:
            fn = fn.__kwdefaults__["_ember_op"][1][0]
        elif "_ember_amp" in fn.__kwdefaults__:
            fn = fn.__kwdefaults__["_ember_amp"][1].original
        else:
            break
    return fn


def signature_of(fn):
    """``fn``'s ``inspect.signature`` (False where it has none), behind any profiler or
    autocast trampoline (their code is shared by every op they patch), cached by code object:
    a recording (an export, a graph) calls fresh copies of the op functions."""
    fn = unpatched(fn)
    signature = _signatures.get(fn.__code__)
    if signature is None:
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            signature = False
        _signatures[fn.__code__] = signature
    return signature
