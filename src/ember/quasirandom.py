"""``ember.quasirandom.SobolEngine``: low-discrepancy Sobol sequences, as
``torch.quasirandom.SobolEngine``, on ``scipy.stats.qmc.Sobol``.

Unscrambled sequences are torch's exactly: the same Joe–Kuo direction numbers (21201
dimensions, 30 bits), Gray-code order and fast-forwarding. Scrambled sequences (``scramble=True``)
are Owen-type scrambles drawn by SciPy from ``seed``: reproducible, but not torch's numbers.

Example::
    >>> engine = ember.quasirandom.SobolEngine(2)
    >>> engine.draw(4)
    tensor([[0.0000, 0.0000],
            [0.5000, 0.5000],
            [0.7500, 0.2500],
            [0.2500, 0.7500]])
"""

from __future__ import annotations

import warnings

from . import _dtype as dt
from ._tensor import Tensor


class SobolEngine:
    """Draws points of a ``dimension``-dimensional Sobol sequence in [0, 1)."""

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(
                f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]"
            )
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        self.reset()

    def _sampler(self):
        from scipy.stats import qmc

        return qmc.Sobol(
            self.dimension,
            scramble=self.scramble,
            bits=self.MAXBIT,
            seed=self.seed if self.scramble else None,
        )

    def reset(self) -> SobolEngine:
        """Back to the first point."""
        self._engine = self._sampler()
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skip the next ``n`` points."""
        self._engine.fast_forward(n)
        self.num_generated += n
        return self

    def draw(self, n: int = 1, out: Tensor | None = None, dtype=None) -> Tensor:
        """The next ``n`` points, shape (n, dimension), in ``dtype`` (the default dtype)."""
        from . import _creation

        kind = dt.get_default_dtype() if dtype is None else dt.to_dtype(dtype)
        with warnings.catch_warnings():  # SciPy warns about n not a power of 2; torch does not
            warnings.simplefilter("ignore", UserWarning)
            points = self._engine.random(n)
        self.num_generated += n
        result = _creation.tensor(points, dtype=kind)
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: Tensor | None = None, dtype=None) -> Tensor:
        """The next 2**m points; the total drawn must stay a power of 2 (the balance of
        Sobol points)."""
        n = 2**m
        total_n = self.num_generated + n
        if total_n & (total_n - 1):
            raise ValueError(
                "The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: "
                f"{self.num_generated} + 2**{m}={total_n}. If you still want to do this, please "
                "use 'SobolEngine.draw()' instead."
            )
        return self.draw(n=n, out=out, dtype=dtype)

    def __repr__(self) -> str:
        details = [f"dimension={self.dimension}"]
        if self.scramble:
            details.append("scramble=True")
        if self.seed is not None:
            details.append(f"seed={self.seed}")
        return f"{type(self).__name__}({', '.join(details)})"


__all__ = ["SobolEngine"]
