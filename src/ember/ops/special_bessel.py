"""torch.special's Bessel functions of the first and second kind, as ATen computes them.

ATen's kernels (``bessel_j0_forward`` ... in aten/src/ATen/native/Math.h) are Cephes' rational
approximations, evaluated in the input's own precision, except that the denominators Cephes
evaluates with ``p1evl`` (an implicit leading coefficient 1) are evaluated without it. The
results differ from the exact functions by up to ~4e-7 near x = 5 (scipy.special's Cephes
is exact there); ember returns torch's values, so these are ATen's loops, step for step.
"""

from __future__ import annotations

import contextlib

from ._dispatch import array_module

_J0_PP = (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e00,
          5.44725003058768775090e00, 8.74716500199817011941e00, 5.30324038235394892183e00,
          9.99999999999999997821e-01)  # fmt: skip
_J0_PQ = (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e00,
          5.47097740330417105182e00, 8.76190883237069594232e00, 5.30605288235394617618e00,
          1.00000000000000000218e00)  # fmt: skip
_J0_QP = (-1.13663838898469149931e-02, -1.28252718670509318512e00, -1.95539544257735972385e01,
          -9.32060152123768231369e01, -1.77681167980488050595e02, -1.47077505154951170175e02,
          -5.14105326766599330220e01, -6.05014350600728481186e00)  # fmt: skip
_J0_QQ = (6.43178256118178023184e01, 8.56430025976980587198e02, 3.88240183605401609683e03,
          7.24046774195652478189e03, 5.93072701187316984827e03, 2.06209331660327847417e03,
          2.42005740240291393179e02)  # fmt: skip
_J0_RP = (-4.79443220978201773821e09, 1.95617491946556577543e12, -2.49248344360967716204e14,
          9.70862251047306323952e15)  # fmt: skip
_J0_RQ = (4.99563147152651017219e02, 1.73785401676374683123e05, 4.84409658339962045305e07,
          1.11855537045356834862e10, 2.11277520115489217587e12, 3.10518229857422583814e14,
          3.18121955943204943306e16, 1.71086294081043136091e18)  # fmt: skip
_Y0_YP = (1.55924367855235737965e04, -1.46639295903971606143e07, 5.43526477051876500413e09,
          -9.82136065717911466409e11, 8.75906394395366999549e13, -3.46628303384729719441e15,
          4.42733268572569800351e16, -1.84950800436986690637e16)  # fmt: skip
_Y0_YQ = (1.04128353664259848412e03, 6.26107330137134956842e05, 2.68919633393814121987e08,
          8.64002487103935000337e10, 2.02979612750105546709e13, 3.17157752842975028269e15,
          2.50596256172653059228e17)  # fmt: skip
_J1_PP = (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e00,
          5.11207951146807644818e00, 8.42404590141772420927e00, 5.21451598682361504063e00,
          1.00000000000000000254e00)  # fmt: skip
_J1_PQ = (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e00,
          5.07386386128601488557e00, 8.39985554327604159757e00, 5.20982848682361821619e00,
          9.99999999999999997461e-01)  # fmt: skip
_J1_QP = (5.10862594750176621635e-02, 4.98213872951233449420e00, 7.58238284132545283818e01,
          3.66779609360150777800e02, 7.10856304998926107277e02, 5.97489612400613639965e02,
          2.11688757100572135698e02, 2.52070205858023719784e01)  # fmt: skip
_J1_QQ = (7.42373277035675149943e01, 1.05644886038262816351e03, 4.98641058337653607651e03,
          9.56231892404756170795e03, 7.99704160447350683650e03, 2.82619278517639096600e03,
          3.36093607810698293419e02)  # fmt: skip
_J1_RP = (-8.99971225705559398224e08, 4.52228297998194034323e11, -7.27494245221818276015e13,
          3.68295732863852883286e15)  # fmt: skip
_J1_RQ = (6.20836478118054335476e02, 2.56987256757748830383e05, 8.35146791431949253037e07,
          2.21511595479792499675e10, 4.74914122079991414898e12, 7.84369607876235854894e14,
          8.95222336184627338078e16, 5.32278620332680085395e18)  # fmt: skip
_Y1_YP = (1.26320474790178026440e09, -6.47355876379160291031e11, 1.14509511541823727583e14,
          -8.12770255501325109621e15, 2.02439475713594898196e17,
          -7.78877196265950026825e17)  # fmt: skip
_Y1_YQ = (5.94301592346128195359e02, 2.35564092943068577943e05, 7.34811944459721705660e07,
          1.87601316108706159478e10, 3.88231277496238566008e12, 6.20557727146953693363e14,
          6.87141087355300489866e16, 3.97270608116560655612e18)  # fmt: skip

