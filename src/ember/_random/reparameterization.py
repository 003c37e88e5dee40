"""Reparameterisation gradients of gamma and Dirichlet draws, as torch computes them
(``torch._standard_gamma_grad``, ``torch._dirichlet_grad``), vectorised in float64.

A draw x from Gamma(α, 1) moves with α along its fixed CDF level: dx/dα = -(∂F/∂α) / (∂F/∂x).
torch approximates that with a series for x < 0.8, Rice's saddle point for α > 8 and a
rational fit in log(x/α), log α otherwise. The Dirichlet gradient is that of the marginal
Beta(α, total - α), scaled by 1 / (1 - x): series near x = 0 and x = 1, a saddle point when
both parameters exceed 6, else a rational correction of an analytic approximation.
torch evaluates a few float32 cases in float32; here all is float64, rounded at the end.
"""

from __future__ import annotations

import numpy as np

_DIGAMMA_ASYMPTOTIC = (
    8.33333333333333333333e-2,
    -2.10927960927960927961e-2,
    7.57575757575757575758e-3,
    -4.16666666666666666667e-3,
    3.96825396825396825397e-3,
    -8.33333333333333333333e-3,
    8.33333333333333333333e-2,
)
_PSI_10 = 2.25175258906672110764
# the bivariate rational approximation of dx/dα for moderate α (rows: 1, u, u² terms)
_GRAD_COEFFICIENTS = np.array(
    [
        [0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089,
         0.0014179084],
        [0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113,
         -0.0035938915, -0.00058392623],
        [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642,
         -0.0021309326, 0.00085092367, -1.5247877e-07],
    ]
)  # fmt: skip


def digamma_positive(x: np.ndarray) -> np.ndarray:
    """ψ(x) for x > 0 (float64): recur up to x >= 10, then the asymptotic series."""
    x = np.array(x, dtype=np.float64)
    result = np.zeros_like(x)
    while True:
        below = x < 10
        if not below.any():
            break
        result = np.where(below, result - 1.0 / np.where(below, x, 1.0), result)
        x = np.where(below, x + 1.0, x)
    z = 1.0 / (x * x)
    poly = np.zeros_like(x)
    for coefficient in _DIGAMMA_ASYMPTOTIC:
        poly = poly * z + coefficient
    tail = np.where(x < 1.0e17, z * poly, 0.0)
    with np.errstate(divide="ignore"):
        general = result + np.log(x) - 0.5 / x - tail
    return np.where(x == 10, result + _PSI_10, general)


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dx/dα of a Gamma(α, 1) draw x (see the module notes), in ``alpha``'s dtype."""
    dtype = np.result_type(alpha.dtype, x.dtype)
    a = np.asarray(alpha, dtype=np.float64)
    v = np.asarray(x, dtype=np.float64)
    a, v = np.broadcast_arrays(a, v)
    with np.errstate(all="ignore"):
        out = _rational_grad(a, v)
        large = (v >= 0.8) & (a > 8.0)
        out = np.where(large, _saddle_point_grad(a, v), out)
        out = np.where(v < 0.8, _series_grad(a, v), out)
    return out.astype(dtype)


def _series_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    numer = np.ones_like(x)
    denom = alpha.copy()
    series1 = numer / denom
    series2 = numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = np.power(x, alpha)
    pdf = np.power(x, alpha - 1) * np.exp(-x)
    cdf = pow_x_alpha * series1
    cdf_alpha = (np.log(x) - digamma_positive(alpha)) * cdf - pow_x_alpha * series2
    result = -cdf_alpha / pdf
    return np.where(np.isnan(result), 0.0, result)


def _saddle_point_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    near = (0.9 * alpha <= x) & (x <= 1.1 * alpha)
    numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
    numer_2 = (
        1440 * (alpha * alpha)
        + 6 * x * (53 - 120 * x)
        - 65 * x * x / alpha
        + alpha * (107 + 3600 * x)
    )
    near_value = numer_1 * numer_2 / (1244160 * (alpha * alpha) * (alpha * alpha))
    denom = np.sqrt(8 * alpha)
    term2 = denom / (alpha - x)
    term3 = np.power(x - alpha - alpha * np.log(x / alpha), -1.5)
    term23 = np.where(x < alpha, term2 - term3, term2 + term3)
    term1 = np.log(x / alpha) * term23 - np.sqrt(2 / alpha) * (alpha + x) / (
        (alpha - x) * (alpha - x)
    )
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    far_value = -stirling * (x * term1) / denom
    return np.where(near, near_value, far_value)


def _rational_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    u = np.log(x / alpha)[..., None]
    v = np.log(alpha)
    coef = _GRAD_COEFFICIENTS[0] + u * (_GRAD_COEFFICIENTS[1] + u * _GRAD_COEFFICIENTS[2])
    p = coef[..., 0] + v * (coef[..., 1] + v * (coef[..., 2] + v * coef[..., 3]))
    q = coef[..., 4] + v * (coef[..., 5] + v * (coef[..., 6] + v * coef[..., 7]))
    return np.exp(p / q)


