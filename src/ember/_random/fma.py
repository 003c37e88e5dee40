"""``x * y + z`` rounded once, as the fused multiply-add torch's CPU kernels compile to.

NumPy has no vectorised fma, so the exact value is rebuilt from error-free transformations
(Dekker's product, Knuth's sum) and rounded once.
"""

from __future__ import annotations

import numpy as np

_SPLITTER = 134217729.0  # 2^27 + 1: splits a double into two 26-bit halves
_LOW_29, _HALF_29 = np.int64((1 << 29) - 1), np.int64(1 << 28)  # bits a float32 drops


def fma_float32(x: np.ndarray, y, z) -> np.ndarray:
    """float32 ``x*y + z`` with one rounding (x, y, z float32 values)."""
    total = np.multiply(x, y, dtype=np.float64)  # exact: 24 + 24 bits fit in 53
    total += z
    # rounding the double sum to float32 rounds twice; that can only go wrong when the sum
    # lands exactly halfway between two floats (its low 29 mantissa bits 1000...0)
    low = total.view(np.int64) & _LOW_29
    if (low == _HALF_29).any():
        at = np.nonzero(low == _HALF_29)
        product = np.multiply(
            np.broadcast_to(x, total.shape)[at],
            np.broadcast_to(y, total.shape)[at],
            dtype=np.float64,
        )
        addend = np.broadcast_to(np.float64(z) if np.ndim(z) == 0 else z, total.shape)[at]
        err = _sum_error(product, addend.astype(np.float64), total[at])
        total[at] = _round_to_odd(total[at], err)
    return total.astype(np.float32)


def fma_float64(x: np.ndarray, y: float, z: float) -> np.ndarray:
    """float64 ``x*y + z`` with one rounding, to within the rare double-rounding tie."""
    product = x * y
    product_err = _product_error(x, y, product)
    total = product + z
    total_err = _sum_error(product, z, total)
    return total + (total_err + product_err)


def _sum_error(a, b, total):
    """The exact remainder ``a + b - total`` (TwoSum)."""
    b_virtual = total - a
    return (a - (total - b_virtual)) + (b - b_virtual)


def _product_error(x, y, product):
    """The exact remainder ``x * y - product`` (Dekker's TwoProduct)."""
    x_hi, x_lo = _split(x)
    y_hi, y_lo = _split(np.float64(y))
    return ((x_hi * y_hi - product) + x_hi * y_lo + x_lo * y_hi) + x_lo * y_lo


def _split(a):
    scaled = _SPLITTER * a
    hi = scaled - (scaled - a)
    return hi, a - hi


def _round_to_odd(total: np.ndarray, err: np.ndarray) -> np.ndarray:
    bits = total.view(np.int64).copy()
    inexact_even = (err != 0) & ((bits & 1) == 0)
    # one ulp towards the exact value: away from zero when err has total's sign
    step = np.where((err > 0) == (total > 0), 1, -1)
    bits += np.where(inexact_even, step, 0)
    return bits.view(np.float64)
