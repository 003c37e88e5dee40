"""Checks shared by the spatial ops (pooling, resampling, normalisation, grid sampling)."""

from __future__ import annotations

from .._tensor import Tensor


def require_floating(input: Tensor, op: str) -> None:
    """Averaging and interpolating ops fold fractional weights into their kernels: on integer
    input they would silently truncate, so they refuse it (as PyTorch does for most of them)."""
    if not (input.is_floating_point() or input.is_complex()):
        raise NotImplementedError(f"\"{op}\" not implemented for '{input.dtype.legacy_name}'")


_TUPLE_RULES = {  # torch's words per argument; avg_pool3d's drop the "either"
    "kernel_size": "must either be a single int",
    "stride": "must either be omitted, a single int",
    "padding": "must either be a single int",
    "dilation": "must be either a single int",
    "output_size": "must either be a single int",
}


def pool_tuple(value, nd: int, name: str, op: str) -> tuple:
    """A pooling argument as ``nd`` ints: an int, or a sequence of one or ``nd`` of them
    (``stride`` may also be None or empty: the kernel's, which the caller substitutes)."""
    if isinstance(value, (tuple, list)):
        if len(value) == 1 and nd > 1:
            value = tuple(value) * nd
        if len(value) != nd:
            rule = _TUPLE_RULES[name]
            if op == "avg_pool3d":
                rule = rule.replace("either ", "")
            count = {2: "two", 3: "three"}.get(nd, str(nd))
            raise RuntimeError(f"{op}: {name} {rule}, or a tuple of {count} ints")
        return tuple(int(v) for v in value)
    return (int(value),) * nd


def pool_input_error(shape, nd: int, op: str, any_rank: bool = False) -> str | None:
    """torch's complaint about a pooling input of ``shape`` (None when it is fine): every dim
    but the batch non-zero (the rank, nd + 1 or nd + 2, is checked earlier, in other words,
    except with ``any_rank``)."""
    batch = len(shape) == nd + 2
    if len(shape) not in (nd + 1, nd + 2):
        if not any_rank:
            return None
    elif all(shape[batch:]):
        return None
    if nd == 3:
        where = "max_pool3d_with_indices_out_cpu_template" if op == "max_pool3d" else op
        return (
            f"{where}(): Expected input's non-batch dimensions to have positive length, but "
            f"input has a shape of {list(shape)} and non-batch dimension 0 has length zero!"
        )
    return (
        f"Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with optional 0 dim batch size "
        f"for input, but got:{list(shape)}"
    )


def check_pool_output(shape, out_size) -> None:
    """torch's check that every pooled dim holds a window: sizes as (C x *S)."""
    if any(o < 1 for o in out_size):
        plane = list(shape[-len(out_size) - 1 :])
        given = "x".join(str(s) for s in plane)
        got = "x".join(str(s) for s in [plane[0], *out_size])
        raise RuntimeError(
            f"Given input size: ({given}). Calculated output size: ({got}). Output size is too "
            "small"
        )


def check_pool_args(kernel, stride, padding, dilation, input_error: str | None = None) -> None:
    """torch's checks of a 2-d or 3-d pooling window, in its order: per dim, the output-size
    rule's (stride not zero, padding within the effective kernel), then the shape check's
    (``input_error``: what :func:`pool_input_error` said of the input, raised in its turn)."""
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
    if input_error is not None:
        raise RuntimeError(input_error)
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
