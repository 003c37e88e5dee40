"""The one hook into the rest of ember: ``install()`` (run when ``ember.nested`` is first
imported) routes the public functions of ``ember`` and ``ember.nn.functional`` to the nested
kernels when a nested tensor is among their first arguments, and gives ``NestedTensor`` its
methods.

ember's functions have no ``__torch_function__``. As the profiler and autocast do, each
function with a nested kernel gets, in place, a code that tests its first arguments' classes
and calls the kernel or a copy of the original: the function object stays the same, so every
module holding it, ``inspect.signature`` and identity checks see no difference. No nested
tensor can exist before this runs, so a program that never uses ``ember.nested`` calls the
functions as they were; one that does pays one more call and a class test or two per
call of those functions (about 0.2 µs).
"""

from __future__ import annotations

import functools
import inspect
import types

from ember import nn

from .. import _backend
from .. import _op_namespace as ember
from .._tensor import Tensor
from . import _matmul, _nn, _pointwise, _reduce, _shape
from ._padding import to_padded_tensor
from ._storage import KERNELS, NestedStorage
from ._tensor import JaggedTensor, NestedTensor, StridedNestedTensor

NESTED_CLASSES = frozenset({JaggedTensor, StridedNestedTensor})

UNARY = (
    "abs absolute neg negative positive relu sigmoid tanh exp exp2 expm1 log log2 log10 log1p "
    "sqrt rsqrt sin cos tan sinh cosh asin acos atan asinh acosh atanh arcsin arccos arctan "
    "erf erfc erfinv sign sgn square reciprocal floor ceil round trunc frac logical_not isnan "
    "isinf isfinite isneginf isposinf signbit nan_to_num clamp clip logit sinc deg2rad rad2deg "
    "bitwise_not silu selu celu mish hardswish hardsigmoid hardtanh relu6 leaky_relu elu gelu "
    "softplus softsign tanhshrink logsigmoid threshold hardshrink softshrink glu dropout "
    "alpha_dropout feature_alpha_dropout"
).split()
UNARY_INPLACE = (
    "relu_ sigmoid_ tanh_ exp_ neg_ abs_ sqrt_ clamp_ clip_ sin_ cos_ log_ floor_ ceil_ round_ "
    "trunc_ reciprocal_ square_ fill_ zero_ nan_to_num_ sign_ erf_ elu_ leaky_relu_ hardtanh_ "
    "threshold_ dropout_ celu_ selu_ rrelu_ uniform_ normal_ bernoulli_"
).split()
BINARY = (
    "add sub subtract mul multiply div divide true_divide pow float_power maximum minimum "
    "fmax fmin fmod remainder atan2 arctan2 eq ne lt le gt ge greater less greater_equal "
    "less_equal not_equal logical_and logical_or logical_xor copysign hypot floor_divide xlogy "
    "bitwise_and bitwise_or bitwise_xor"
).split()
BINARY_INPLACE = "add_ sub_ mul_ div_ pow_ copy_ maximum_ minimum_ fmod_ remainder_".split()
OPERATORS = {
    "__add__": "add",
    "__radd__": "add",
    "__sub__": "sub",
    "__rsub__": "sub",
    "__mul__": "mul",
    "__rmul__": "mul",
    "__truediv__": "div",
    "__rtruediv__": "div",
    "__floordiv__": "floor_divide",
    "__rfloordiv__": "floor_divide",
    "__mod__": "remainder",
    "__pow__": "pow",
    "__rpow__": "pow",
    "__eq__": "eq",
    "__ne__": "ne",
    "__lt__": "lt",
    "__le__": "le",
    "__gt__": "gt",
    "__ge__": "ge",
    "__and__": "bitwise_and",
    "__or__": "bitwise_or",
    "__xor__": "bitwise_xor",
}
INPLACE_OPERATORS = "__iadd__ __isub__ __imul__ __itruediv__".split()
CONVERSIONS = "float double half bfloat16 long int short bool byte char cpu cuda type_as".split()
LIKE_FACTORIES = "zeros_like ones_like empty_like full_like rand_like randn_like".split()


_TRAMPOLINES: dict = {}  # (parameters, free variables) -> trampoline code


def _any_nested(kwargs: dict) -> bool:
    for value in kwargs.values():
        if value.__class__ in NESTED_CLASSES:
            return True
    return False


