"""torch's CPU distributions over the mt19937 stream, behind NumPy ``Generator`` method names.

``resolve_generator`` hands callers a :class:`TorchSampler`; they call ``random``,
``uniform``, ``integers``, ``permutation``, ``normal``, ``exponential``, ... as they would on
``numpy.random.Generator`` and get torch's values, drawing the same words in the same order
as torch's kernels (aten/src/ATen/core/DistributionsHelper.h, native/cpu/
DistributionTemplates.h, randperm in native/TensorFactories.cpp):

- uniform: ``(word & (2^digits - 1)) * 2^-digits`` with one 32-bit word per value for
  float32 (digits 24) and one 64-bit word (two words, high first) for float64 (digits 53);
  ``u * (to - from) + from`` rounded once (a fused multiply-add). float16 and bfloat16 take
  the float32 value rounded to their precision, ``to`` mapped back to ``from``.
- integers in ``[low, high)``: ``word % range + low``, 64-bit words once range >= 2^28.
- randperm: Fisher-Yates, ``swap(p[i], p[i + word % (n - i)])`` for i = 0..n-2.
- normal, 16 values or more: n uniforms, then Box-Muller on blocks of 16 (u1 = 1 - first 8,
  u2 = last 8; cos half then sin half); a ragged tail redraws 16 uniforms for the last 16.
  float16 / bfloat16: float32 normals rounded, but only the whole blocks are filled with
  uniforms before the tail's 16 fresh ones.
- normal, fewer than 16: per value, Box-Muller on two float64 uniforms with the sin value
  cached on the generator for the next call.
- exponential, geometric, cauchy, bernoulli (scalar p), log-normal: float64 uniforms (or the
  scalar normal), transformed in float64.
- complex tensors: torch fills their real view (``view_as_real``: real, imaginary, real, ...)
  with the component type's values, the normal ones with ``std / sqrt(2)`` so that the
  complex value has variance ``std²``.

float64 transforms call the C library's log/log1p/sin/cos/tan/exp per element, as torch does:
NumPy's vectorised versions differ from them by an ulp for about one value in a thousand.

- gamma, Dirichlet, Poisson, binomial: torch's per-element rejection samplers on scalar
  float64 uniforms and normals (:mod:`.gamma`, :mod:`.counts`), element after element.
- multinomial: :mod:`.multinomial`.

With numba installed (:mod:`ember._kernels.jit`), the Box-Muller blocks, randperm's shuffles
and long mt19937 fills run as compiled loops (:mod:`ember._kernels.random_jit`) that give the
same values as the NumPy code here, which stays as the fallback.

``dtype`` names the tensor the values are for, because torch's stream depends on it; left
out, it is ember's default floating dtype. Methods torch has no CPU kernel for (choice, beta,
...) fall through to ``numpy.random.Generator`` over the same Mersenne Twister, so they stay
seeded and advance the same stream, with NumPy's algorithms.
"""

from __future__ import annotations

import contextlib
import math
import sys

import numpy as np

from .._kernels import jit
from .box_muller_float32 import box_muller_16_float32
from .fma import fma_float32, fma_float64
from .mt19937 import MT19937
from .permutation import fisher_yates

_BITS_OF = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}
_WIDE_RANGE = 1 << 28  # torch draws 64-bit words from this range up (limits modulo skew)
_LARGE_PERMUTATION = 0xFFFFFFFF // 20  # torch's randperm switches algorithm here
_MASK53 = np.uint64((1 << 53) - 1)
_NORMAL_CHUNK = 1 << 16  # a multiple of Box-Muller's block of 16


def _count(size) -> tuple[tuple, int]:
    if size is None:
        return (), 1
    shape = (int(size),) if np.ndim(size) == 0 else tuple(int(s) for s in size)
    return shape, math.prod(shape)


def _shaped(values: np.ndarray, size, shape):
    return values.reshape(shape) if size is not None else values[0]


def _complex_part_dtype(target: np.dtype):
    """The real type whose values fill a complex ``target`` through its real view, or None."""
    return (
        np.dtype(np.float32 if target == np.complex64 else np.float64)
        if target.kind == "c"
        else None
    )


def _as_complex(parts: np.ndarray, target: np.dtype, size, shape):
    """2n real values (real, imaginary in turn) as n complex ones, shaped like torch's fill."""
    return _shaped(parts.view(target), size, shape)


def _libm(name: str):
    """The C library's ``name`` applied elementwise, for float64 results bit-identical to
    torch's (NumPy's SIMD log/sin/cos/log1p differ from libm's by an ulp now and then)."""
    scalar = np.frompyfunc(getattr(math, name), 1, 1)

    def apply(values):
        kernels = jit.module("random_jit", np.size(values))
        if kernels is not None:  # the same C functions, without a Python call per element
            return kernels.libm(name, values)
        return scalar(values).astype(np.float64)

    return apply


