"""``ember.special``: PyTorch's ``torch.special`` namespace.

Example::
    >>> import ember as torch
    >>> torch.special.gammaln(torch.tensor([4.0]))  # log 3!
    tensor([1.7918])
"""

from __future__ import annotations

from ..ops.activation import log_softmax, softmax
from ..ops.elementwise import erf, erfc, exp2, expm1, log1p, logit, round
from ..ops.elementwise import sigmoid as expit
from ..ops.reduction import logsumexp
from ..ops.special import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    digamma,
    entr,
    erfcx,
    erfinv,
    gammainc,
    gammaincc,
    i0,
    i0e,
    i1,
    i1e,
    log_ndtr,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    multigammaln,
    ndtr,
    ndtri,
    polygamma,
    psi,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    sinc,
    spherical_bessel_j0,
    xlog1py,
    xlogy,
    zeta,
)
from ..ops.special import lgamma as gammaln
from ._orthogonal_polynomials import (
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)

__all__ = [
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]

from .. import _out  # noqa: E402

_out.install(globals(), _out.SPECIAL_OUT_FUNCTIONS)  # out= where torch takes it