# --- Dirichlet (through its Beta marginals) -------------------------------------------------
# the rational correction's coefficients: [numerator/denominator][power of u][power of a][b]
_DIRICHLET_COEFFICIENTS = np.array(
    [
        [
            [[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
             [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
             [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
            [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
             [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
             [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
            [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
             [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
             [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]],
        ],
        [
            [[1, -0.02924021934, -0.04438342661, 0.007285809825],
             [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
             [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
            [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
             [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
             [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
            [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
             [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
             [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]],
        ],
    ]
)  # fmt: skip


def dirichlet_grad(x: np.ndarray, alpha: np.ndarray, total: np.ndarray) -> np.ndarray:
    """torch's ``_dirichlet_grad(x, alpha, total)``: the Beta(α, total - α) reparameterisation
    gradient of x, divided by 1 - x, in ``x``'s dtype."""
    dtype = np.result_type(x.dtype, alpha.dtype, total.dtype)
    x, alpha, total = (np.asarray(v, dtype=np.float64) for v in (x, alpha, total))
    x, alpha, total = np.broadcast_arrays(x, alpha, total)
    beta = total - alpha
    boundary = total * x * (1 - x)
    with np.errstate(all="ignore"):
        out = _dirichlet_rational(x, alpha, total, beta)
        out = np.where((alpha > 6) & (beta > 6), _beta_grad_alpha_mid(x, alpha, beta), out)
        near_one = (x >= 0.5) & (boundary < 0.75)
        out = np.where(near_one, -_beta_grad_beta_small(1 - x, beta, alpha), out)
        near_zero = (x <= 0.5) & (boundary < 2.5)
        out = np.where(near_zero, _beta_grad_alpha_small(x, alpha, beta), out)
    return out.astype(dtype)


def _beta_grad_alpha_small(x, alpha, beta):
    """Taylor series in x near 0."""
    factor = digamma_positive(alpha) - digamma_positive(alpha + beta) - np.log(x)
    numer = np.ones_like(x)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer = numer * ((i - beta) * x / i)
        denom = alpha + i
        series = series + numer / denom * (factor + 1 / denom)
    result = x * np.power(1 - x, -beta) * series
    return np.where(np.isnan(result), 0.0, result)


def _beta_grad_beta_small(x, alpha, beta):
    """Taylor series in x near 0 of the gradient with respect to beta."""
    factor = digamma_positive(alpha + beta) - digamma_positive(beta)
    numer, betas, dbetas = np.ones_like(x), np.ones_like(x), np.zeros_like(x)
    series = factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / i)
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    result = -np.power(1 - x, 1 - beta) * series
    return np.where(np.isnan(result), 0.0, result)


def _beta_grad_alpha_mid(x, alpha, beta):
    """Rice's saddle point expansion for large alpha and beta."""
    total = alpha + beta
    mean = alpha / total
    std = np.sqrt(alpha * beta / (total + 1)) / total
    near = (mean - 0.1 * std <= x) & (x <= mean + 0.1 * std)
    # near the mean (a removable singularity there): a polynomial form
    bb = beta * beta
    poly = 47 * x * bb * bb + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * bb * beta
        + alpha
        * (
            3 * (59 + 180 * beta - 90 * x) * bb
            + alpha
            * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta
                + alpha * (8 * (1 - x) * (135 * beta - 11))
            )
        )
    )
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
    near_value = prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / np.sqrt(2 * alpha * beta / total)
    stirling = (
        (1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha))
        * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
        / (1 + 1 / (12 * total) + 1 / (288 * total * total))
    )
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * bb
    axbx = alpha * (x - 1) + beta * x
    term1_den = np.sqrt(2 * alpha / beta) * np.power(total, 1.5) * axbx * axbx
    term1 = term1_num / term1_den
    term2 = 0.5 * np.log(alpha / (total * x))
    term3 = np.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4_base = beta * np.log(beta / (total * (1 - x))) + alpha * np.log(alpha / (total * x))
    term4 = np.power(term4_base, -1.5)
    term1234 = term1 + term2 * (term3 + np.where(x < mean, term4, -term4))
    return np.where(near, near_value, stirling * prefactor * term1234)


def _dirichlet_rational(x, alpha, total, beta):
    """A rational correction in (log x, log α - log x, log total - ...) of the analytic
    approximation x (ψ(total) - ψ(α)) / β."""
    u = np.log(x)
    a = np.log(alpha) - u
    b = np.log(total) - a
    c = _DIRICHLET_COEFFICIENTS
    p = np.zeros_like(x)
    q = np.zeros_like(x)
    powers_u = (np.ones_like(x), u, u * u)
    powers_a = (np.ones_like(x), a, a * a)
    for i in range(3):
        for j in range(3):
            ua = powers_u[i] * powers_a[j]
            p = p + ua * (
                c[0, i, j, 0] + b * (c[0, i, j, 1] + b * (c[0, i, j, 2] + b * c[0, i, j, 3]))
            )
            q = q + ua * (
                c[1, i, j, 0] + b * (c[1, i, j, 1] + b * (c[1, i, j, 2] + b * c[1, i, j, 3]))
            )
    approx = x * (digamma_positive(total) - digamma_positive(alpha)) / beta
    return p / q * approx


def _cubic(coefficients: np.ndarray, b: np.ndarray) -> np.ndarray:
    """c0 + b (c1 + b (c2 + b c3)), Horner's order as torch evaluates it."""
    c0, c1, c2, c3 = coefficients
    return c0 + b * (c1 + b * (c2 + b * c3))