_log, _log1p, _tan, _exp = map(_libm, ("log", "log1p", "tan", "exp"))


class _NumpyWhereLibm:
    """NumPy's vectorised ``name`` if, on a probe of 65,536 arguments, it returns exactly the C
    library's values (common builds call the C library for float64 sin and cos), else the C
    library per element. A SIMD version with ulp-level differences (as NumPy's float64 log on
    AVX-512) differs on hundreds of the probe's arguments, so it is never taken."""

    def __init__(self, name: str):
        self.name = name
        self.function = None

    def __call__(self, values: np.ndarray) -> np.ndarray:
        if self.function is None:
            libm, fast = _libm(self.name), getattr(np, self.name)
            probe = np.concatenate(
                [
                    np.linspace(0.0, 2.0 * np.pi, 1 << 15),  # Box-Muller's angles
                    np.random.default_rng(0).uniform(-100.0, 100.0, 1 << 15),
                ]
            )
            # the probe is a one-off: it loads numba only where a kernel already did (the C
            # library's values are the same either way)
            loaded = "numba" in sys.modules
            with contextlib.nullcontext() if loaded else jit.disabled():
                reference = libm(probe)
            self.function = fast if np.array_equal(fast(probe), reference) else libm
        return self.function(values)


_cos, _sin = _NumpyWhereLibm("cos"), _NumpyWhereLibm("sin")


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype.name == "bfloat16"  # ml_dtypes' bfloat16 is kind "V"


def _float_dtype(dtype) -> np.dtype:
    if dtype is None:
        from .._dtype import get_default_dtype

        return np.dtype(get_default_dtype().np)
    return np.dtype(getattr(dtype, "np", dtype))


