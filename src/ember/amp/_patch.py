"""Route the ops of the policy table through the casting wrapper while autocast is on.

As the profiler does (``ember.profiler._ops``), each listed function's code is swapped for a
trampoline that calls ``cast_and_call`` with a copy of the original; every path to the op
(``ember.matmul``, ``x @ w``, ``Tensor.matmul``, ``F.linear`` inside ``nn.Linear``) holds the
same function object, so all of them are reached, and nothing is paid once the code is back.

The swap is process-wide and lasts while some thread has autocast on; the wrapper reads the
calling thread's state, so threads without autocast run the ops as written. The profiler may
swap the same functions: whichever swapped last calls the other's trampoline. When the
profiler still holds a function that autocast released, autocast's trampoline stays below it
and restores the original on its first call after the profiler lets go.
"""

from __future__ import annotations

import sys
import threading
import types

import numpy as _np

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd import grad_mode as _gm
from ..profiler._ops import closure_trampoline
from . import policy
from .state import state

_KWARG = "_ember_amp"
# the NumPy dtypes autocast casts; bfloat16's joins at the first region (ml_dtypes loads on use)
_ELIGIBLE = {dt.float16.np, dt.float32.np}
_FLOAT32 = _np.dtype("float32")
_lock = threading.Lock()
_holders = [0]
_installed: list = []  # _prepare(...) of each function swapped now


def _is_ours(code: types.CodeType) -> bool:
    return _KWARG in code.co_varnames


class _Op:
    """What the wrapper needs about one op: its policy per device, where ``dtype=`` sits."""

    __slots__ = ("original", "function", "categories", "dtype_position")

    def __init__(self, original, function, categories: dict, dtype_position):
        self.original = original
        self.function = function
        self.categories = categories
        self.dtype_position = dtype_position


def _underlying_code(fn) -> types.CodeType:
    """The code an op was written with, under any trampolines (ours or the profiler's)."""
    code, kwdefaults = fn.__code__, fn.__kwdefaults__ or {}
    while True:
        if _KWARG in code.co_varnames and _KWARG in kwdefaults:
            inner = kwdefaults[_KWARG][1].original
        elif "_ember_op" in code.co_varnames and "_ember_op" in kwdefaults:
            inner = kwdefaults["_ember_op"][1][0]
        else:
            return code
        code, kwdefaults = inner.__code__, inner.__kwdefaults__ or {}


def _dtype_position(fn):
    code = _underlying_code(fn)
    names = code.co_varnames[: code.co_argcount]
    return names.index("dtype") if "dtype" in names else None


def _innermost(fn):
    """The op under decorators (``out=`` handling, deprecation notes): the function that
    Tensor methods and the other modules hold, so that swapping it reaches every path."""
    while isinstance(getattr(fn, "__wrapped__", None), types.FunctionType):
        fn = fn.__wrapped__
    return fn


_resolved: list = [-1, []]  # (number of loaded modules when resolved, [(function, row)])


def _functions() -> list:
    """(function, {device: category}) for every op of the table that exists, each once.

    Resolved again only when modules were imported since (an op family loaded on first use).
    """
    if _resolved[0] == len(sys.modules):
        return _resolved[1]
    found: dict = {}
    for where, *categories in policy.POLICY:
        for location in where.split():
            module_name, _, name = location.partition(":")
            module = sys.modules.get(module_name)
            if module is None:
                continue  # a namespace nobody imported has no op anyone can call
            fn = _innermost(getattr(module, name, None))
            if isinstance(fn, types.FunctionType) and id(fn) not in found:
                found[id(fn)] = (fn, dict(zip(policy.DEVICES, categories)))
    _resolved[0], _resolved[1] = len(sys.modules), list(found.values())
    return _resolved[1]


def hold(on: bool) -> None:
    """One more (or one fewer) thread with autocast on; swap the code on the first, back after
    the last."""
    with _lock:
        _holders[0] += 1 if on else -1
        if on and _holders[0] == 1:
            _install()
        elif not on and _holders[0] == 0:
            _uninstall()


_plan: list = [None, []]  # (the resolved functions it was made for, [_prepare(...) each])


def _install() -> None:
    if dt.is_available(dt.bfloat16):
        _ELIGIBLE.add(dt.bfloat16.np)
    functions = _functions()
    if _plan[0] is not functions:
        _plan[0], _plan[1] = functions, [_prepare(fn, row) for fn, row in functions]
    plan = _plan[1]
    for i, (fn, code, kwdefaults, trampoline, ours) in enumerate(plan):
        if fn.__code__ is not code or fn.__kwdefaults__ is not kwdefaults:
            # swapped by someone else since (the profiler): wrap what is there now
            fn, code, kwdefaults, trampoline, ours = plan[i] = _prepare(
                fn, ours[_KWARG][1].categories
            )
        fn.__code__ = trampoline
        fn.__kwdefaults__ = ours
    _installed[:] = plan


def _prepare(fn, categories: dict) -> tuple:
    """(function, its code, its kwdefaults, trampoline, our kwdefaults): made once, reused by
    later regions."""
    original = types.FunctionType(
        fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
    )
    original.__kwdefaults__ = fn.__kwdefaults__
    op = _Op(original, fn, categories, _dtype_position(fn))
    n_free = len(fn.__code__.co_freevars)
    trampoline = closure_trampoline(n_free, _KWARG).replace(co_name=fn.__code__.co_name)
    return fn, fn.__code__, fn.__kwdefaults__, trampoline, {_KWARG: (cast_and_call, op)}


def _uninstall() -> None:
    for fn, code, kwdefaults, _, ours in _installed:
        if fn.__kwdefaults__ is ours:
            fn.__code__ = code
            fn.__kwdefaults__ = kwdefaults
        # else the profiler swapped it after us; our trampoline, called later, restores it
    _installed.clear()


