"""torch's CPU gamma sampler: ``torch._standard_gamma`` and ``torch._sample_dirichlet``.

The sampler is Marsaglia and Tsang's (2000) squeeze-and-reject method on torch's scalar
uniform and normal draws, run element after element in C order (torch's serial kernel):

- α < 1 is boosted: one uniform u gives the factor ``(1 - u)^(1/α)`` and α becomes α + 1;
- d = α - 1/3 (the float constant 1/3f), c = 1 / √(9d); repeat: a normal x with
  y = 1 + c·x > 0, a uniform u' (used as 1 - u'), accept when 1 - u' < 1 - 0.0331 x⁴ or
  log(1 - u') < x²/2 + d(1 - y³ + log y³); the value is scale·d·y³.

For a float32 tensor torch evaluates ``1/α``, ``α + 1`` and ``α - 1/3f`` in float32 and the rest
in float64; for float64 all of it is float64. Dirichlet draws its gammas in float64 whatever
the dtype, then normalises each row and clamps into (tiny, 1).
"""

from __future__ import annotations

import math

import numpy as np

from .sampler import TorchSampler
from .scalar_stream import ScalarStream

_ONE_THIRD_F = float(np.float32(1.0) / np.float32(3.0))  # C's 1.0f / 3.0f
_SQUEEZE = float(np.float32(0.0331))  # C's 0.0331f, widened


def _log(x: float) -> float:
    return math.log(x) if x > 0.0 else -math.inf


def _gamma_constants(alpha: np.ndarray, single: bool):
    """Per element: the boost exponent 1/α (NaN where no boost), d and c, as torch rounds them."""
    dtype = np.float32 if single else np.float64
    a = alpha.astype(dtype)
    small = a < 1
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = np.where(small, dtype(1) / a, np.nan).astype(np.float64)
        boosted = np.where(small, a + dtype(1), a)
        d = (boosted - dtype(_ONE_THIRD_F)).astype(np.float64)
        c = 1.0 / np.sqrt(9.0 * d)
    return inverse, d, c


def _gamma_values(stream: ScalarStream, alpha: np.ndarray, single: bool) -> list[float]:
    """float64 gamma draws for the (flat) ``alpha`` values, consuming torch's words."""
    inverse, d_values, c_values = _gamma_constants(alpha, single)
    uniform, normal = stream.uniform, stream.normal
    out = []
    for a, inv, d, c in zip(
        alpha.tolist(), inverse.tolist(), d_values.tolist(), c_values.tolist(), strict=True
    ):
        if not (a >= 0 and d > 0):  # torch loops forever on these; NaN says "no value"
            out.append(0.0 if a == 0 else math.nan)
            continue
        scale = 1.0
        if a < 1:
            if a == 0:
                out.append(0.0)
                continue
            scale = math.pow(1.0 - uniform(), inv)
        while True:
            x = normal()
            y = 1.0 + c * x
            while y <= 0:
                x = normal()
                y = 1.0 + c * x
            v = y * y * y
            u = 1.0 - uniform()
            xx = x * x
            if u < 1.0 - _SQUEEZE * xx * xx or _log(u) < 0.5 * xx + d * (1.0 - v + _log(v)):
                out.append(scale * d * v)
                break
    return out


def standard_gamma(rng: TorchSampler, alpha: np.ndarray) -> np.ndarray:
    """``torch._standard_gamma``: one Gamma(α, 1) draw per element, in ``alpha``'s dtype
    (float32 or float64), at least the dtype's smallest normal number."""
    dtype = np.float32 if alpha.dtype == np.float32 else np.float64
    flat = np.ascontiguousarray(alpha, dtype=dtype).reshape(-1)
    with ScalarStream(rng.engine, 3 * flat.size) as stream:
        values = np.array(_gamma_values(stream, flat, dtype == np.float32), dtype=np.float64)
    out = values.astype(dtype)
    out = np.where(np.isnan(out), out, np.maximum(out, np.finfo(dtype).tiny))
    return out.reshape(alpha.shape)


def sample_dirichlet(rng: TorchSampler, alpha: np.ndarray) -> np.ndarray:
    """``torch._sample_dirichlet``: float64 gammas normalised along the last dimension,
    clamped to [tiny, 1 - ulp] in ``alpha``'s dtype."""
    dtype = np.float32 if alpha.dtype == np.float32 else np.float64
    flat = np.ascontiguousarray(alpha, dtype=dtype).reshape(-1).astype(np.float64)
    with ScalarStream(rng.engine, 3 * flat.size) as stream:
        gammas = np.array(_gamma_values(stream, flat, False), dtype=np.float64)
    gammas = np.maximum(gammas, np.finfo(np.float64).tiny).reshape(alpha.shape)
    ratio = (gammas / _row_sums(gammas)).astype(dtype)
    return np.minimum(np.maximum(ratio, np.finfo(dtype).tiny), np.nextafter(dtype(1), dtype(0)))


def _row_sums(values: np.ndarray) -> np.ndarray:
    """Sums over the last dimension (keepdims) added in the order of torch's vectorised inner
    reduction on AVX2 (vectors of 4 doubles): the row as vectors, those as rows of 4 vectors
    summed lane-wise in a cascade of levels of 16, leftover vectors into the first partial
    sum, the 4 partial vectors added in turn; then the scalar tail summed first and the 4
    lanes added to it one by one."""
    shape = values.shape
    rows = values.reshape(-1, shape[-1])
    return _inner_sums(rows).reshape(shape[:-1] + (1,))


def _inner_sums(x: np.ndarray) -> np.ndarray:
    count, n = x.shape
    vectors = x[:, : n - n % 4].reshape(count, n // 4, 4)
    groups = vectors.shape[1] // 4  # rows of 4 vectors, reduced lane-wise
    levels = 4
    power = max(4, (int(groups - 1).bit_length() if groups > 1 else 0) // levels)
    step, mask = 1 << power, (1 << power) - 1
    acc = np.zeros((levels, count, 4, 4))
    i = 0
    while i + step <= groups:
        for _ in range(step):
            acc[0] = acc[0] + vectors[:, 4 * i : 4 * i + 4]
            i += 1
        for level in range(1, levels):  # carry into the next level, as a cascade sum does
            acc[level] = acc[level] + acc[level - 1]
            acc[level - 1] = 0.0
            if i & (mask << (level * power)):
                break
    while i < groups:
        acc[0] = acc[0] + vectors[:, 4 * i : 4 * i + 4]
        i += 1
    for level in range(1, levels):
        acc[0] = acc[0] + acc[level]
    first = acc[0][:, 0]
    for m in range(groups * 4, vectors.shape[1]):
        first = first + vectors[:, m]
    first = ((first + acc[0][:, 1]) + acc[0][:, 2]) + acc[0][:, 3]
    total = np.zeros(count)
    for t in range(n - n % 4, n):
        total = total + x[:, t]
    for lane in range(4):
        total = total + first[:, lane]
    return total