def _trampoline(code: types.CodeType, sequence_first: bool = False) -> types.CodeType:
    """Code with the parameters and free variables of ``code`` that calls the nested kernel
    ``_ember_op[0]`` when its first or second argument (or a ``**kwargs`` value) is a nested
    tensor, and the original ``_ember_op[1][0]`` otherwise. The keyword ``_ember_op`` and the
    ``[1][0]`` place of the original follow the profiler's convention, which autocast and the
    ONNX exporter see through; the free variables keep their names, so code reading a
    closure by name still works."""
    names = code.co_varnames
    n_pos, n_kw = code.co_argcount, code.co_kwonlyargcount
    positional, keyword_only = names[:n_pos], names[n_pos : n_pos + n_kw]
    rest = n_pos + n_kw
    var_args = names[rest] if code.co_flags & inspect.CO_VARARGS else None
    var_kwargs = names[rest + bool(var_args)] if code.co_flags & inspect.CO_VARKEYWORDS else None
    key = (positional, code.co_posonlyargcount, keyword_only, var_args, var_kwargs)
    key += (code.co_freevars, sequence_first)
    cached = _TRAMPOLINES.get(key)
    if cached is not None:
        return cached
    params = list(positional)
    if code.co_posonlyargcount:
        params.insert(code.co_posonlyargcount, "/")
    params.append(f"*{var_args}" if var_args else "*")
    params += [f"{k}=None" for k in keyword_only] + ["_ember_op=None"]
    if var_kwargs:
        params.append(f"**{var_kwargs}")
    call = list(positional) + ([f"*{var_args}"] if var_args else [])
    call += [f"{k}={k}" for k in keyword_only] + ([f"**{var_kwargs}"] if var_kwargs else [])
    tests = [f"{p}.__class__ in _ember_op[2]" for p in positional[:2]]
    if sequence_first and (positional or var_args):  # cat([nt, nt], dim): the list's first
        first = positional[0] if positional else f"{var_args}[0]"
        guard = "" if positional else f"{var_args} and "
        tests.append(
            f"({guard}({first}.__class__ is list or {first}.__class__ is tuple) and {first} "
            f"and {first}[0].__class__ in _ember_op[2])"
        )
    if var_args and len(positional) < 2:
        tests.append(
            f"({var_args} and ({var_args}[0].__class__ in _ember_op[2] or "
            f"{var_args}[1:2] and {var_args}[1].__class__ in _ember_op[2]))"
        )
    if var_kwargs:
        tests.append(f"({var_kwargs} and _ember_op[3]({var_kwargs}))")
    src = ["def _outer():"]
    src += [f"    {name} = None" for name in code.co_freevars]
    src.append(f"    def op({', '.join(params)}):")
    if code.co_freevars:
        src.append("        if 0:")
        src.append(f"            ({', '.join(code.co_freevars)},)")
    if tests:
        src.append(f"        if {' or '.join(tests)}:")
        src.append(f"            return _ember_op[0]({', '.join(call)})")
    src.append(f"        return _ember_op[1][0]({', '.join(call)})")
    src.append("    return op")
    namespace: dict = {}
    # compiled under this file's name: code that looks for the user's frame (anomaly mode,
    # explain, the profiler's stacks) skips it as one of ember's own
    exec(compile("\n".join(src), __file__, "exec"), namespace)
    cached = _TRAMPOLINES[key] = namespace["_outer"]().__code__
    return cached


def _without_out(kernel):
    """The kernel for a function with ``out=``: a nested result has no dense ``out`` to fill."""

    def nested(*args, out=None, **kwargs):
        if out is not None:
            raise RuntimeError("out=: not supported for NestedTensor in ember")
        return kernel(*args, **kwargs)

    return nested


_patched: dict = {}  # id(function) -> function: each patched once, aliases included


def _patch(fn, make_kernel, sequence_first: bool = False) -> None:
    """Give ``fn`` (in place, so every reference to it sees the change) a code that routes
    nested arguments to the kernel ``make_kernel(original)`` builds."""
    if not isinstance(fn, types.FunctionType) or id(fn) in _patched:
        return
    original = types.FunctionType(
        fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
    )
    original.__kwdefaults__ = fn.__kwdefaults__
    original.__qualname__ = fn.__qualname__
    original.__module__ = fn.__module__
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None
    kernel = make_kernel(original)
    code = fn.__code__
    if "out" in code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]:
        kernel = _without_out(kernel)
    kwdefaults = dict(fn.__kwdefaults__ or {})
    kwdefaults["_ember_op"] = (kernel, (original, fn.__name__), NESTED_CLASSES, _any_nested)
    trampoline = _trampoline(fn.__code__, sequence_first)
    fn.__code__ = trampoline.replace(co_name=fn.__code__.co_name)
    fn.__kwdefaults__ = kwdefaults
    if signature is not None:
        fn.__signature__ = signature
    fn.__nested_dispatch__ = True
    _patched[id(fn)] = fn