def _restore_if_released(op: _Op) -> None:
    fn = op.function
    entry = fn.__kwdefaults__.get(_KWARG) if fn.__kwdefaults__ else None
    if entry is not None and entry[1] is op and not _holders[0]:
        fn.__code__ = op.original.__code__
        fn.__kwdefaults__ = op.original.__kwdefaults__


# --- the wrapper ------------------------------------------------------------------------------


def _first_device(args, kwargs):
    for a in args:
        if isinstance(a, Tensor):
            return device_type_of(a)
        if a.__class__ in (list, tuple) and a and isinstance(a[0], Tensor):
            return device_type_of(a[0])
    for a in kwargs.values():
        if isinstance(a, Tensor):
            return device_type_of(a)
        if a.__class__ in (list, tuple) and a and isinstance(a[0], Tensor):
            return device_type_of(a[0])
    return None


def device_type_of(t: Tensor) -> str:
    """``"cpu"`` or ``"cuda"`` for a tensor (a hook for tests without a GPU)."""
    return "cpu" if isinstance(t._data, _np.ndarray) else "cuda"


def _eligible(a, device: str) -> bool:
    return isinstance(a, Tensor) and a._data.dtype in _ELIGIBLE and device_type_of(a) == device


def _cast(t: Tensor, to: dt.dtype, device: str, upcast: bool = False) -> Tensor:
    """``t`` in dtype ``to`` (with ``upcast``: rounded to ``to``, held in float32); the
    lower-precision casts of float32 leaf parameters are cached for the region."""
    if t._data.dtype == to.np and not upcast:
        return t
    if (
        state.cache_enabled
        and to is state.dtype[device]
        and t._data.dtype == _FLOAT32
        and t._rg
        and t._grad_fn is None
        and t._base is None
        and _gm.state.enabled
    ):
        key = (id(t), to, upcast)
        hit = state.cache.get(key)
        if hit is not None and hit[0] is t and hit[1] == t._vc[0]:
            return hit[2]
        out = _round(t, to, upcast)
        state.cache[key] = (t, t._vc[0], out)  # holding t keeps its id from being reused
        return out
    return _round(t, to, upcast)


def _round(t: Tensor, to: dt.dtype, upcast: bool) -> Tensor:
    out = t.to(to) if t._data.dtype != to.np else t
    return out.to(dt.float32) if upcast else out


def _cast_all(values, to: dt.dtype, device: str, upcast: bool = False):
    out = []
    for a in values:
        if a.__class__ in (list, tuple):
            a = a.__class__(_cast(x, to, device, upcast) if _eligible(x, device) else x for x in a)
        elif _eligible(a, device):
            a = _cast(a, to, device, upcast)
        out.append(a)
    return out


def _lower_outputs(out, to: dt.dtype):
    """The float32 results of an upcast lower-precision op, rounded to ``to``."""
    if isinstance(out, Tensor):
        return out.to(to) if out._data.dtype == _FLOAT32 else out
    if out.__class__ in (list, tuple):
        return out.__class__(_lower_outputs(o, to) for o in out)
    return out


def _widest(values, device: str) -> dt.dtype:
    """PyTorch's promote policy: float32 if any eligible input is float32, else the lower type."""
    lower = state.dtype[device]
    widest = lower
    for a in values:
        for x in a if a.__class__ in (list, tuple) else (a,):
            if _eligible(x, device) and x._data.dtype != widest.np:
                if x._data.dtype == _FLOAT32 or widest is dt.float32:
                    widest = dt.float32
                else:
                    raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return widest


_BCE_MESSAGE = (
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
    "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
    "In this case, combine the two layers using "
    "torch.nn.functional.binary_cross_entropy_with_logits\n"
    "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
    "safe to autocast."
)


def cast_and_call(op: _Op, args: tuple, kwargs: dict):
    """Run ``op`` with its inputs cast as the calling thread's autocast state says."""
    st = state
    if st.depth or not st.counted:
        if not _holders[0]:
            _restore_if_released(op)
        return op.original(*args, **kwargs)
    device = _first_device(args, kwargs)
    category = op.categories.get(device) if device is not None else None
    if category is None or not st.enabled[device]:
        return op.original(*args, **kwargs)
    if category == "lower":
        to = st.dtype[device]
    elif category == "fp32":
        to = dt.float32
    elif category == "fp32_opt":
        pos = op.dtype_position
        explicit = kwargs.get("dtype") is not None or (
            pos is not None and len(args) > pos and args[pos] is not None
        )
        first = args[0] if args else kwargs.get("input")
        if explicit or not _eligible(first, device):
            to = None
        else:
            to = dt.float32
    elif category == "promote":
        to = _widest(list(args) + list(kwargs.values()), device)
    elif category == "keep":
        to = None
    else:  # banned
        raise RuntimeError(_BCE_MESSAGE)
    # NumPy has no half-precision GEMM (float16 runs ~100x slower than float32, and bfloat16
    # matmul returns float32): on the CPU the lower-precision ops take inputs rounded to the
    # lower type but held in float32, and their results are rounded back, which is what a
    # half GEMM accumulating in float32 computes
    upcast = category == "lower" and device == "cpu"
    if to is not None:
        args = _cast_all(args, to, device, upcast)
        if kwargs:
            keys = list(kwargs)
            kwargs = dict(zip(keys, _cast_all([kwargs[k] for k in keys], to, device, upcast)))
    st.depth += 1
    try:
        out = op.original(*args, **kwargs)
    finally:
        st.depth -= 1
    return _lower_outputs(out, to) if upcast else out
