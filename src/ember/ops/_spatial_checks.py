"""Checks shared by the spatial ops (pooling, resampling, normalisation, grid sampling)."""

from __future__ import annotations

from .._tensor import Tensor


def require_floating(input: Tensor, op: str) -> None:
    """Averaging and interpolating ops fold fractional weights into their kernels: on integer
    input they would silently truncate, so they refuse it (as PyTorch does for most of them)."""
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f"\"{op}\" not implemented for '{input.dtype.legacy_name}'")


def check_pool_args(kernel, stride, padding, dilation) -> None:
    """torch's checks of a 2-d or 3-d pooling window, in its order: per dim, the output-size
    rule's (stride not zero, padding within the effective kernel), then the shape check's."""
    for k, s, p, d in zip(kernel, stride, padding, dilation):
        if s == 0:
            raise RuntimeError("stride should not be zero")
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > int(((k - 1) * d + 1) / 2):  # C's division, toward zero
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    three = len(kernel) == 3
    letters = ("T", "H", "W") if three else ("H", "W")

    def listed(prefix, values, sep=" "):
        return sep.join(f"{prefix}{letter}: {v}" for letter, v in zip(letters, values))

    if any(k <= 0 for k in kernel):
        raise RuntimeError(
            f"kernel size should be greater than zero, but got {listed('k', kernel)}"
        )
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"stride should be greater than zero, but got {listed('d', stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(
            f"dilation should be greater than zero, but got {listed('dilation', dilation)}"
        )
    if any(k // 2 < p for k, p in zip(kernel, padding)):
        if three:
            (kt, kh, kw), (pt, ph, pw) = kernel, padding
            got = f"kT: {kt} kW: {kw} kH: {kh} padT: {pt} padW: {pw} padH: {ph}"
        else:
            (kh, kw), (ph, pw) = kernel, padding
            got = f"padW = {pw}, padH = {ph}, kW = {kw}, kH = {kh}"
        raise RuntimeError(
            f"pad should be smaller than or equal to half of kernel size, but got {got}"
        )


def check_max_pool1d_args(kernel, stride, padding, dilation) -> None:
    """max_pool1d's own checks and messages, in torch's order."""
    checks = (
        (kernel[0] > 0, f"kernel_size must be greater than zero, but got {kernel[0]}"),
        (stride[0] > 0, f"stride must be greater than zero, but got {stride[0]}"),
        (padding[0] >= 0, f"padding must be non-negative, but got {padding[0]}"),
        (
            padding[0] <= kernel[0] // 2,
            f"padding should be at most half of kernel size, but got padding={padding[0]} "
            f"and kernel_size={kernel[0]}",
        ),
        (dilation[0] > 0, f"dilation must be greater than zero, but got {dilation[0]}"),
    )
    for ok, message in checks:
        if not ok:
            raise RuntimeError(f"max_pool1d() {message}")
