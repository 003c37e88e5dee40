"""ember dtypes: PyTorch's names over NumPy dtypes, and PyTorch's type promotion."""

from __future__ import annotations

import builtins as _builtins

import numpy as _np

try:  # bfloat16 lives in ml_dtypes; without it ember.bfloat16 exists but cannot hold data
    import ml_dtypes as _ml_dtypes

    _BF16 = _np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    _BF16 = None

BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3  # promotion categories, lowest first


class dtype:
    """A tensor element type, named as in PyTorch (``ember.float32`` ...)."""

    __slots__ = ("name", "np", "category", "itemsize", "is_signed")

    def __init__(self, name: str, np_dtype, category: int, itemsize: int, is_signed: bool):
        self.name = name
        self.np = np_dtype
        self.category = category
        self.itemsize = itemsize
        self.is_signed = is_signed

    @property
    def is_floating_point(self) -> bool:
        return self.category == FLOAT

    @property
    def is_complex(self) -> bool:
        return self.category == COMPLEX

    def to_real(self) -> dtype:
        """The real dtype of a complex one (complex64 -> float32); real dtypes map to themselves."""
        return _TO_REAL.get(self, self)

    def to_complex(self) -> dtype:
        """The complex dtype holding this one's values (float64 -> complex128).

        ember has no complex32 (NumPy has none): half and bfloat16 map to complex64.
        """
        if self.category == COMPLEX:
            return self
        if self is float64:
            return complex128
        if self.category == FLOAT:
            return complex64
        raise RuntimeError(f"to_complex: no complex dtype for {self!r}")

    @property
    def legacy_name(self) -> str:
        """PyTorch's old type name, used in messages: ``Float`` for float32, ``Long`` ..."""
        return LEGACY_NAMES[self.name]

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name: str) -> dtype:
    return BY_NAME[name]


float16 = dtype("float16", _np.dtype("float16"), FLOAT, 2, True)
float32 = dtype("float32", _np.dtype("float32"), FLOAT, 4, True)
float64 = dtype("float64", _np.dtype("float64"), FLOAT, 8, True)
bfloat16 = dtype("bfloat16", _BF16, FLOAT, 2, True)
int8 = dtype("int8", _np.dtype("int8"), INT, 1, True)
int16 = dtype("int16", _np.dtype("int16"), INT, 2, True)
int32 = dtype("int32", _np.dtype("int32"), INT, 4, True)
int64 = dtype("int64", _np.dtype("int64"), INT, 8, True)
uint8 = dtype("uint8", _np.dtype("uint8"), INT, 1, False)
bool_ = dtype("bool", _np.dtype("bool"), BOOL, 1, False)
complex64 = dtype("complex64", _np.dtype("complex64"), COMPLEX, 8, True)
complex128 = dtype("complex128", _np.dtype("complex128"), COMPLEX, 16, True)
# complex32 (torch.chalf) is omitted: NumPy and CuPy have no half-precision complex type.

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble = complex64, complex128
_TO_REAL = {complex64: float32, complex128: float64}

LEGACY_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}

ALL = (
    float16,
    float32,
    float64,
    bfloat16,
    int8,
    int16,
    int32,
    int64,
    uint8,
    bool_,
    complex64,
    complex128,
)
BY_NAME = {d.name: d for d in ALL}
BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64)
BY_NAME.update(cfloat=complex64, cdouble=complex128)
FROM_NUMPY = {d.np: d for d in ALL if d.np is not None}

_default = [float32]


def get_default_dtype() -> dtype:
    """The dtype of floating tensors created from Python floats (``ember.float32`` at start)."""
    return _default[0]


def get_default_complex_dtype() -> dtype:
    """The dtype of tensors made from Python complex numbers: complex64 when the default
    floating dtype is float32, complex128 when it is float64."""
    return _default[0].to_complex()


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype; like PyTorch only float32 and float64 (and float16/bf16)."""
    if not isinstance(d, dtype) or d.category != FLOAT:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


def from_numpy_dtype(np_dtype) -> dtype:
    try:
        return FROM_NUMPY[np_dtype]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type {np_dtype}. The only supported types are: "
            "float64, float32, float16, bfloat16, complex64, complex128, int64, int32, int16, "
            "int8, uint8, and bool."
        ) from None


def to_dtype(d) -> dtype:
    """Accept an ember dtype, a NumPy dtype, a Python type or a name."""
    if isinstance(d, dtype):
        return d
    if d is None:
        return get_default_dtype()
    if d is bool:
        return bool_
    if d is _builtins.int:
        return int64
    if d is _builtins.float:
        return get_default_dtype()
    if d is _builtins.complex:
        return get_default_complex_dtype()
    if isinstance(d, str):
        name = d.rsplit(".", 1)[-1]
        if name in BY_NAME:
            return BY_NAME[name]
    np_d = _np.dtype(d)
    return from_numpy_dtype(np_d)


def promote_types(a: dtype, b: dtype) -> dtype:
    """PyTorch's promote_types: floats beat integers whatever their size; bf16 + f16 = f32."""
    if a is b:
        return a
    key = (a, b)
    hit = _PROMOTE.get(key)
    if hit is not None:
        return hit
    if a.category == COMPLEX or b.category == COMPLEX:
        # complex wins; its precision is the wider of the two real parts
        out = promote_types(a.to_real(), b.to_real()).to_complex()
    elif a.category == FLOAT and b.category == FLOAT:
        if {a, b} == {float16, bfloat16}:
            out = float32
        else:
            out = a if a.itemsize >= b.itemsize else b
    elif a.category == FLOAT:
        out = a
    elif b.category == FLOAT:
        out = b
    else:
        out = FROM_NUMPY[_np.promote_types(a.np, b.np)]
    _PROMOTE[key] = out
    return out


_PROMOTE: dict = {}


def _combine_categories(higher, lower):
    # PyTorch: a higher category wins outright; otherwise the ordinary promotion applies.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        # a complex scalar keeps a floating tensor's precision (float64 + 1j -> complex128)
        return higher.to_complex() if higher.category == FLOAT else lower
    if higher.category == FLOAT:
        return higher
    if higher is bool_ or lower.category == FLOAT:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(value) -> dtype:
    """The dtype a Python number takes when it stands alone (wrapped number)."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, _builtins.int):
        return int64
    if isinstance(value, _builtins.complex):
        return get_default_complex_dtype()
    return get_default_dtype()


def result_type(*operands) -> dtype:
    """PyTorch's result_type over tensors (dimensioned and 0-d) and Python numbers."""
    dim_result = zero_result = wrapped_result = None
    for op in operands:
        d = getattr(op, "dtype", None)
        if d is None:
            d = scalar_dtype(op)
            wrapped_result = d if wrapped_result is None else promote_types(wrapped_result, d)
        elif op.ndim == 0:
            zero_result = d if zero_result is None else promote_types(zero_result, d)
        else:
            dim_result = d if dim_result is None else promote_types(dim_result, d)
    return _combine_categories(dim_result, _combine_categories(zero_result, wrapped_result))
