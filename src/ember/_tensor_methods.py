"""Attach the ops to Tensor as methods and operators, PyTorch's way (``x.sum()``, ``x + y``)."""

from __future__ import annotations

import warnings

from . import _backend, _inplace
from . import _creation as creation
from . import _dtype as dt
from . import _memory_format as _mf
from ._random import argument_checks as random_checks
from ._size_argument import parse_size
from ._tensor import Tensor
from .autograd import grad_mode as _gm
from .ops import elementwise as ew
from .ops import indexing as ix
from .ops import linalg as la
from .ops import reduction as red
from .ops import shape as sh
from .ops._dispatch import NUMBERS, named
from .ops._dispatch import result as _dispatch_result

T = Tensor


class _AttachedOnFirstUse:
    """A Tensor attribute of a family that loads on first use: reading it (``x.to_sparse``,
    ``Tensor.stft``) runs ``load``, whose import attaches the real attribute in its place."""

    __slots__ = ("name", "load")

    def __init__(self, name: str, load) -> None:
        self.name, self.load = name, load

    def __get__(self, obj, cls=None):
        self.load()
        value = T.__dict__.get(self.name, self)
        if value is self:
            raise AttributeError(f"'Tensor' object has no attribute '{self.name}'")
        get = getattr(type(value), "__get__", None)
        return value if get is None else get(value, obj, T if cls is None else cls)


def attach_on_first_use(names, load) -> None:
    """Give Tensor the attributes ``names``, which ``load()`` attaches when one is first read:
    how a family above the op layer (sparse, stft) keeps ``import ember`` quick."""
    for name in names:
        if name not in T.__dict__:
            setattr(T, name, _AttachedOnFirstUse(name, load))


