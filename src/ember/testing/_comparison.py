"""``assert_close``: compare tensors, arrays, numbers, sequences and mappings as torch does."""

from __future__ import annotations

import builtins
import collections.abc
import numbers
import warnings

import numpy as np

import ember

from .. import _dtype as dt

# default (rtol, atol) per dtype; complex dtypes take their real type's, integers compare exactly
_TOLERANCES = {
    dt.float16: (1e-3, 1e-5),
    dt.bfloat16: (1.6e-2, 1e-5),
    dt.float32: (1.3e-6, 1e-5),
    dt.float64: (1e-7, 1e-7),
    dt.complex64: (1.3e-6, 1e-5),
    dt.complex128: (1e-7, 1e-7),
}


class _Mismatch(Exception):
    """A failed comparison: the exception type to raise, its message and where it happened."""

    def __init__(self, kind, message: str, path: tuple = ()) -> None:
        super().__init__(message)
        self.kind, self.message, self.path = kind, message, path


def _default_tolerances(*dtypes, table=_TOLERANCES) -> tuple[float, float]:
    pairs = [table.get(d, (0.0, 0.0)) for d in dtypes]
    return builtins.max(p[0] for p in pairs), builtins.max(p[1] for p in pairs)


def _tolerances(rtol, atol, *dtypes) -> tuple[float, float]:
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise ValueError(
            f"Both 'rtol' and 'atol' must be either specified or omitted, but got no {missing}."
        )
    if rtol is not None:
        return rtol, atol
    return _default_tolerances(*dtypes)


def _make_message(
    kind: str, equality: bool, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol
):
    lines = [f"{kind} are not {'equal' if equality else 'close'}!", ""]
    if extra:
        lines.append(extra)
    for name, diff, idx, tol in (
        ("absolute", abs_diff, abs_idx, atol),
        ("relative", rel_diff, rel_idx, rtol),
    ):
        line = (
            f"{name.title()} difference: {diff}"
            if idx is None
            else f"Greatest {name} difference: {diff} at index {idx}"
        )
        if not equality:
            line += f" (up to {tol} allowed)"
        lines.append(line)
    return "\n".join(lines)


def _number_kind(x):
    if isinstance(x, (bool, np.bool_)):
        return bool
    if isinstance(x, numbers.Integral):
        return int
    if isinstance(x, numbers.Real):
        return float
    if isinstance(x, numbers.Complex):
        return complex
    return None


def _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype):
    ka, kb = _number_kind(actual), _number_kind(expected)
    if check_dtype and ka is not kb:
        raise _Mismatch(AssertionError, f"The (d)types do not match: {ka} != {kb}.")
    table = {int: (0.0, 0.0), float: (1e-7, 1e-7), complex: (1e-7, 1e-7), bool: (0.0, 0.0)}
    if (rtol is None) != (atol is None):
        _tolerances(rtol, atol)
    if rtol is None:
        rtol = builtins.max(table[ka][0], table[kb][0])
        atol = builtins.max(table[ka][1], table[kb][1])
    a, b = complex(actual), complex(expected)
    if a == b or (equal_nan and _isnan(a) and _isnan(b)):
        return
    if not (_isnan(a) or _isnan(b)) and builtins.abs(a - b) <= atol + rtol * builtins.abs(b):
        return
    abs_diff = builtins.abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / builtins.abs(expected)
    extra = f"Expected {expected} but got {actual}."
    equality = rtol == 0 and atol == 0
    message = _make_message("Scalars", equality, extra, abs_diff, None, atol, rel_diff, None, rtol)
    raise _Mismatch(AssertionError, message)


def _isnan(z: complex) -> bool:
    return z.real != z.real or z.imag != z.imag


def _attribute(name, a, b):
    return _Mismatch(AssertionError, f"The values for attribute '{name}' do not match: {a} != {b}.")


def _compare_tensors(
    a, b, *, rtol, atol, equal_nan, check_device, check_dtype, check_layout, check_stride
):
    if a.shape != b.shape:
        raise _attribute("shape", a.shape, b.shape)
    if check_device and a.device != b.device:
        raise _attribute("device", a.device, b.device)
    if check_dtype and a.dtype != b.dtype:
        raise _attribute("dtype", a.dtype, b.dtype)
    if check_layout and a.layout != b.layout:
        raise _attribute("layout", a.layout, b.layout)
    if check_stride and a.stride() != b.stride():
        raise _attribute("stride()", a.stride(), b.stride())
    rtol, atol = _tolerances(rtol, atol, a.dtype, b.dtype)
    with ember.no_grad():
        a, b = a.detach(), b.detach()
        if a.layout != ember.strided:
            a = a.to_dense()
        if b.layout != ember.strided:
            b = b.to_dense()
        if a.device != b.device:
            a, b = a.cpu(), b.cpu()
        if a.dtype != b.dtype:
            common = ember.promote_types(a.dtype, b.dtype)
            a, b = a.to(common), b.to(common)
        if a.dtype == dt.bool_:
            matches = a == b
        else:
            matches = ember.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        if bool(matches.all()):
            return
        equality = rtol == 0 and atol == 0
        if a.ndim == 0:
            _compare_numbers(a.item(), b.item(), rtol, atol, equal_nan, False)
            return
        message = _tensor_message(a, b, matches, rtol, atol, equality)
    raise _Mismatch(AssertionError, message)


