"""ember dtypes: PyTorch's names over NumPy dtypes, and PyTorch's type promotion."""

from __future__ import annotations

import builtins as _builtins
import sys as _sys

import numpy as _np

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

    @property
    def c_name(self) -> str:
        """The C++ type PyTorch's kernels name in messages: ``float``, ``signed char``,
        ``c10::Half`` ..."""
        return C_NAMES[self.name]

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


def _by_name(name: str) -> dtype:
    return BY_NAME[name]


_NP_SLOT = dtype.np  # the slot itself, under the property of the subclass below


class _MlDtypesDtype(dtype):
    """A dtype whose NumPy dtype comes from the ``ml_dtypes`` package (bfloat16), imported the
    first time data needs it, so that ``import ember`` loads no package beyond NumPy. Without
    ml_dtypes ``.np`` raises, so a tensor never silently gets another dtype. float32 and the
    others keep a plain slot read (``.np`` is read on every op); only these pay for a property."""

    __slots__ = ()

    @property
    def np(self):
        np_dtype = _NP_SLOT.__get__(self)
        if np_dtype is None:
            np_dtype = self._load()
        return np_dtype

    @np.setter
    def np(self, value) -> None:
        _NP_SLOT.__set__(self, value)

    def _load(self):
        try:
            import ml_dtypes
        except ImportError:
            raise RuntimeError(
                f"ember.{self.name} needs the ml_dtypes package, an ember dependency missing from "
                "this environment: pip install ml_dtypes"
            ) from None
        np_dtype = _np.dtype(getattr(ml_dtypes, self.name))
        _NP_SLOT.__set__(self, np_dtype)
        FROM_NUMPY[np_dtype] = self
        return np_dtype


def is_available(d: dtype) -> bool:
    """Whether tensors of ``d`` can be made here (bfloat16 needs ml_dtypes installed)."""
    try:
        return d.np is not None
    except RuntimeError:
        return False


float16 = dtype("float16", _np.dtype("float16"), FLOAT, 2, True)
float32 = dtype("float32", _np.dtype("float32"), FLOAT, 4, True)
float64 = dtype("float64", _np.dtype("float64"), FLOAT, 8, True)
bfloat16 = _MlDtypesDtype("bfloat16", None, FLOAT, 2, True)
int8 = dtype("int8", _np.dtype("int8"), INT, 1, True)
int16 = dtype("int16", _np.dtype("int16"), INT, 2, True)
int32 = dtype("int32", _np.dtype("int32"), INT, 4, True)
int64 = dtype("int64", _np.dtype("int64"), INT, 8, True)
uint8 = dtype("uint8", _np.dtype("uint8"), INT, 1, False)
# torch's "barebones" unsigned types: tensors of them are stored, converted and compared, but
# never promoted with another integer type (torch raises; see promote_types)
uint16 = dtype("uint16", _np.dtype("uint16"), INT, 2, False)
uint32 = dtype("uint32", _np.dtype("uint32"), INT, 4, False)
uint64 = dtype("uint64", _np.dtype("uint64"), INT, 8, False)
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
    "uint16": "UInt16",
    "uint32": "UInt32",
    "uint64": "UInt64",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}

C_NAMES = {
    "float32": "float",
    "float64": "double",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
    "int64": "long int",
    "int32": "int",
    "int16": "short int",
    "int8": "signed char",
    "uint8": "unsigned char",
    "uint16": "unsigned short",
    "uint32": "unsigned int",
    "uint64": "unsigned long",
    "bool": "bool",
    "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
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
BAREBONES_UNSIGNED = (uint16, uint32, uint64)  # not in ALL: torch has no legacy classes for them
BY_NAME = {d.name: d for d in ALL + BAREBONES_UNSIGNED}
BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32, long=int64)
BY_NAME.update(cfloat=complex64, cdouble=complex128)


class _ByNumpyDtype(dict):
    """NumPy dtype -> ember dtype. bfloat16 joins on first use (``_MlDtypesDtype._load``); an
    array of it made elsewhere (ml_dtypes imported by the user) joins it on first lookup."""

    __slots__ = ()

    def __missing__(self, np_dtype):
        for d in _LOADED_ON_FIRST_USE:
            if getattr(np_dtype, "name", None) == d.name and is_available(d) and d.np == np_dtype:
                return d
        raise KeyError(np_dtype)

    def get(self, np_dtype, default=None):
        try:
            return self[np_dtype]
        except KeyError:
            return default


_LOADED_ON_FIRST_USE = (bfloat16,)
FROM_NUMPY = _ByNumpyDtype(
    {d.np: d for d in ALL + BAREBONES_UNSIGNED if d not in _LOADED_ON_FIRST_USE}
)
if _sys.modules.get("ml_dtypes") is not None:  # imported already: nothing to save by waiting
    bfloat16._load()

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


def is_floating_array_dtype(np_dtype) -> bool:
    """Whether an array's NumPy dtype is a real floating type: kind "f", or ml_dtypes'
    bfloat16, whose kind is "V" (a test of ``kind == "f"`` alone misses it: NaN checks, sign)."""
    return np_dtype.kind == "f" or np_dtype.name == "bfloat16"


def from_numpy_dtype(np_dtype) -> dtype:
    try:
        return FROM_NUMPY[np_dtype]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type {np_dtype}. The only supported types are: "
            "float64, float32, float16, bfloat16, complex64, complex128, int64, int32, int16, "
            "int8, uint64, uint32, uint16, uint8, and bool."
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
    if (a in BAREBONES_UNSIGNED or b in BAREBONES_UNSIGNED) and max(a.category, b.category) < FLOAT:
        raise RuntimeError(
            "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
            f"{a.legacy_name} and {b.legacy_name}"
        )
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