class TorchSampler:
    """Draws torch's CPU values from one :class:`MT19937` engine (see the module notes)."""

    __slots__ = ("engine",)

    def __init__(self, engine: MT19937):
        self.engine = engine

    def __getattr__(self, name):
        # NumPy's other distributions, over the same Mersenne Twister stream
        return getattr(self.engine.numpy, name)

    # --- uniform ---------------------------------------------------------------------------
    def unit(self, n: int, dtype=None) -> np.ndarray:
        """``n`` uniforms in [0, 1) as torch makes them for a tensor of ``dtype``."""
        if _float_dtype(dtype) == np.float64:
            return (self.engine.words64(n) & _MASK53).astype(np.float64) * 2.0**-53
        # float32, and float16 / bfloat16 too: torch draws those in float32 and rounds
        words = self.engine.words(n)
        words &= np.uint32((1 << 24) - 1)
        out = words.view(np.int32).astype(np.float32)  # int32 converts faster than uint32
        out *= np.float32(2.0**-24)
        return out

    def random(self, size=None, dtype=None, out=None):
        """torch.rand: uniforms in [0, 1), in ``dtype`` (float32 values keep float32)."""
        shape, n = _count(size)
        target = _float_dtype(dtype)
        part = _complex_part_dtype(target)
        if part is not None:
            values = _as_complex(self.random(2 * n, part), target, size, shape)
            if out is not None:
                out[...] = values.reshape(out.shape)
                return out
            return values
        values = self.unit(n, dtype)
        if values.dtype != target and _is_float(target):
            values = _round_uniform(values, target, 0.0, 1.0)
        if out is not None:
            out[...] = values.reshape(out.shape)
            return out
        return _shaped(values, size, shape)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=None):
        """Tensor.uniform_(low, high): ``u * (high - low) + low`` rounded once."""
        if np.ndim(low) or np.ndim(high):  # per-element bounds: not a torch kernel
            if size is None:
                size = np.broadcast_shapes(np.shape(low), np.shape(high))
            u = self.random(size, np.float64)
            return u * (np.asarray(high) - low) + low
        shape, n = _count(size)
        target = _float_dtype(dtype)
        part = _complex_part_dtype(target)
        if part is not None:
            return _as_complex(self.uniform(low, high, 2 * n, part), target, size, shape)
        u = self.unit(n, target)
        if u.dtype == np.float64:
            width = float(high) - float(low)
            values = u * width if low == 0 else fma_float64(u, width, float(low))
        else:
            low32, high32 = np.float32(low), np.float32(high)
            width = high32 - low32
            if low32 == 0:
                values = (u.astype(np.float64) * np.float64(width)).astype(np.float32)
            else:
                values = fma_float32(u, width, low32)
        if values.dtype != target and _is_float(target):
            values = _round_uniform(values, target, low, high)
        return _shaped(values, size, shape)

    # --- integers --------------------------------------------------------------------------
    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """Tensor.random_(low, high): ``word % (high - low) + low``."""
        if np.ndim(low) or np.ndim(high):
            return self.engine.numpy.integers(low, high, size, dtype=dtype, endpoint=endpoint)
        if high is None:
            low, high = 0, low
        low, high = int(low), int(high) + bool(endpoint)
        if low >= high:
            raise ValueError(f"integers: low ({low}) must be less than high ({high})")
        shape, n = _count(size)
        span = high - low
        words = self.engine.words64(n) if span >= _WIDE_RANGE else self.engine.words(n)
        # uint64 arithmetic wraps as torch's (val % range) + base before its int64 cast
        values = ((words % np.uint64(span)) + np.uint64(low % (1 << 64))).view(np.int64)
        return _shaped(values.astype(dtype, copy=False), size, shape)

    def random_full(self, size=None, dtype=None):
        """Tensor.random_() with no bounds: [0, 2^digits] for floats, [0, max] for integers."""
        target = _float_dtype(dtype)
        shape, n = _count(size)
        if target == np.bool_:
            return _shaped((self.engine.words(n) & np.uint64(1)).astype(bool), size, shape)
        if _is_float(target):
            bits = _BITS_OF.get(target.name, 24)
            modulus = (1 << bits) + 1
        else:
            modulus = int(np.iinfo(target).max) + 1
        wide = target in (np.float64, np.int64)
        words = self.engine.words64(n) if wide else self.engine.words(n)
        values = (words % np.uint64(modulus)).astype(target)
        return _shaped(values, size, shape)

    # --- permutations ----------------------------------------------------------------------
    def permutation(self, x, axis: int = 0):
        """torch.randperm(n) for an int; an array is reordered along ``axis`` by one."""
        if np.ndim(x) == 0:
            return self.randperm(int(x))
        x = np.asarray(x)
        return np.take(x, self.randperm(x.shape[axis]), axis=axis)

    def randperm(self, n: int) -> np.ndarray:
        if n <= 1:
            return np.arange(n, dtype=np.int64)
        kernels = jit.module("random_jit", n)
        if n < _LARGE_PERMUTATION:
            # torch's Fisher-Yates: swap(p[i], p[i + word % (n - i)]) for i = 0..n-2
            if kernels is not None:
                return kernels.fisher_yates(self.engine.words(n - 1))
            offsets = self.engine.words(n - 1) % np.arange(n, 1, -1, dtype=np.uint32)
            return fisher_yates(offsets)
        # torch's "inside-out" shuffle with 64-bit draws for very large n
        if kernels is not None:
            return kernels.inside_out(self.engine.words64(n))
        picks = (self.engine.words64(n) % np.arange(1, n + 1, dtype=np.uint64)).tolist()
        perm = [0] * n
        for i, z in enumerate(picks):
            perm[i] = perm[z]
            perm[z] = i
        return np.array(perm, dtype=np.int64)

    # --- normal ----------------------------------------------------------------------------
    def standard_normal(self, size=None, dtype=None, out=None):
        values = self.normal(0.0, 1.0, size, dtype)
        if out is not None:
            out[...] = values
            return out
        return values

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=None, serial: bool = False):
        """Tensor.normal_(loc, scale); array ``loc``/``scale`` scale standard draws.

        ``serial``: the tensor being filled is not contiguous, where torch draws every value
        from its scalar sampler (in the tensor's memory order, see :mod:`.layout`)."""
        if np.ndim(loc) or np.ndim(scale):
            if size is None:
                size = np.broadcast_shapes(np.shape(loc), np.shape(scale))
            return self.normal(0.0, 1.0, size, dtype, serial) * scale + loc
        shape, n = _count(size)
        target = _float_dtype(dtype)
        part = _complex_part_dtype(target)
        if part is not None:  # ATen's normal_impl_: std / std::sqrt(2) for each part
            parts = self.normal(loc, float(scale) / math.sqrt(2), 2 * n, part, serial)
            return _as_complex(parts, target, size, shape)
        if n >= 16 and not serial:
            values = self._normal_blocks(n, float(loc), float(scale), target)
        else:
            values = _scaled(self.scalar_normals(n), float(loc), float(scale))
        if values.dtype != target and _is_float(target):
            if target.itemsize == 2:  # torch rounds double to float, then to half
                values = values.astype(np.float32)
            values = values.astype(target)
        return _shaped(values, size, shape)

    def _normal_blocks(self, n: int, mean: float, std: float, target) -> np.ndarray:
        if target.itemsize == 2:  # float16 / bfloat16
            return self._normal_blocks_reduced(n, mean, std).astype(target)
        kernels = jit.module("random_jit", n)
        if kernels is not None:  # the same draws, and values, in one compiled pass
            return self._normal_blocks_compiled(kernels, n, mean, std, target)
        data = self.unit(n, target)
        tail = self.unit(16, target) if n % 16 else None
        full = n - n % 16
        out = np.empty_like(data)
        if target == np.float32:  # works in cache-sized chunks itself
            box_muller = box_muller_16_float32
            box_muller_16_float32(data[:full], mean, std, out=out[:full])
        else:
            box_muller = _box_muller_16
            # in chunks whose temporaries stay in the CPU caches (25 % faster at 10^6 values)
            for start in range(0, full, _NORMAL_CHUNK):
                stop = min(start + _NORMAL_CHUNK, full)
                out[start:stop] = box_muller(data[start:stop], mean, std)
        if tail is not None:  # torch recomputes the last 16 values from fresh uniforms
            out[full:] = data[full:]
            out[n - 16 :] = box_muller(tail, mean, std)
        return out

    def _normal_blocks_compiled(self, kernels, n: int, mean: float, std: float, target):
        """:meth:`_normal_blocks` for float32 / float64 from the raw words (kernels on): the
        uniforms of a ragged end's first values are drawn but overwritten, as in torch."""
        per_value = 2 if target == np.float64 else 1
        words = self.engine.words(per_value * n)
        full = n - n % 16
        out = np.empty(n, dtype=target)
        kernels.normal_blocks(words[: per_value * full], out[:full], mean, std)
        if n % 16:
            kernels.normal_blocks(self.engine.words(per_value * 16), out[n - 16 :], mean, std)
        return out

    def _normal_blocks_reduced(self, n: int, mean: float, std: float) -> np.ndarray:
        """float16 / bfloat16 normals, computed in float32: torch fills only the whole blocks
        with uniforms first, then (for a ragged end) 16 fresh ones for the last 16 values."""
        full = n - n % 16
        out = np.empty(n, dtype=np.float32)
        kernels = jit.module("random_jit", n)
        if kernels is not None:
            kernels.normal_blocks(self.engine.words(full), out[:full], mean, std)
            if n % 16:
                kernels.normal_blocks(self.engine.words(16), out[n - 16 :], mean, std)
            return out
        box_muller_16_float32(self.unit(full), mean, std, out=out[:full])
        if n % 16:
            out[n - 16 :] = box_muller_16_float32(self.unit(16), mean, std)
        return out

    def scalar_normals(self, n: int) -> np.ndarray:
        """``n`` standard normals from torch's scalar sampler (float64, cache included)."""
        engine = self.engine
        out = np.empty(n, dtype=np.float64)
        start = 0
        if n and engine.next_double_normal is not None:
            out[0] = engine.next_double_normal
            engine.next_double_normal = None
            start = 1
        pairs = (n - start + 1) // 2
        kernels = jit.module("random_jit", 2 * pairs)
        if kernels is not None:
            values = kernels.scalar_normal_pairs(engine.words(4 * pairs))
            out[start:] = values[: n - start]
            if (n - start) % 2:
                engine.next_double_normal = float(values[-1])
        elif pairs:
            u = (engine.words64(2 * pairs) & _MASK53).astype(np.float64) * 2.0**-53
            radius = np.sqrt(-2.0 * _log1p(-u[1::2]))
            theta = 2.0 * np.pi * u[0::2]
            values = np.empty(2 * pairs)
            values[0::2] = radius * _cos(theta)
            values[1::2] = radius * _sin(theta)
            out[start:] = values[: n - start]
            if (n - start) % 2:
                engine.next_double_normal = float(values[-1])
        return out

    def lognormal(self, mean=0.0, sigma=1.0, size=None):
        """Tensor.log_normal_: exp of torch's scalar normal (float64)."""
        shape, n = _count(size)
        normals = _scaled(self.scalar_normals(n), float(mean), float(sigma))
        return _shaped(_exp(normals), size, shape)

    # --- other transforms of float64 uniforms ----------------------------------------------
    def _unit64(self, n: int) -> np.ndarray:
        return (self.engine.words64(n) & _MASK53).astype(np.float64) * 2.0**-53

    def exponential(self, scale=1.0, size=None):
        """Tensor.exponential_(1 / scale): ``-scale * log1p(-u)``."""
        shape, n = _count(size)
        return _shaped(-float(scale) * _log1p(-self._unit64(n)), size, shape)

    def geometric(self, p, size=None):
        """Tensor.geometric_(p): ``ceil(log(u) / log(1 - p))``."""
        shape, n = _count(size)
        u = self._unit64(n)
        logs = np.full(n, -np.inf)
        positive = u > 0  # math.log(0) raises where C's log returns -inf
        logs[positive] = _log(u[positive])
        values = np.ceil(logs / math.log(1.0 - float(p)))
        return _shaped(values, size, shape)

    def standard_cauchy(self, size=None):
        """Tensor.cauchy_(0, 1): ``tan(pi * (u - 0.5))``."""
        shape, n = _count(size)
        return _shaped(_tan(np.pi * (self._unit64(n) - 0.5)), size, shape)

    # --- rejection samplers (torch's serial CPU kernels) ----------------------------------
    def standard_gamma(self, shape, size=None, dtype=None):
        """torch._standard_gamma: Gamma(shape, 1) in the float dtype of ``shape``."""
        from .gamma import standard_gamma

        return standard_gamma(self, _parameter(shape, size, dtype))

    def dirichlet(self, alpha, size=None):
        """torch._sample_dirichlet over the last axis of ``alpha`` (broadcast to ``size``)."""
        from .gamma import sample_dirichlet

        alpha = np.asarray(alpha)
        if size is not None:
            size = (size,) if np.ndim(size) == 0 else tuple(size)
            alpha = np.broadcast_to(alpha, size + alpha.shape[-1:])
        return sample_dirichlet(self, alpha)

    def poisson(self, lam=1.0, size=None, dtype=None):
        """torch.poisson: counts as floats of ``lam``'s float dtype."""
        from .counts import poisson

        return poisson(self, _parameter(lam, size, dtype))

    def binomial(self, n, p, size=None, dtype=None):
        """torch.binomial: draws as floats of ``p``'s float dtype."""
        from .counts import binomial

        p = _parameter(p, size, dtype)
        return binomial(self, np.broadcast_to(np.asarray(n), p.shape), p)

    def bernoulli(self, p, size=None, dtype=None):
        """Tensor.bernoulli_(p): ``u < p``; float64 uniforms for a scalar or float64 ``p``,
        float32 ones for a float32 probability tensor (torch.bernoulli(probs))."""
        p_array = np.asarray(p)
        if size is None:
            size = p_array.shape
        shape, n = _count(size)
        if not isinstance(p, np.ndarray) or p_array.dtype == np.float64:
            u = self._unit64(n).reshape(shape)
        else:
            u = self.unit(n, np.float32).reshape(shape)
            p_array = p_array.astype(np.float32)
        values = np.asarray(u < p_array)  # an array even for 0-d shapes
        return values.astype(dtype) if dtype is not None else values


