"""torch's CPU count samplers: ``torch.poisson`` and ``torch.binomial``, element after element
in C order on torch's scalar float64 uniforms (see :mod:`.scalar_stream`).

- Poisson(λ): λ = 0 gives 0; λ < 10 multiplies uniforms until the product falls to e^-λ or
  below; λ >= 10 is Hörmann's transformed rejection (PTRS, 1993), two uniforms a try.
- Binomial(n, p): p <= 0 or n <= 0 gives 0, p >= 1 gives n; with q = min(p, 1 - p) (the
  count mirrored when p > 1/2), n·q < 10 counts geometric jumps until they pass n (one uniform
  each), otherwise Hörmann's BTRS with a Stirling-tail bound (two uniforms a try).

For float32 tensors torch keeps n, p and a few derived constants (n·p, 1 - p, √(npq), p/q,
⌊(n + 1)p⌋, log1p(-p)) in float32; they are rounded here the same way.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math

import numpy as np

from .sampler import TorchSampler
from .scalar_stream import ScalarStream


def _libm_lgamma():
    # CPython's math.lgamma is its own approximation; torch calls the C library's
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        function = libm.lgamma
    except (OSError, AttributeError):  # pragma: no cover - no C library to call
        return math.lgamma
    function.restype = ctypes.c_double
    function.argtypes = [ctypes.c_double]
    return function


_lgamma = _libm_lgamma()


def _log(x: float) -> float:
    return math.log(x) if x > 0.0 else -math.inf


def _float_dtype(array: np.ndarray):
    return np.float32 if array.dtype == np.float32 else np.float64


# --- Poisson ---------------------------------------------------------------------------------
def poisson(rng: TorchSampler, rates: np.ndarray) -> np.ndarray:
    """``torch.poisson``: one count per rate, as a float array of the rates' dtype."""
    dtype = _float_dtype(rates)
    flat = np.ascontiguousarray(rates, dtype=dtype).reshape(-1)
    if not (flat >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    lams = flat.astype(np.float64).tolist()
    expected = int(min(flat.sum(), 1e7)) + 2 * flat.size if flat.size else 0
    with ScalarStream(rng.engine, expected) as stream:
        counts = [_poisson_one(stream, lam) for lam in lams]
    return np.array(counts, dtype=np.float64).astype(dtype).reshape(rates.shape)


def _poisson_one(stream: ScalarStream, lam: float) -> int:
    uniform = stream.uniform
    if lam >= 10:
        root, log_lam = math.sqrt(lam), math.log(lam)
        b = 0.931 + 2.53 * root
        a = -0.059 + 0.02483 * b
        log_inv_alpha = math.log(1.1239 + 1.1328 / (b - 3.4))
        v_r = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = uniform() - 0.5
            v = uniform()
            us = 0.5 - abs(u)
            k = math.floor((2 * a / us + b) * u + lam + 0.43)
            if us >= 0.07 and v <= v_r:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            bound = -lam + k * log_lam - _lgamma(k + 1.0)
            if _log(v) + log_inv_alpha - math.log(a / (us * us) + b) <= bound:
                return k
    if lam == 0:
        return 0
    limit = math.exp(-lam)
    count, product = 0, 1.0
    while True:
        product *= uniform()
        if product > limit:
            count += 1
        else:
            return count


# --- binomial --------------------------------------------------------------------------------
_STIRLING_TAIL = (
    0.0810614667953272,
    0.0413406959554092,
    0.0276779256849983,
    0.02079067210376509,
    0.0166446911898211,
    0.0138761288230707,
    0.0118967099458917,
    0.0104112652619720,
    0.00925546218271273,
    0.00833056343336287,
)


def _stirling_tail(k: float) -> float:
    """log k! minus Stirling's approximation of it (a table below 10, a series above)."""
    if k < 10:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def binomial(rng: TorchSampler, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """``torch.binomial``: one draw per element of the broadcast (count, prob), as floats of
    ``prob``'s dtype."""
    dtype = _float_dtype(prob)
    n_all, p_all = np.broadcast_arrays(np.asarray(count, dtype=dtype), np.asarray(prob, dtype))
    shape = n_all.shape
    n_all, p_all = n_all.reshape(-1), p_all.reshape(-1)
    # the mirrored probability and the constants torch rounds to the tensor's dtype
    upper = p_all > 0.5
    with np.errstate(all="ignore"):
        q_all = np.where(upper, (1.0 - p_all.astype(np.float64)).astype(dtype), p_all)
        mean = n_all * q_all  # in dtype
        spread = np.sqrt(mean * (dtype(1) - q_all)).astype(np.float64)
        odds = (q_all / (dtype(1) - q_all)).astype(np.float64)
        mode = np.floor((n_all + dtype(1)) * q_all).astype(np.float64)
        log_q = np.log1p(-q_all.astype(np.float64)).astype(dtype).astype(np.float64)
    rows = zip(
        n_all.astype(np.float64).tolist(),
        p_all.astype(np.float64).tolist(),
        upper.tolist(),
        q_all.astype(np.float64).tolist(),
        mean.astype(np.float64).tolist(),
        spread.tolist(),
        odds.tolist(),
        mode.tolist(),
        log_q.tolist(),
        strict=True,
    )
    out = []
    with ScalarStream(rng.engine, 4 * n_all.size) as stream:
        for n, p, mirrored, q, nq, sd, r, m, logq in rows:
            if n <= 0.0 or p <= 0.0:
                out.append(0.0)
            elif p >= 1.0:
                out.append(n)
            elif p != p:  # NaN
                out.append(math.nan)
            else:
                if nq >= 10.0:
                    k = _btrs(stream, n, q, nq, sd, r, m)
                else:
                    k = _inversion(stream, n, logq)
                out.append(n - k if mirrored else k)
    return np.array(out, dtype=np.float64).astype(dtype).reshape(shape)


def _inversion(stream: ScalarStream, n: float, log_q: float) -> float:
    """Count geometric waiting times (in trials) until their sum passes n."""
    total, successes = 0.0, 0.0
    while True:
        total += math.ceil(_log(stream.uniform()) / log_q)
        if total > n:
            return successes
        successes += 1


def _btrs(
    stream: ScalarStream, n: float, p: float, np_: float, sd: float, r: float, m: float
) -> float:
    """Hörmann's transformed rejection with squeeze for n·p >= 10, p <= 1/2."""
    uniform = stream.uniform
    b = 1.15 + 2.53 * sd
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = np_ + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * sd
    while True:
        u = uniform() - 0.5
        v = uniform()
        us = 0.5 - abs(u)
        k = float(math.floor((2 * a / us + b) * u + c))
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = _log(v * alpha / (a / (us * us) + b))
        bound = (
            (m + 0.5) * math.log((m + 1) / (r * (n - m + 1)))
            + (n + 1) * math.log((n - m + 1) / (n - k + 1))
            + (k + 0.5) * math.log(r * (n - k + 1) / (k + 1))
            + _stirling_tail(m)
            + _stirling_tail(n - m)
            - _stirling_tail(k)
            - _stirling_tail(n - k)
        )
        if v <= bound:
            return k
