"""One value at a time from the mt19937 stream, as torch's per-element samplers draw.

torch's rejection samplers (gamma, Poisson, binomial) call ``uniform_real_distribution<double>``
and ``normal_distribution<double>`` once per need, element after element, so element i's
rejections consume words before element i+1 starts. :class:`ScalarStream` serves those calls
from blocks of 64-bit words fetched in bulk, and on closing rewinds the engine to just past the
last word used, so the stream stands where torch's would.
"""

from __future__ import annotations

import math

import numpy as np

from .mt19937 import MT19937

_MASK53 = np.uint64((1 << 53) - 1)
_TWO_PI = 2.0 * math.pi


class ScalarStream:
    """float64 uniforms and torch's cached Box-Muller normals, one call at a time.

    Use as a context manager; ``expected`` (how many uniforms the caller will likely use)
    sizes the first block.
    """

    __slots__ = ("engine", "_block", "_used", "_state", "_size")

    def __init__(self, engine: MT19937, expected: int = 64):
        self.engine = engine
        self._size = int(min(max(expected, 64), 1 << 18))
        self._block: list[float] = []
        self._used = 0
        self._state = None

    def __enter__(self) -> ScalarStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _refill(self) -> None:
        self._state = self.engine.bits.state
        words = self.engine.words64(self._size)
        self._block = ((words & _MASK53).astype(np.float64) * 2.0**-53).tolist()
        self._used = 0
        self._size = min(self._size * 2, 1 << 18)

    def uniform(self) -> float:
        """torch's ``uniform_real_distribution<double>(0, 1)``: one 64-bit word."""
        if self._used == len(self._block):
            self._refill()
        value = self._block[self._used]
        self._used += 1
        return value

    def normal(self) -> float:
        """torch's ``normal_distribution<double>(0, 1)``: Box-Muller on two uniforms, the
        second value cached on the generator for the next call."""
        engine = self.engine
        cached = engine.next_double_normal
        if cached is not None:
            engine.next_double_normal = None
            return cached
        u1 = self.uniform()
        u2 = self.uniform()
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = _TWO_PI * u1
        engine.next_double_normal = radius * math.sin(theta)
        return radius * math.cos(theta)

    def close(self) -> None:
        """Put back the words fetched but not used."""
        if self._state is None:
            return
        unused = len(self._block) - self._used
        if unused:
            self.engine.bits.state = self._state
            if self._used:
                self.engine.words(2 * self._used)
        self._state = None
        self._block = []
        self._used = 0