def _parameter(values, size, dtype) -> np.ndarray:
    """A distribution parameter as a float array (its own float dtype kept), broadcast to
    ``size`` when given."""
    array = np.asarray(values)
    if dtype is not None:
        array = array.astype(_float_dtype(dtype))
    elif array.dtype.kind != "f":
        array = array.astype(np.float64)
    if size is not None:
        size = (size,) if np.ndim(size) == 0 else tuple(size)
        array = np.broadcast_to(array, size)
    return array


def _round_uniform(values: np.ndarray, target: np.dtype, low: float, high: float) -> np.ndarray:
    """float32 uniforms on [low, high) rounded to float16 / bfloat16; a value that rounds up
    to ``high`` becomes ``low``, as torch keeps the interval half-open."""
    rounded = values.astype(target)
    top = target.type(high)
    if (rounded == top).any():
        rounded[rounded == top] = target.type(np.float32(low))
    return rounded


def _scaled(normals: np.ndarray, mean: float, std: float) -> np.ndarray:
    """``normals * std + mean`` rounded once, as torch's compiled kernels fuse it."""
    if std == 1.0 and mean == 0.0:
        return normals
    return fma_float64(normals, std, mean)


def _box_muller_16(uniform: np.ndarray, mean: float, std: float) -> np.ndarray:
    """torch's portable normal_fill_16 over blocks of 16 float64 uniforms: radius from the
    first 8 (as 1 - u), angle from the last 8; cos values first, then sin values."""
    blocks = uniform.reshape(-1, 2, 8)
    u1 = 1.0 - blocks[:, 0]
    radius = np.sqrt(-2.0 * _log(u1))
    theta = 2.0 * np.pi * blocks[:, 1]
    normals = np.stack([radius * _cos(theta), radius * _sin(theta)], axis=1)
    if std != 1.0 or mean != 0.0:
        normals = fma_float64(normals, std, mean)
    return normals.reshape(-1)