# --- plain methods: Tensor.name(self, ...) == ember.name(self, ...) ---
_METHOD_SOURCES = {
    ew: [
        "add",
        "sub",
        "subtract",
        "mul",
        "multiply",
        "div",
        "divide",
        "true_divide",
        "floor_divide",
        "pow",
        "float_power",
        "atan2",
        "arctan2",
        "maximum",
        "minimum",
        "fmax",
        "fmin",
        "fmod",
        "remainder",
        "hypot",
        "logaddexp",
        "lerp",
        "addcmul",
        "addcdiv",
        "clamp",
        "clip",
        "clamp_min",
        "clamp_max",
        "logit",
        "nan_to_num",
        "round",
        "positive",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "greater",
        "greater_equal",
        "less",
        "less_equal",
        "not_equal",
        "logical_and",
        "logical_or",
        "logical_xor",
        "logical_not",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_not",
        "isnan",
        "isinf",
        "isfinite",
        "isposinf",
        "isneginf",
        "signbit",
        "isclose",
        "allclose",
        "equal",
        "arcsin",
        "arccos",
        "arctan",
        "negative",
        "sgn",
        "rsub",
    ]
    + list(ew.UNARY),
    red: [
        "sum",
        "sum_to_size",
        "mean",
        "prod",
        "amax",
        "amin",
        "max",
        "min",
        "argmax",
        "argmin",
        "var",
        "std",
        "norm",
        "logsumexp",
        "cumsum",
        "cumprod",
        "all",
        "any",
        "count_nonzero",
    ],
    sh: [
        "reshape",
        "view",
        "view_as",
        "reshape_as",
        "flatten",
        "unflatten",
        "squeeze",
        "unsqueeze",
        "permute",
        "transpose",
        "swapaxes",
        "swapdims",
        "t",
        "movedim",
        "moveaxis",
        "expand",
        "expand_as",
        "broadcast_to",
        "repeat",
        "tile",
        "split",
        "chunk",
        "unbind",
        "narrow",
        "select",
        "slice_scatter",
        "select_scatter",
        "flip",
        "fliplr",
        "flipud",
        "roll",
        "tril",
        "triu",
        "diagonal",
        "diagonal_scatter",
        "diag_embed",
        "diag",
        "repeat_interleave",
        "atleast_1d",
        "atleast_2d",
    ],
    ix: [
        "gather",
        "scatter",
        "scatter_add",
        "index_select",
        "index_add",
        "index_fill",
        "masked_fill",
        "masked_select",
        "masked_scatter",
        "take_along_dim",
        "take",
        "sort",
        "argsort",
        "msort",
        "topk",
        "kthvalue",
        "nonzero",
        "argwhere",
        "unique",
        "unique_consecutive",
        "index_put",
    ],
    la: ["matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "addmm", "tensordot"],
}
for _module, _names in _METHOD_SOURCES.items():
    for _name in _names:
        setattr(T, _name, getattr(_module, _name))

from .ops import activation as _act  # noqa: E402
from .ops import statistics as _stats  # noqa: E402

for _name in (
    "aminmax",
    "bincount",
    "corrcoef",
    "cov",
    "cummax",
    "cummin",
    "hash_tensor",
    "histc",
    "histogram",
    "logcumsumexp",
    "median",
    "mode",
    "nanmean",
    "nanmedian",
    "nanquantile",
    "nansum",
    "quantile",
    "renorm",
):
    setattr(T, _name, getattr(_stats, _name))

from .ops import numeric as _num  # noqa: E402
from .ops import scatter_reduce as _sr  # noqa: E402
from .ops import shape_composites as _shc  # noqa: E402

for _module, _names in {
    _num: (
        "copysign",
        "deg2rad",
        "rad2deg",
        "ldexp",
        "frexp",
        "gcd",
        "lcm",
        "heaviside",
        "nextafter",
        "logaddexp2",
        "fix",
        "sgn",
        "isreal",
        "bitwise_left_shift",
        "bitwise_right_shift",
    ),
    _sr: ("scatter_reduce", "index_reduce"),
    _shc: (
        "tensor_split",
        "hsplit",
        "vsplit",
        "dsplit",
        "split_with_sizes",
        "ravel",
        "rot90",
        "diagflat",
        "diff",
        "as_strided",
        "unfold",
        "index_copy",
        "put",
    ),
}.items():
    for _name in _names:
        setattr(T, _name, getattr(_module, _name))
T.unsafe_chunk = sh.chunk
T.unsafe_split = sh.split
T.unsafe_split_with_sizes = _shc.split_with_sizes
T.absolute = ew.abs
T.arccosh = ew.acosh
T.arcsinh = ew.asinh
T.arctanh = ew.atanh
T.__lshift__ = _num.bitwise_left_shift
T.__rshift__ = _num.bitwise_right_shift

T.softmax = _act.softmax
T.hardshrink = _act.hardshrink
T.prelu = _act.prelu
T.log_softmax = _act.log_softmax
T.inner = la.inner
T.det = la.det
T.inverse = la.inv
T.logdet = lambda self: la.det(self).log()
T.var_mean = red.var_mean
T.std_mean = red.std_mean

# --- properties ---
T.T = property(sh.full_transpose)
T.mT = property(sh.matrix_transpose)
T.H = property(la.conjugate_transpose)
T.mH = property(la.conjugate_matrix_transpose)


# --- operators ---
def _reflected(name: str, forward):
    """``Tensor.__radd__`` and kin: the forward op with the operands as given, refusing a self
    that is not a Tensor (``Tensor.__radd__(2, t)``) with torch's descriptor TypeError."""

    def method(self, other):
        if not isinstance(self, Tensor):
            raise TypeError(
                f"descriptor '{name}' for 'torch._C.TensorBase' objects doesn't apply to a "
                f"'{type(self).__name__}' object"
            )
        return forward(self, other)

    named(method, name)
    return method


T.__add__ = ew.add
T.__radd__ = _reflected("__radd__", ew.add)
T.__sub__ = ew.sub
T.__rsub__ = lambda self, other: ew.sub(other, self)
T.__mul__ = ew.mul
T.__rmul__ = _reflected("__rmul__", ew.mul)
T.__truediv__ = ew.div
T.__rtruediv__ = ew.reflected_div
T.__rdiv__ = T.__rtruediv__  # torch's Python-2 era name, still a Tensor method
T.__floordiv__ = ew.floor_divide
T.__rfloordiv__ = lambda self, other: ew.floor_divide(other, self)
T.__mod__ = ew.remainder
T.__rmod__ = lambda self, other: ew.remainder(other, self)
T.__pow__ = ew.pow
T.__rpow__ = lambda self, other: ew.pow(other, self)
T.__matmul__ = la.matmul
T.__rmatmul__ = lambda self, other: la.matmul(other, self)
T.__neg__ = ew.neg
T.__pos__ = ew.positive
T.__abs__ = ew.abs
T.__and__ = ew.bitwise_and
T.__rand__ = _reflected("__rand__", ew.bitwise_and)
T.__or__ = ew.bitwise_or
T.__ror__ = _reflected("__ror__", ew.bitwise_or)
T.__xor__ = ew.bitwise_xor
T.__rxor__ = _reflected("__rxor__", ew.bitwise_xor)
T.__lt__ = ew.lt
T.__le__ = ew.le
T.__gt__ = ew.gt
T.__ge__ = ew.ge


def _invert(self: Tensor) -> Tensor:
    kind = self._data.dtype.kind
    if kind == "b":
        return ew.logical_not(self)
    if kind not in "iu":
        raise TypeError(
            "~ (operator.invert) is only implemented on integer and Boolean-type tensors"
        )
    return ew.bitwise_not(self)


def _eq(self: Tensor, other):
    if other is None:
        return False
    return ew.eq(self, other)


def _ne(self: Tensor, other):
    if other is None:
        return True
    return ew.ne(self, other)


T.__invert__ = _invert
T.__eq__ = _eq
T.__ne__ = _ne
T.__hash__ = object.__hash__
T.__getitem__ = ix.getitem


def _setitem(self: Tensor, key, value) -> None:
    if isinstance(value, Tensor) or not isinstance(value, (int, float, bool)):
        value = value if isinstance(value, Tensor) else creation.tensor(value, dtype=self.dtype)
    _inplace.apply_inplace(
        self,
        ix.index_put_key,
        (key, value),
        "index_put_",
        needs_old=False,
        write_into=ix.index_put_key_into,
    )


T.__setitem__ = _setitem


# --- in-place forms ---
def _inplace_method(name: str, fn, needs_old: bool = True, resize: bool = False, into=None):
    """``self.<name>(...)`` as ``fn``'s result written into self; ``into(self, ...)``, where
    given, writes outside the graph only what the op changes (see apply_inplace)."""

    def method(self, *args, **kwargs):
        write_into = into
        if kwargs:
            write_into = into and (lambda t, *a: into(t, *a, **kwargs))
            return _inplace.apply_inplace(
                self,
                lambda old, *a: fn(old, *a, **kwargs),
                args,
                name,
                needs_old,
                resize,
                write_into,
            )
        return _inplace.apply_inplace(self, fn, args, name, needs_old, resize, write_into)

    named(method, name)
    return method


# ATen multiplies a 2-byte float by a number read in float32: ew.mul does, not NumPy here
_OPMATH = ("mul_",)


def _fast_arith(name: str, fn, ufunc: str, needs_old: bool):
    """add_/sub_/mul_/div_: with no graph to record, write straight into the buffer."""
    slow = _inplace_method(name, fn, needs_old)

    def method(self, other, *, alpha=1):
        if not _gm.state.enabled or not (
            self._rg or (other.__class__ not in NUMBERS and other._rg)
        ):
            data = self._data
            value = other._data if isinstance(other, Tensor) else other
            if (
                _backend.writeable(data)
                and data.dtype.kind == "f"
                and (value.__class__ in NUMBERS or value.dtype == data.dtype)
                and not (
                    data.dtype.itemsize == 2 and value.__class__ in NUMBERS and name in _OPMATH
                )
            ):
                if isinstance(other, Tensor) and type(value) is not type(data):
                    return slow(self, other, alpha=alpha) if alpha != 1 else slow(self, other)
                if alpha != 1:  # the optimizer's p.add_(d_p, alpha=-lr)
                    value = value * alpha
                    if value.__class__ not in NUMBERS and value.dtype != data.dtype:
                        value = value.astype(data.dtype)
                try:
                    xp = _backend.array_module(data)
                    if data.size >= _backend.SPLIT_FROM["binary"]:  # on every core
                        _backend.split_ufunc(getattr(xp, ufunc), data, value, out=data)
                    else:
                        getattr(xp, ufunc)(data, value, out=data)
                except ValueError:
                    pass  # a shape error: let the general path report it PyTorch's way
                else:
                    self._vc[0] += 1
                    return self
        if alpha != 1:
            return slow(self, other, alpha=alpha)
        return slow(self, other)

    named(method, name)
    return method


T.add_ = _fast_arith("add_", ew.add, "add", False)
T.sub_ = _fast_arith("sub_", ew.sub, "subtract", False)


def _alpha_first_overload(name: str, method):
    """PyTorch still takes the pre-1.5 form ``x.add_(alpha, other)`` with a warning."""

    def overloaded(self, other, *args, alpha=1):
        if args:
            if len(args) != 1 or other.__class__ not in NUMBERS or not isinstance(args[0], T):
                raise TypeError(
                    f"{name}() received an invalid combination of arguments: expected "
                    f"(Tensor other, *, Number alpha)"
                )
            warnings.warn(
                f"This overload of {name} is deprecated:\n\t{name}(Number alpha, Tensor other)\n"
                f"Consider using one of the following signatures instead:\n\t{name}(Tensor "
                f"other, *, Number alpha = 1)",
                UserWarning,
                stacklevel=2,
            )
            other, alpha = args[0], other
        return method(self, other, alpha=alpha)

    named(overloaded, name)
    return overloaded


for _name in ("add", "sub", "add_", "sub_"):
    setattr(T, _name, _alpha_first_overload(_name, getattr(T, _name)))
T.mul_ = _fast_arith("mul_", ew.mul, "multiply", True)
T.div_ = _inplace_method("div_", ew.div)
T.__iadd__ = T.add_
T.__isub__ = T.sub_
T.__imul__ = T.mul_
T.__itruediv__ = T.div_

# in place outside the graph, these write only the elements they change, as torch's kernels
# (writers of other elements of one shared tensor keep their writes)
_WRITTEN_WHERE_CHANGED = {
    "scatter_": ix.scatter_into,
    "scatter_add_": ix.scatter_add_into,
    "index_add_": ix.index_add_into,
    "index_fill_": ix.index_fill_into,
}
_INPLACE = {
    "pow_": ew.pow,
    "floor_divide_": ew.floor_divide,
    "remainder_": ew.remainder,
    "fmod_": ew.fmod,
    "atan2_": ew.atan2,
    "clamp_": ew.clamp,
    "clip_": ew.clamp,
    "clamp_min_": ew.clamp_min,
    "clamp_max_": ew.clamp_max,
    "lerp_": ew.lerp,
    "addcmul_": ew.addcmul,
    "addcdiv_": ew.addcdiv,
    "logit_": ew.logit,
    "nan_to_num_": ew.nan_to_num,
    "round_": ew.round,
    "hypot_": ew.hypot,
    "maximum_": ew.maximum,
    "minimum_": ew.minimum,
    "tril_": sh.tril,
    "triu_": sh.triu,
    "scatter_": ix.scatter,
    "scatter_add_": ix.scatter_add,
    "index_add_": ix.index_add,
    "index_fill_": ix.index_fill,
    "masked_scatter_": ix.masked_scatter,
}
for _name, _fn in _INPLACE.items():
    setattr(T, _name, _inplace_method(_name, _fn, into=_WRITTEN_WHERE_CHANGED.get(_name)))
for _name in ew.UNARY:
    setattr(T, _name + "_", _inplace_method(_name + "_", getattr(ew, _name)))
_MORE_INPLACE = {
    "absolute_": ew.abs,
    "arccos_": ew.acos,
    "arccosh_": ew.acosh,
    "arcsin_": ew.asin,
    "arcsinh_": ew.asinh,
    "arctan_": ew.atan,
    "arctanh_": ew.atanh,
    "arctan2_": ew.atan2,
    "negative_": ew.neg,
    "multiply_": ew.mul,
    "divide_": ew.div,
    "true_divide_": ew.div,
    "subtract_": ew.sub,
    "float_power_": ew.float_power_,
    "eq_": ew.eq,
    "ne_": ew.ne,
    "not_equal_": ew.ne,
    "lt_": ew.lt,
    "less_": ew.lt,
    "le_": ew.le,
    "less_equal_": ew.le,
    "gt_": ew.gt,
    "greater_": ew.gt,
    "ge_": ew.ge,
    "greater_equal_": ew.ge,
    "logical_and_": ew.logical_and,
    "logical_or_": ew.logical_or,
    "logical_xor_": ew.logical_xor,
    "logical_not_": ew.logical_not,
    "bitwise_and_": ew.bitwise_and,
    "bitwise_or_": ew.bitwise_or,
    "bitwise_xor_": ew.bitwise_xor,
    "bitwise_not_": ew.bitwise_not,
    "sgn_": _num.sgn,  # z/|z| for complex tensors (ew.sign refuses them)
}
for _name, _fn in _MORE_INPLACE.items():
    setattr(T, _name, _inplace_method(_name, _fn))


def _abs_into_self(input: Tensor) -> Tensor:
    if input._data.dtype.kind == "c":  # |z| is real: it cannot be written into z
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return ew.abs(input)


def _cumulative_(name: str, fn):
    """cumsum_/cumprod_: torch's in-place checks first (a dtype= other than the tensor's, a bool
    tensor, which its kernels do not take)."""
    inplace = _inplace_method(name, fn)

    def method(self, dim, *, dtype=None):
        if dtype is not None and dtype != self.dtype:
            raise RuntimeError(
                f"Bad in-place call: input tensor dtype {dt.C_NAMES[self.dtype.name]} and "
                f"output tensor dtype {dt.C_NAMES[dtype.name]} should match"
            )
        if self.dtype == dt.bool_:
            raise NotImplementedError(f"\"{name[:-1]}_out_cpu\" not implemented for 'Bool'")
        return inplace(self, dim)

    named(method, name)
    return method


T.cumsum_ = _cumulative_("cumsum_", red.cumsum)
T.cumprod_ = _cumulative_("cumprod_", red.cumprod)
T.abs_ = _inplace_method("abs_", _abs_into_self)
T.absolute_ = _inplace_method("absolute_", _abs_into_self)
T.__ipow__ = T.pow_
T.__imod__ = T.remainder_
T.__ifloordiv__ = T.floor_divide_
T.masked_fill_ = _inplace_method(
    "masked_fill_", ix.masked_fill, needs_old=False, into=ix.masked_fill_into
)
T.copy_ = _inplace_method("copy_", _inplace.copy_value, needs_old=False)
T.fill_ = _inplace_method("fill_", _inplace.fill_value, needs_old=False)


def _index_put_(self, indices, values, accumulate: bool = False):
    return _inplace.apply_inplace(
        self,
        lambda old, i, v: ix.index_put(old, i, v, accumulate),
        (indices, values),
        "index_put_",
        needs_old=False,
        write_into=lambda t, i, v: ix.index_put_into(t, i, v, accumulate),
    )


def _zero_(self):
    return T.fill_(self, 0)


T.index_put_ = _index_put_
T.zero_ = _zero_


# torch's refusals of a non-floating tensor, per fill: (error type, message with {} for the
# dtype's name); bool counts as an integer type here
_FLOATING_ONLY = {
    "exponential_": (
        RuntimeError,
        "Exponential distribution is a continuous probability distribution. dtype must be a "
        "floating point but you specified {}",
    ),
    "cauchy_": (
        RuntimeError,
        "Cauchy distribution is a continuous probability distribution. dtype must be a "
        "floating point but you specified {}",
    ),
    "log_normal_": (NotImplementedError, "\"log_normal_cpu\" not implemented for '{}'"),
    "normal_": (NotImplementedError, "\"normal_kernel_cpu\" not implemented for '{}'"),
}


def _refuse_non_floating(name: str, dtype) -> None:
    if name == "geometric_" and dtype.kind == "b":
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    if name in _FLOATING_ONLY and dtype.kind in "iub":
        error, message = _FLOATING_ONLY[name]
        named = dt.from_numpy_dtype(dtype)
        raise error(message.format(named.c_name if name == "cauchy_" else named.legacy_name))


def _random_fill(name: str, sampler, serial_when_strided: bool = False, check=None):
    """An in-place random method; ``sampler(rng, shape, dtype, *args)`` draws in the tensor's
    dtype (float32 and float64 draws differ in PyTorch's streams). ``serial_when_strided``:
    the sampler takes ``serial=True`` for a non-contiguous tensor, which torch fills from its
    scalar sampler. ``check(dtype, *args)`` raises torch's error for a bad parameter; it runs
    first, as torch checks a parameter before the tensor's dtype and size."""

    def method(self, *args, generator=None, **kwargs):
        from ._random import resolve_generator

        rng = resolve_generator(generator)
        dtype = self._data.dtype
        if check is not None:
            check(self.dtype, *args, **kwargs)
        _refuse_non_floating(name, dtype)
        if serial_when_strided:
            kwargs["serial"] = not self._data.flags.c_contiguous
        sample = lambda shape: sampler(rng, shape, dtype, *args, **kwargs)
        return _inplace.apply_inplace(
            self, lambda old: _inplace.random_value(old, sample), (), name, needs_old=False
        )

    named(method, name)
    return method


def _random_integers(rng, shape, dtype, *args, **kwargs):
    """random_(), random_(to), random_(from, to) and random_(from, None) (from up to the
    largest integer the dtype holds); ``from`` and ``to`` may also come by keyword."""
    names = ("from", "to") if len(args) + len(kwargs) > 1 or "from" in kwargs else ("to",)
    if len(args) > len(names):
        raise TypeError(f"random_() takes at most 2 arguments ({len(args)} given)")
    bounds = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names or key in bounds:
            raise TypeError(f"random_() got an unexpected keyword argument '{key}'")
        bounds[key] = value
    if not bounds:  # random_(): the whole range the dtype holds exactly
        return rng.random_full(shape, dtype)
    bounds = dict(zip(bounds, random_checks.random_arguments(tuple(bounds.values()))))
    low, high = random_checks.random_bounds(
        bounds.get("from", 0), bounds.get("to"), dt.from_numpy_dtype(dtype)
    )
    return rng.integers(low, high, shape)


def _check_bernoulli_p(dtype, p=0.5) -> None:
    if isinstance(p, Tensor):
        random_checks.check_bernoulli_probabilities(_backend.to_host(p._data))
    else:
        random_checks.check_bernoulli_p(p)


T.uniform_ = _random_fill(
    "uniform_",
    lambda rng, shape, dtype, a=0.0, b=1.0: rng.uniform(a, b, shape, dtype=dtype),
    check=lambda dtype, a=0.0, b=1.0: random_checks.check_uniform(a, b, dtype),
)
T.normal_ = _random_fill(
    "normal_",
    lambda rng, shape, dtype, mean=0.0, std=1.0, serial=False: rng.normal(
        mean, std, shape, dtype=dtype, serial=serial
    ),
    serial_when_strided=True,
    check=lambda dtype, mean=0.0, std=1.0: random_checks.check_normal_std(std),
)
T.bernoulli_ = _random_fill(
    "bernoulli_",
    lambda rng, shape, dtype, p=0.5: rng.bernoulli(p._data if isinstance(p, Tensor) else p, shape),
    check=_check_bernoulli_p,
)
T.exponential_ = _random_fill(
    "exponential_",
    lambda rng, shape, dtype, lambd=1.0: rng.exponential(1.0 / lambd, shape),
    check=lambda dtype, lambd=1.0: random_checks.check_exponential(lambd),
)
T.random_ = _random_fill("random_", _random_integers)
T.geometric_ = _random_fill(
    "geometric_",
    lambda rng, shape, dtype, p: rng.geometric(p, shape),
    check=lambda dtype, p: random_checks.check_geometric(p),
)
T.log_normal_ = _random_fill(
    "log_normal_",
    lambda rng, shape, dtype, mean=1.0, std=2.0: rng.lognormal(mean, std, shape),
    check=lambda dtype, mean=1.0, std=2.0: random_checks.check_log_normal(std),
)
T.cauchy_ = _random_fill(
    "cauchy_",
    lambda rng, shape, dtype, median=0.0, sigma=1.0: median + sigma * rng.standard_cauchy(shape),
    check=lambda dtype, median=0.0, sigma=1.0: random_checks.check_cauchy(sigma),
)


# --- conversions ---
def _to(self, *args, **kwargs) -> Tensor:
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``; copy=, non_blocking=."""
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    memory_format = _mf.check(kwargs.pop("memory_format", None), "to")
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    flags = []  # positional non_blocking, then copy (a bool is an int: not a device ordinal)
    for a in args:
        if isinstance(a, bool):
            flags.append(a)
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, dt.dtype) or a in (float, int, bool):
            dtype = a
        elif isinstance(a, (str, _backend.device, int)):
            device = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    if len(flags) > 2:
        raise TypeError(f"to() received an invalid combination of arguments: {args!r}")
    if len(flags) == 2:
        copy = flags[1]
    aliases = memory_format is _mf.preserve_format or _mf.suggest(self._data) is memory_format
    out = sh.to_dtype_device(self, dtype, device, copy or not aliases)
    if out is not self:  # a fresh copy: laid out as torch's _to_copy lays it out
        out._data = _mf.arrange(out._data, memory_format, like=self._data)
    return out


def _clone(self, *, memory_format=None) -> Tensor:
    """A copy; ``preserve_format`` (the default) keeps a dense tensor's strides, as torch."""
    fmt = _mf.check(memory_format, "clone")
    data = _mf.arrange(self._data, fmt, copy=True)
    return _dispatch_result(sh.CloneBackward0, data, (self,))


def _contiguous(self, memory_format=None) -> Tensor:
    """``self`` if laid out as ``memory_format`` (default: row-major), else a copy that is."""
    fmt = _mf.contiguous_format if memory_format is None else _mf.check(memory_format, "contiguous")
    if _mf.is_contiguous(self._data, fmt):
        return self
    if fmt is _mf.preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    _mf.check_rank(self._data.ndim, fmt)
    return _dispatch_result(sh.CloneBackward0, _mf.arrange(self._data, fmt), (self,))


T.clone = _clone
T.contiguous = _contiguous


T.to = _to
T.cpu = lambda self, memory_format=None: sh.to_dtype_device(self, None, "cpu")


def _cuda(self, device=None, non_blocking=False, memory_format=None) -> Tensor:
    """A copy on GPU ``device`` (None: the current GPU, as torch), or ``self`` already there."""
    if device is None:
        # without CuPy, cuda:0 names the device in the error that moving raises
        available = _backend.cuda_available()
        target = _backend.current_cuda_device() if available else _backend.device("cuda", 0)
    elif isinstance(device, int):
        target = _backend.device("cuda", device)
    else:
        target = _backend.device("cuda", _backend.to_device(device).index)
    return sh.to_dtype_device(self, None, target)


T.cuda = _cuda


def _caster(d):
    return lambda self, memory_format=None: sh.to_dtype_device(self, d)


T.float = _caster(dt.float32)
T.double = _caster(dt.float64)
T.half = _caster(dt.float16)
T.bfloat16 = _caster(dt.bfloat16)
T.long = _caster(dt.int64)
T.int = _caster(dt.int32)
T.short = _caster(dt.int16)
T.char = _caster(dt.int8)
T.byte = _caster(dt.uint8)
T.bool = _caster(dt.bool_)


def _type(self, dtype=None, non_blocking=False):
    if dtype is None:
        prefix = "ember.cuda." if self.device.type == "cuda" else "ember."
        return prefix + self.dtype.legacy_name + "Tensor"
    if isinstance(dtype, str):
        for name, legacy in dt.LEGACY_NAMES.items():
            if dtype.endswith(legacy + "Tensor"):
                return sh.to_dtype_device(self, dt.BY_NAME[name])
    return sh.to_dtype_device(self, dtype)


T.type = _type
T.type_as = lambda self, other: sh.to_dtype_device(self, other.dtype, other.device)


def _new_factory(factory):
    name = f"new_{factory.__name__}"

    def make(self, *size, dtype=None, device=None, requires_grad=False):
        return factory(
            parse_size(name, size),
            dtype=dtype or self.dtype,
            device=device or self.device,
            requires_grad=requires_grad,
        )

    return make


T.new_zeros = _new_factory(creation.zeros)
T.new_ones = _new_factory(creation.ones)
T.new_empty = _new_factory(creation.empty)


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    return creation.full(
        size,
        fill_value,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def _new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    return creation.tensor(
        data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad
    )


T.new_full = _new_full
T.new_tensor = _new_tensor


# in-place forms of the ops attached above (they are defined after the in-place machinery)
for _name in (
    "copysign",
    "deg2rad",
    "rad2deg",
    "ldexp",
    "gcd",
    "lcm",
    "heaviside",
    "nextafter",
    "fix",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "scatter_reduce",
    "index_reduce",
    "index_copy",
    "renorm",
):
    setattr(T, _name + "_", _inplace_method(_name + "_", getattr(T, _name)))
T.index_copy_ = _inplace_method("index_copy_", T.index_copy, into=_shc.index_copy_into)


def _put_(self, index, source, accumulate: bool = False):
    return _inplace.apply_inplace(
        self,
        lambda old, i, s: _shc.put(old, i, s, accumulate),
        (index, source),
        "put_",
        write_into=lambda t, i, s: _shc.put_into(t, i, s, accumulate),
    )


T.put_ = _put_


from .ops import special as _sp  # noqa: E402

for _name in (
    "lgamma",
    "digamma",
    "erfinv",
    "i0",
    "sinc",
    "xlogy",
    "mvlgamma",
    "igamma",
    "igammac",
):
    setattr(T, _name, getattr(_sp, _name))
    setattr(T, _name + "_", _inplace_method(_name + "_", getattr(_sp, _name)))
T.polygamma = _sp.polygamma_method
T.polygamma_ = _inplace_method("polygamma_", _sp.polygamma_method)


from .ops import linalg_decompositions as _ld  # noqa: E402
from .ops import linalg_functions as _lf  # noqa: E402
from .ops import linalg_products as _lp  # noqa: E402
from .ops import linalg_solvers as _ls  # noqa: E402

T.inverse = _ls.inv
T.logdet = _ld.logdet
T.slogdet = _ld.slogdet_legacy
T.pinverse = _ls.pinverse
T.cholesky = _ld.cholesky_legacy
T.cholesky_solve = _ls.cholesky_solve
T.cholesky_inverse = _ls.cholesky_inverse
T.svd = _ld.svd_legacy
T.qr = _ld.qr_legacy
T.lu = _ld.lu_legacy
T.lu_solve = _ls.lu_solve_legacy
T.matrix_power = _lf.matrix_power
T.matrix_exp = _lf.matrix_exp
T.triangular_solve = _ls.triangular_solve
T.trace = _lp.trace
T.cross = _lf.cross_legacy
T.geqrf = _ld.geqrf
T.ormqr = _lf.ormqr
for _name in ("kron", "addmv", "addr", "baddbmm", "addbmm"):
    setattr(T, _name, getattr(_lp, _name))
for _name in ("addmv", "addr", "baddbmm"):
    setattr(T, _name + "_", _inplace_method(_name + "_", getattr(_lp, _name)))
T.addbmm_ = _inplace_method("addbmm_", _lp.addbmm, resize=True)  # as torch: self takes its shape
T.addmm_ = _inplace_method("addmm_", la.addmm)