def _tensor_message(a, b, matches, rtol, atol, equality) -> str:
    shape = tuple(a.shape)
    total = matches.numel()
    wrong = total - int(matches.sum())
    extra = f"Mismatched elements: {wrong} / {total} ({wrong / total:.1%})"
    fa, fb, fm = a.flatten(), b.flatten(), matches.flatten()
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        fa, fb = fa.to(dt.int64), fb.to(dt.int64)
    abs_diff = (fa - fb).abs()
    abs_diff[fm] = 0
    max_abs, abs_at = abs_diff.max(0)
    rel_diff = abs_diff / fb.abs()
    rel_diff[fm] = 0
    max_rel, rel_at = rel_diff.max(0)

    def where(flat):
        return tuple(int(i) for i in np.unravel_index(int(flat), shape))

    return _make_message(
        "Tensor-likes",
        equality,
        extra,
        max_abs.item(),
        where(abs_at),
        atol,
        max_rel.item(),
        where(rel_at),
        rtol,
    )


def _compare(actual, expected, path, options):
    try:
        _compare_one(actual, expected, path, options)
    except _Mismatch as mismatch:
        if not mismatch.path:
            mismatch.path = path
        raise


def _compare_one(actual, expected, path, options):
    if actual is None or expected is None:
        if not (actual is None and expected is None):
            raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}")
        return
    a_map = isinstance(actual, collections.abc.Mapping)
    b_map = isinstance(expected, collections.abc.Mapping)
    if a_map and b_map:
        keys_a, keys_b = set(actual.keys()), set(expected.keys())
        if keys_a != keys_b:
            raise _Mismatch(
                AssertionError,
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(keys_b - keys_a)}\n"
                f"Additional keys in the actual mapping: {sorted(keys_a - keys_b)}",
            )
        for key in actual:
            _compare(actual[key], expected[key], (*path, key), options)
        return
    a_seq = isinstance(actual, collections.abc.Sequence) and not isinstance(actual, str)
    b_seq = isinstance(expected, collections.abc.Sequence) and not isinstance(expected, str)
    if a_seq and b_seq:
        if len(actual) != len(expected):
            raise _Mismatch(
                AssertionError,
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
            )
        for i, (x, y) in enumerate(zip(actual, expected, strict=True)):
            _compare(x, y, (*path, i), options)
        return
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        if bool(actual) != bool(expected):
            raise _Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}")
        return
    number = (numbers.Number, np.number)
    if isinstance(actual, number) and isinstance(expected, number):
        _compare_numbers(
            actual,
            expected,
            options["rtol"],
            options["atol"],
            options["equal_nan"],
            options["check_dtype"],
        )
        return
    tensors = _as_tensors(actual, expected, options["allow_subclasses"])
    if tensors is None:
        raise _Mismatch(
            TypeError,
            f"No comparison pair was able to handle inputs of type {type(actual)} and "
            f"{type(expected)}.",
        )
    _compare_tensors(*tensors, **{k: options[k] for k in _TENSOR_OPTIONS})


_TENSOR_OPTIONS = (
    "rtol",
    "atol",
    "equal_nan",
    "check_device",
    "check_dtype",
    "check_layout",
    "check_stride",
)


def _as_tensors(actual, expected, allow_subclasses):
    if isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray):
        return ember.as_tensor(actual), ember.as_tensor(expected)
    if isinstance(actual, ember.Tensor) and isinstance(expected, ember.Tensor):
        if not allow_subclasses and type(actual) is not type(expected):
            return None
        return actual, expected
    return None


def assert_close(
    actual,
    expected,
    *,
    allow_subclasses: bool = True,
    rtol=None,
    atol=None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    check_layout: bool = True,
    check_stride: bool = False,
    msg=None,
):
    """Raise ``AssertionError`` unless ``actual`` and ``expected`` are close, as torch's.

    Tensors (and NumPy arrays) must agree in shape, device, dtype and layout (each check can be
    turned off but shape), then elementwise ``|a - b| <= atol + rtol * |b|`` with per-dtype
    default tolerances. Numbers, sequences and mappings are compared item by item.
    """
    __tracebackhide__ = True
    if (rtol is None) != (atol is None):
        _tolerances(rtol, atol)
    options = {
        "allow_subclasses": allow_subclasses,
        "rtol": rtol,
        "atol": atol,
        "equal_nan": equal_nan,
        "check_device": check_device,
        "check_dtype": check_dtype,
        "check_layout": check_layout,
        "check_stride": check_stride,
    }
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as mismatch:
        message = mismatch.message
        if mismatch.kind is AssertionError and msg is not None:
            message = msg(message) if callable(msg) else msg
        elif mismatch.path:
            message += "\n\nThe failure occurred for item " + "".join(
                f"[{key!r}]" for key in mismatch.path
            )
        raise mismatch.kind(message) from None


_ALLCLOSE_TOLERANCES = {
    dt.float16: (1e-3, 1e-3),
    dt.float32: (1e-4, 1e-5),
    dt.float64: (1e-5, 1e-8),
}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan: bool = True, msg: str = ""):
    """Deprecated: use :func:`assert_close`. Compares with the older, looser tolerances."""
    __tracebackhide__ = True
    warnings.warn(
        "`ember.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a "
        "future release. Please use `ember.testing.assert_close()` instead.",
        FutureWarning,
        stacklevel=2,
    )
    if not isinstance(actual, ember.Tensor):
        actual = ember.tensor(actual)
    if not isinstance(expected, ember.Tensor):
        expected = ember.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype, table=_ALLCLOSE_TOLERANCES)
    assert_close(
        actual,
        expected,
        rtol=rtol,
        atol=atol,
        equal_nan=equal_nan,
        check_device=True,
        check_dtype=False,
        check_stride=False,
        msg=msg or None,
    )