_PIO4 = 0.785398163397448309615660845819875721
_3PIO4 = 2.356194490192344928846982537459627163
_SQ2OPI = 0.797884560802865355879892119868763737
_TWOOPI = 0.636619772367581343075535053490057448


def _horner(z, coefficients):
    """ATen's ``p = p * z + c`` from p = 0, in ``z``'s dtype."""
    t = z.dtype.type
    p = z * t(0)
    for c in coefficients:
        p = p * z + t(c)
    return p


def _asymptotic(x, pp, pq, qp, qq, phase, z, w, odd_sign):
    """The x > 5 form: sqrt(2/(pi x)) (P cos(x - phase) -+ (5/x) Q sin(x - phase))."""
    xp = array_module(x)
    t = x.dtype.type
    shifted = x - t(phase)
    p = _horner(z, pp) / _horner(z, pq)
    q = _horner(z, qp) / _horner(z, qq)
    first, second = (xp.cos, xp.sin) if odd_sign < 0 else (xp.sin, xp.cos)
    return (p * first(shifted) + t(odd_sign) * w * q * second(shifted)) * t(_SQ2OPI) / xp.sqrt(x)


def _quiet(xp):
    errstate = getattr(xp, "errstate", None)  # CuPy raises no floating-point warnings
    return errstate(all="ignore") if errstate is not None else contextlib.nullcontext()


def _in_float32_at_least(kernel):
    """float16 / bfloat16 computed in float32 and rounded once, as torch's half kernels do."""

    def run(x):
        flat = x.reshape(-1)  # 1-d: NumPy turns 0-d intermediates into scalars
        out = kernel(flat) if x.dtype.itemsize >= 4 else kernel(flat.astype("float32"))
        return out.astype(x.dtype, copy=False).reshape(x.shape)

    run.__name__ = kernel.__name__
    run.__doc__ = kernel.__doc__
    return run


@_in_float32_at_least
def bessel_j0(x):
    xp = array_module(x)
    t = x.dtype.type
    with _quiet(xp):
        a = xp.abs(x)
        zz = a * a
        small = (zz - t(5.78318596294678452118e00)) * (zz - t(3.04712623436620863991e01))
        small = small * _horner(zz, _J0_RP) / _horner(zz, _J0_RQ)
        small = xp.where(a < t(0.00001), t(1) - zz / t(4), small)
        large = _asymptotic(a, _J0_PP, _J0_PQ, _J0_QP, _J0_QQ, _PIO4, t(25) / zz, t(5) / a, -1)
        return xp.where(a <= t(5), small, large).astype(x.dtype, copy=False)


@_in_float32_at_least
def bessel_j1(x):
    xp = array_module(x)
    t = x.dtype.type
    with _quiet(xp):
        a = xp.abs(x)
        zz = a * a
        small = _horner(zz, _J1_RP) / _horner(zz, _J1_RQ) * a
        small = small * (zz - t(1.46819706421238932572e01)) * (zz - t(4.92184563216946036703e01))
        fifth = t(5) / a
        large = _asymptotic(a, _J1_PP, _J1_PQ, _J1_QP, _J1_QQ, _3PIO4, fifth * fifth, fifth, -1)
        out = xp.where(a <= t(5), small, large)
        return xp.where(x < 0, -out, out).astype(x.dtype, copy=False)


@_in_float32_at_least
def bessel_y0(x):
    xp = array_module(x)
    t = x.dtype.type
    with _quiet(xp):
        zz = x * x
        small = _horner(zz, _Y0_YP) / _horner(zz, _Y0_YQ)
        small = small + t(_TWOOPI) * xp.log(x) * bessel_j0(x)
        small = xp.where(x == 0, -xp.inf, small)  # ATen's x < 0 check has no effect: log gives nan
        large = _asymptotic(x, _J0_PP, _J0_PQ, _J0_QP, _J0_QQ, _PIO4, t(25) / zz, t(5) / x, 1)
        return xp.where(x <= t(5), small, large).astype(x.dtype, copy=False)


@_in_float32_at_least
def bessel_y1(x):
    xp = array_module(x)
    t = x.dtype.type
    with _quiet(xp):
        zz = x * x
        small = x * (_horner(zz, _Y1_YP) / _horner(zz, _Y1_YQ))
        small = small + t(_TWOOPI) * (bessel_j1(x) * xp.log(x) - t(1) / x)
        small = xp.where(x == 0, -xp.inf, xp.where(x < 0, xp.nan, small))
        fifth = t(5) / x
        large = _asymptotic(x, _J1_PP, _J1_PQ, _J1_QP, _J1_QQ, _3PIO4, fifth * fifth, fifth, 1)
        return xp.where(x <= t(5), small, large).astype(x.dtype, copy=False)