def _function_kernels() -> dict:
    """name -> (factory of a nested kernel from the original function)."""
    kernels: dict = {}
    for name in UNARY + UNARY_INPLACE:
        kernels[name] = _pointwise.unary
    for name in BINARY:
        kernels[name] = functools.partial(_pointwise.binary, name=name)
    for name in ("sum", "mean", "nansum"):
        kernels[name] = functools.partial(_reduce.reduction, name=name)
    for name in ("amax", "amin"):
        kernels[name] = functools.partial(_reduce.reduction, name=name, takes_dtype=False)
    for name in ("softmax", "log_softmax"):
        kernels[name] = functools.partial(_reduce.softmax_like, name=name)
    for name in LIKE_FACTORIES:
        kernels[name] = _pointwise.like_factory
    fixed = {
        "matmul": _matmul.matmul,
        "bmm": _matmul.bmm,
        "linear": _matmul.linear,
        "layer_norm": _nn.layer_norm,
        "scaled_dot_product_attention": _nn.scaled_dot_product_attention,
        "transpose": _shape.transpose,
        "swapaxes": _shape.transpose,
        "swapdims": _shape.transpose,
        "flatten": _shape.flatten,
        "unflatten": _shape.unflatten,
        "unsqueeze": _shape.unsqueeze,
        "squeeze": _shape.squeeze,
        "narrow": _shape.narrow,
        "chunk": _shape.chunk,
        "cat": _shape.cat,
        "concat": _shape.cat,
        "concatenate": _shape.cat,
        "embedding": _nn.embedding,
        "split": _shape.split,
        "permute": _shape.permute,
        "reshape": _shape.reshape,
        "clone": _pointwise.clone,
        "where": _pointwise.where,
        "detach": lambda input: input.detach(),
        "unbind": lambda input, dim=0: input.unbind(dim),
    }
    for name, kernel in fixed.items():
        kernels[name] = functools.partial(_fixed, kernel)
    return kernels


def _fixed(kernel, original):
    """A kernel that does not call the original op (it calls ember's ops itself)."""
    return kernel


SEQUENCE_FIRST = frozenset({"cat", "concat", "concatenate"})


def _patch_namespace(namespace, kernels: dict) -> None:
    for name, make_kernel in kernels.items():
        _patch(getattr(namespace, name, None), make_kernel, name in SEQUENCE_FIRST)


def _install_methods() -> None:
    N = NestedTensor
    for name in UNARY + UNARY_INPLACE + CONVERSIONS:
        method = getattr(Tensor, name, None)
        if method is not None:
            setattr(N, name, _pointwise.unary(method))
    for name in BINARY:
        method = getattr(Tensor, name, None)
        if method is not None:
            setattr(N, name, _pointwise.binary(method, name))
    for name, op in OPERATORS.items():
        setattr(N, name, _pointwise.binary(getattr(Tensor, name), op))
    for name in BINARY_INPLACE + INPLACE_OPERATORS:
        method = getattr(Tensor, name, None)
        if method is not None:
            setattr(N, name, _pointwise.inplace(method, name.strip("_")))
    N.__neg__ = _pointwise.unary(Tensor.__neg__)
    N.__abs__ = _pointwise.unary(Tensor.__abs__)
    N.__hash__ = Tensor.__hash__
    for name in ("sum", "mean", "nansum"):
        setattr(N, name, _reduce.reduction(getattr(Tensor, name), name))
    for name in ("amax", "amin"):
        setattr(N, name, _reduce.reduction(getattr(Tensor, name), name, takes_dtype=False))
    N.softmax = _reduce.softmax_like(Tensor.softmax, "softmax")
    N.log_softmax = _reduce.softmax_like(Tensor.log_softmax, "log_softmax")
    N.transpose = N.swapaxes = N.swapdims = _shape.transpose
    N.view = _shape.view
    N.reshape = _shape.reshape
    N.unflatten = _shape.unflatten
    N.flatten = _shape.flatten
    N.unsqueeze = _shape.unsqueeze
    N.squeeze = _shape.squeeze
    N.narrow = _shape.narrow
    N.chunk = _shape.chunk
    N.split = _shape.split
    N.permute = _shape.permute
    N.matmul = N.__matmul__ = _matmul.matmul
    N.__rmatmul__ = lambda self, other: _matmul.matmul(other, self)
    N.bmm = _matmul.bmm
    N.where = lambda self, condition, other: _pointwise.where(condition, self, other)
    N.to = _pointwise.to
    N.clone = _pointwise.clone
    N.contiguous = _pointwise.contiguous
    N.to_padded_tensor = to_padded_tensor


def install() -> None:
    """Route ember's functions to the nested kernels and give NestedTensor its methods
    (idempotent; run once when ``ember.nested`` is first imported)."""
    _backend._MODULE_OF_TYPE[NestedStorage] = KERNELS
    _install_methods()
    if not hasattr(Tensor, "to_padded_tensor"):
        Tensor.to_padded_tensor = to_padded_tensor  # on a dense tensor: PyTorch's error
    kernels = _function_kernels()
    _patch_namespace(ember, kernels)
    _patch_namespace(nn.functional, kernels)
