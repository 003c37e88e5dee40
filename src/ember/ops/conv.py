"""Convolution on im2col windows: ``unfold`` / ``fold`` plus one GEMM.

``unfold`` (im2col) and ``fold`` (col2im) are each other's derivative, so convolutions built
from them and ``matmul`` are differentiable to any order (pooling over the same windows:
:mod:`ember.ops.pooling_2d`). A convolution of float32/float64 NumPy arrays (any groups) runs
a few images at a time (:mod:`ember._kernels.conv_pipeline`) as one node, whose double
backward differentiates the composite (CuPy's path for groups > 1). Transposed convolutions:
:mod:`ember.ops.conv_transpose`.
"""

from __future__ import annotations

import itertools
import math
import types

from .. import _dtype
from .._kernels import conv_pipeline
from .._scratch import scratch
from .._tensor import Tensor
from ..autograd import forward_rules
from ..autograd.node import Node
from ._composite import CompositeBackward, composite
from ._dispatch import array_module, grad_state, record, result, wrap
from ._recorded import KernelCall as _KernelCall
from ._recorded import kernel_call as _kernel_call
from ._recorded import recorder as _recorder


def _pair(value, n: int = 2, name: str = "") -> tuple:
    if isinstance(value, (tuple, list)):
        if len(value) != n:
            raise ValueError(f"{name} must have {n} elements, got {value}")
        return tuple(int(v) for v in value)
    return (int(value),) * n


def _out_size(size: int, k: int, s: int, lo: int, hi: int, d: int) -> int:
    return (size + lo + hi - d * (k - 1) - 1) // s + 1


def _window_slices(offsets, stride, out) -> tuple:
    """Per spatial dim, the strided slice of window element ``offsets`` across all outputs."""
    return tuple(slice(o, o + s * (n - 1) + 1, s) for o, s, n in zip(offsets, stride, out))


def _im2col(xp, data, kernel, stride, pads, dilation, channels_first=False, out=None):
    """(N, C, *S) -> (N, C, *K, *O) windows (a copy, C-contiguous); with ``channels_first``
    the layout is (C, *K, N, *O), whose (C·∏K, N·∏O) matrix makes a convolution one large
    GEMM instead of N small ones. ``out``: a C-contiguous array of that size to fill. Loops
    over kernel offsets only, never over pixels."""
    if any(hi < 0 for _, hi in pads):  # a transposed conv's output_padding beyond its padding
        data = data[
            (slice(None), slice(None)) + tuple(slice(0, min(hi, 0) or None) for _, hi in pads)
        ]
        pads = tuple((lo, max(hi, 0)) for lo, hi in pads)
    n, c = data.shape[:2]
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(data.shape[2:], pads))
    out_size = tuple(
        max((size - d * (k - 1) - 1) // s + 1, 0)
        for size, k, s, d in zip(padded, kernel, stride, dilation)
    )
    if channels_first:
        shape = (c,) + tuple(kernel) + (n,) + out_size
        source = data.swapaxes(0, 1)
        if any(lo or hi for lo, hi in pads):  # pad straight into the (C, N, *S) layout
            framed = xp.zeros((c, n) + padded, dtype=data.dtype)
            inner = tuple(slice(lo, lo + s) for s, (lo, _) in zip(data.shape[2:], pads))
            framed[(slice(None), slice(None)) + inner] = source
            source = framed
    else:
        shape = (n, c) + tuple(kernel) + out_size
        if any(lo or hi for lo, hi in pads):
            data = xp.pad(data, ((0, 0), (0, 0)) + tuple(pads))
        source = data
    cols = xp.empty(shape, dtype=data.dtype) if out is None else out.reshape(shape)
    lead = (slice(None),) if channels_first else (slice(None), slice(None))
    for where in itertools.product(*(range(k) for k in kernel)):
        offsets = tuple(i * d for i, d in zip(where, dilation))
        window = source[(slice(None), slice(None)) + _window_slices(offsets, stride, out_size)]
        cols[lead + where] = window
    return cols


def _col2im(xp, cols, size, kernel, stride, pads, dilation, channels_first=False):
    """The adjoint of _im2col: add each window element back to where it came from.

    Channels-first columns are added into a (C, N, *S) buffer, whose windows are larger
    blocks for NumPy, and come back as a transposed view."""
    nd = len(kernel)
    out = cols.shape[-nd:]
    padded = tuple(s + lo + max(hi, 0) for s, (lo, hi) in zip(size, pads))
    lead_shape = (cols.shape[0], cols.shape[1 + nd]) if channels_first else cols.shape[:2]
    image = xp.zeros(tuple(lead_shape) + padded, dtype=cols.dtype)
    lead = (slice(None),) if channels_first else (slice(None), slice(None))
    for where in itertools.product(*(range(k) for k in kernel)):
        offsets = tuple(i * d for i, d in zip(where, dilation))
        image[(slice(None), slice(None)) + _window_slices(offsets, stride, out)] += cols[
            lead + where
        ]
    crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(size, pads))
    image = image[(slice(None), slice(None)) + crop]
    return image.swapaxes(0, 1) if channels_first else image


HALF_TYPES = (_dtype.float16, _dtype.bfloat16)


def in_float32(conv, inputs, *arguments):
    """``conv`` of half-precision ``inputs`` (input, weight, bias) computed in float32 and
    rounded to their dtype once: no rounding between the window sums (col2im's adds)."""
    input, weight, bias = inputs
    bias = None if bias is None else bias.float()
    return conv(input.float(), weight.float(), bias, *arguments).to(input.dtype)


def _bias_sizes(node):
    bias = node.unpack_saved()[2] if len(node.unpack_saved()) > 2 else None
    return None if bias is None else tuple(bias._data.shape)


class ConvolutionBackward0(CompositeBackward):
    """Every convolution (plain or transposed, 1-3 d) as one node, as PyTorch records it."""

    torch_saved = {"input": 0, "weight": 1, "bias_sym_sizes_opt": _bias_sizes}


class ConvolutionOneGemmBackward0(Node):
    """A convolution as one node whose backward is two GEMMs and a col2im on the arrays it
    saved (the im2col columns of a groups=1 convolution), or the pipeline's backward (any
    groups); under ``create_graph`` the composite of ember ops is differentiated instead, so
    that double backward reaches the inputs."""

    groups = 1

    torch_name = "ConvolutionBackward0"
    torch_saved = {
        "bias_sym_sizes_opt": _bias_sizes,
        "dilation": "dilation",
        "groups": "groups",
        "input": 0,
        "output_padding": lambda node: (0,) * len(node.stride),
        "padding": lambda node: tuple(before for before, _ in node.pads),
        "stride": "stride",
        "transposed": ("value", False),
        "weight": 1,
    }

    def backward(self, g):
        from ..autograd import grad as autograd_grad

        inputs = self.unpack_saved()  # raises PyTorch's error once the graph was freed
        edges = self._edges
        wanted = [i for i, edge in enumerate(edges) if edge is not None]
        if grad_state.enabled:
            out = self.compute(*inputs)
            grads = autograd_grad(
                out, [inputs[i] for i in wanted], g, create_graph=True, allow_unused=True
            )
            result = [None] * len(edges)
            for i, grad in zip(wanted, grads):
                result[i] = grad
            return tuple(result)
        x, weight = inputs[0], inputs[1]
        gd = g._data
        xp = array_module(gd)
        if self.unbatched:
            gd = gd[None]
        if self.pipelined:
            return self._pipelined_backward(xp, x._data, weight._data, gd, edges)
        cols = self._saved_out[0]  # (C·∏K, N·∏O)
        n, out_ch = gd.shape[:2]
        g_rows = _scratch_empty(xp, (out_ch, cols.shape[1]), gd.dtype)  # (O, N·∏O)
        g_rows.reshape((out_ch, n) + gd.shape[2:])[...] = gd.swapaxes(0, 1)
        gx = gw = gb = None
        if edges[0] is not None and _transposes_as_a_conv(
            self.stride, self.pads, self.dilation, self.kernel, weight._data.shape
        ):
            gx = _input_grad_as_conv(xp, gd, weight._data, self.kernel, self.pads, self.dilation)
            if self.unbatched:
                gx = gx[0]
            gx = wrap(gx)
        elif edges[0] is not None:
            wmat = weight._data.reshape(out_ch, -1)
            g_cols = _scratch_empty(xp, cols.shape, cols.dtype)
            xp.matmul(wmat.T, g_rows, out=g_cols)
            channels = cols.shape[0] // math.prod(self.kernel)
            g_cols = g_cols.reshape((channels,) + self.kernel + (n,) + self.out)
            size = tuple(x._data.shape[-len(self.kernel) :])
            gx = _col2im(
                xp,
                g_cols,
                size,
                self.kernel,
                self.stride,
                self.pads,
                self.dilation,
                channels_first=True,
            )
            del g_cols
            if self.unbatched:
                gx = gx[0]
            gx = wrap(gx)
        if edges[1] is not None:
            gw = wrap((g_rows @ cols.T).reshape(weight._data.shape))
        if len(edges) > 2 and edges[2] is not None:
            gb = wrap(g_rows.sum(axis=1))
        return gx, gw, gb

    def _pipelined_backward(self, xp, x, weight, gd, edges):
        """The gradients by the pipeline's backward (:meth:`_pipeline_backward_call`),
        chunk by chunk."""
        if self.unbatched:
            x = x[None]
        needs = [edge is not None for edge in edges[:3]] + [False] * (3 - len(edges))
        call, args = self._pipeline_backward_call(x, weight, gd, needs)
        grads = iter(_kernel_call(xp, call, *args))  # the wanted gradients only
        gx, gw, gb = (wrap(next(grads)) if need else None for need in needs)
        if gx is not None and self.unbatched:
            gx = gx[0]
        return gx, gw, gb

    def _pipeline_backward_call(self, x, weight, gd, needs) -> tuple:
        """:mod:`ember._kernels.conv_pipeline`'s backward and its arguments (``needs``: which
        of the input, weight and bias gradients it makes)."""
        geometry = (self.kernel, self.stride, self.pads, self.dilation)
        args = (x, weight, gd, *geometry, *needs, self.groups)
        return _PipelineCall(conv_pipeline.backward), args


def _transposes_as_a_conv(stride, pads, dilation, kernel, weight_shape) -> bool:
    """Whether the input gradient is a unit-stride convolution of the output gradient with
    non-negative padding (d·(k-1) - p on each side), and one that is worth it: its columns
    (O·∏K rows) no more than the C·∏K rows of the GEMM and col2im it replaces."""
    return (
        weight_shape[0] <= weight_shape[1]
        and all(s == 1 for s in stride)
        and all(
            lo <= d * (k - 1) and hi <= d * (k - 1)
            for (lo, hi), d, k in zip(pads, dilation, kernel)
        )
    )


def _input_grad_as_conv(xp, gd, weight, kernel, pads, dilation):
    """d input of a unit-stride convolution: the output gradient convolved with the kernel
    flipped and its channel axes swapped, padded by d·(k-1) - p. One im2col and one GEMM,
    cheaper than the GEMM to columns and the col2im that adds them back."""
    nd = len(kernel)
    flipped = weight[(slice(None), slice(None)) + (slice(None, None, -1),) * nd].swapaxes(0, 1)
    wmat = xp.ascontiguousarray(flipped).reshape(flipped.shape[0], -1)
    grad_pads = tuple(
        (d * (k - 1) - lo, d * (k - 1) - hi) for (lo, hi), d, k in zip(pads, dilation, kernel)
    )
    return _gemm_conv(xp, gd, wmat, kernel, (1,) * nd, grad_pads, dilation)[0]


def _gemm_conv(xp, x, wmat, kernel, stride, pads, dilation):
    """groups=1 convolution of (N, C, *S) ``x`` by the (O, C·∏K) matrix ``wmat``, and the
    columns it used (a scratch array): (O, C·∏K) @ (C·∏K, N·∏O), then (N, O, *O) contiguous."""
    n = x.shape[0]
    out = tuple(
        _out_size(sz, k, s, lo, hi, d)
        for sz, k, s, (lo, hi), d in zip(x.shape[2:], kernel, stride, pads, dilation)
    )
    cols = _scratch_empty(xp, (wmat.shape[1], n * math.prod(out)), x.dtype)
    _im2col(xp, x, kernel, stride, pads, dilation, channels_first=True, out=cols)
    y = (wmat @ cols).reshape((wmat.shape[0], n) + out).swapaxes(0, 1)
    return xp.ascontiguousarray(y), cols


def _scratch_empty(xp, shape, dtype):
    """A reusable NumPy scratch array (see :mod:`ember._scratch`); CuPy has its own pool."""
    if isinstance(xp, types.ModuleType) and xp.__name__ == "numpy":  # not ember.compile's recorder
        return scratch.empty(shape, dtype)
    return xp.empty(shape, dtype=dtype)


def _conv_one_gemm(input, weight, bias, compute, unbatched, geometry, out, out_ch, taps, groups):
    """groups=1: (O, C·∏K) @ (C·∏K, N·∏O), recorded as one node that keeps the columns;
    float32/float64 NumPy arrays (any groups): the pipeline, chunk by chunk. ``geometry``:
    the kernel, stride, pads and dilation."""
    kernel, stride, pads, dilation = geometry
    inputs = (input, weight, bias)
    x = input._data[None] if unbatched else input._data
    xp = array_module(x)
    pipelined = _pipelined(xp, x, weight._data, bias)
    if groups > 1 and not pipelined:  # CuPy: one batched GEMM per group, differentiated
        return composite(ConvolutionBackward0, compute, inputs)
    needs = grad_state.enabled and any(t is not None and t._rg for t in inputs)
    wmat = weight._data.reshape(out_ch, taps)
    if pipelined:  # chunk by chunk, the columns never leave the caches
        b = None if bias is None else bias._data
        call = _PipelineCall(conv_pipeline.forward)
        (y,) = _kernel_call(xp, call, x, wmat, b, kernel, stride, pads, dilation, groups)
    else:
        y, cols = _gemm_conv(xp, x, wmat, kernel, stride, pads, dilation)
        if bias is not None:
            y += bias._data.reshape((1, out_ch) + (1,) * len(kernel))
    if unbatched:
        y = y[0]
    if not needs:
        return wrap(y)
    node = ConvolutionOneGemmBackward0()
    node.compute, node.unbatched, node.kernel, node.stride = compute, unbatched, kernel, stride
    node.pads, node.dilation, node.out, node.pipelined = pads, dilation, out, pipelined
    node.groups = groups
    result_tensor = record(node, y, inputs, saved=inputs)
    if not pipelined:
        node._saved_out = (cols, [0], 0)  # the columns: freed with the graph, counted as saved
    return result_tensor


def _pipelined(xp, x, weight, bias) -> bool:
    """Whether a groups=1 convolution runs through :mod:`ember._kernels.conv_pipeline`:
    float32/float64 NumPy arrays (or ember.compile's recording of them, which records the
    pipeline as one call); CuPy keeps the one large GEMM."""
    if bias is not None and type(bias._data) is not type(x):
        return False
    if conv_pipeline.supports(x, weight):
        return True
    recording = _recorder(xp) is not None
    return recording and x.dtype == weight.dtype and x.dtype.char in "fd"


class _PipelineCall(_KernelCall):
    """A pipeline function as ``ember.compile`` records it: one call whose results (a tuple
    of arrays) are new arrays."""


class Im2ColBackward0(Node):
    channels_first = False

    def backward(self, g):
        return fold_windows(
            g, self.size, self.kernel, self.stride, self.pads, self.dilation, self.channels_first
        )


class Col2ImBackward0(Node):
    channels_first = False

    def backward(self, g):
        return unfold_windows(
            g, self.kernel, self.stride, self.pads, self.dilation, self.channels_first
        )


def unfold_windows(input: Tensor, kernel, stride, pads, dilation, channels_first=False) -> Tensor:
    """(N, C, H, W) -> (N, C, kh, kw, oh, ow) sliding windows (zero padding); with
    ``channels_first``, (C, kh, kw, N, oh, ow)."""
    data = input._data
    cols = _im2col(array_module(data), data, kernel, stride, pads, dilation, channels_first)
    return result(
        Im2ColBackward0,
        cols,
        (input,),
        size=data.shape[2:],
        kernel=kernel,
        stride=stride,
        pads=pads,
        dilation=dilation,
        channels_first=channels_first,
    )


def fold_windows(cols: Tensor, size, kernel, stride, pads, dilation, channels_first=False):
    """(N, C, kh, kw, oh, ow) -> (N, C, H, W), summing where windows overlap; with
    ``channels_first`` the columns are laid out (C, kh, kw, N, oh, ow)."""
    data = cols._data
    xp = array_module(data)
    out = _col2im(xp, data, tuple(size), kernel, stride, pads, dilation, channels_first)
    return result(
        Col2ImBackward0,
        out,
        (cols,),
        kernel=kernel,
        stride=stride,
        pads=pads,
        dilation=dilation,
        channels_first=channels_first,
    )


def _padding_pairs(padding, kernel, dilation, stride, n: int, op: str) -> tuple:
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * n
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            pairs = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                pairs.append((total // 2, total - total // 2))
            return tuple(pairs)
        raise ValueError(
            f"Invalid padding string '{padding}', should be one of {{'valid', 'same'}}"
        )
    return tuple((p, p) for p in _pair(padding, n, "padding"))


def _batched(input: Tensor, nd: int, op: str) -> tuple[Tensor, bool]:
    """(N, C, *S) input as is, or an unbatched (C, *S) one with a batch dim of one."""
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    if input.dim() != nd + 2:
        raise RuntimeError(
            f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {op}, but got "
            f"input of size: {list(input.shape)}"
        )
    return input, False


def _check_weight(input: Tensor, weight: Tensor, nd: int, op: str) -> None:
    if weight.dim() != nd + 2:
        raise RuntimeError(
            f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional input "
            f"{list(input.shape)}, but got {weight.dim()}-dimensional weight of size "
            f"{list(weight.shape)}"
        )
    if input.dtype != weight.dtype:
        raise RuntimeError(
            f"Input type ({input.dtype.legacy_name}) and weight type "
            f"({weight.dtype.legacy_name}) should be the same"
        )


def _check_devices(input: Tensor, weight: Tensor, bias) -> None:
    """torch's message for a weight or bias on another device than the input."""
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and type(t._data) is not type(input._data) and t.device != input.device:
            raise RuntimeError(
                f"Input type ({input.type()}) and {name} type ({t.type()}) should be the same"
            )


def check_conv_params(stride, padding, dilation, output_padding=()) -> None:
    """torch's checks of a convolution's numbers, in its order (after groups)."""
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")


def check_conv_bias(weight: Tensor, bias, out_channels: int, transposed: bool) -> None:
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out_channels):
        prefix = "Given transposed=1, weight" if transposed else "Given weight"
        raise RuntimeError(
            f"{prefix} of size {list(weight.shape)}, expected bias to be 1-dimensional with "
            f"{out_channels} elements, but got bias of size {list(bias.shape)} instead"
        )


def check_conv_dilation(dilation: tuple, transposed: bool) -> None:
    """A zero dilation, caught last as torch's kernels catch it (1-d as the 2-d kernel)."""
    if all(d > 0 for d in dilation):
        return
    shown = (1,) + dilation if len(dilation) == 1 else dilation
    if not transposed:
        raise RuntimeError(f"dilation should be greater than zero, but got {list(shown)}")
    names = ("dilation_depth", "dilation_height", "dilation_width")[-len(shown) :]
    got = ", ".join(f"{name}: {d}" for name, d in zip(names, shown))
    raise RuntimeError(f"dilation should be greater than zero, but got {got}")


def _conv_param(value, nd: int, dim: int, name: str) -> tuple:
    """torch's reading of a convolution's stride/padding/dilation: an int stands for ``nd``
    values (the function's own dims), one value is repeated over the weight's ``dim`` spatial
    dims, otherwise there must be exactly ``dim``."""
    if not isinstance(value, (tuple, list)):
        value = (value,) * nd
    values = tuple(int(v) for v in value)
    if len(values) == 1:
        return values * dim
    if len(values) != dim:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {dim} values to match "
            f"the convolution dimensions, but got {name}={list(values)}"
        )
    return values


def _same_padding_checks(x: Tensor, weight: Tensor, stride, dilation, groups: int, nd: int):
    """torch's checks of a padding='same' convolution, made before the common ones."""
    k = weight.dim()
    if k <= 2:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if k != x.dim():
        raise RuntimeError(
            f"Expected {k}-dimensional input for {k}-dimensional weight{list(weight.shape)}, "
            f"but got {x.dim()}-dimensional input of size {list(x.shape)} instead"
        )
    for name, value in (("stride", stride), ("dilation", dilation)):
        values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * nd
        if len(values) not in (1, k - 2):
            raise RuntimeError(f"{name} cannot broadcast to {k - 2} dimensions")
        if name == "stride" and any(int(v) != 1 for v in values):
            raise RuntimeError("padding='same' is not supported for strided convolutions")


def _dtype_check_bias(input: Tensor, bias) -> None:
    if bias is not None and bias.dtype != input.dtype:
        raise RuntimeError(
            f"Input type ({input.dtype.c_name}) and bias type ({bias.dtype.c_name}) should be "
            "the same"
        )


def _conv_nd(input, weight, bias, stride, padding, dilation, groups: int, nd: int, op: str):
    """A convolution's checks in torch's order (its conv{n}d, then _convolution and
    check_shape_forward), then the pipeline or the composite."""
    _dtype_check_bias(input, bias)
    x, unbatched = _batched(input, nd, op)
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if padding == "same":
            _same_padding_checks(x, weight, stride, dilation, groups, nd)
    dim = weight.dim() - 2
    if dim <= 0:
        raise RuntimeError("weight should have at least three dimensions")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    stride = _conv_param(stride, nd, dim, "stride")
    padding_values = (0,) if isinstance(padding, str) else padding
    padding_values = _conv_param(padding_values, nd, dim, "padding")
    dilation = _conv_param(dilation, nd, dim, "dilation")
    _conv_param((0,) * nd, nd, dim, "output_padding")  # torch passes its own zeros: checked too
    check_conv_params(stride, padding_values, dilation)
    if x.dim() != dim + 2:
        raise RuntimeError(
            f"Expected {dim + 2}-dimensional input for {dim + 2}-dimensional weight "
            f"{list(weight.shape)}, but got {x.dim()}-dimensional input of size "
            f"{list(x.shape)} instead"
        )
    out_ch, in_per_group = weight.shape[:2]
    if out_ch < groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, "
            f"but got weight of size {list(weight.shape)} instead"
        )
    if out_ch % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size [{list(weight.shape)}] instead"  # torch's double brackets
        )
    kernel = tuple(weight.shape[2:])
    n, c = x.shape[:2]
    size = tuple(x.shape[2:])
    if c != in_per_group * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {in_per_group * groups} channels, but got {c} channels "
            "instead"
        )
    check_conv_bias(weight, bias, out_ch, transposed=False)
    pads = (
        _padding_pairs(padding, kernel, dilation, stride, nd, op)
        if isinstance(padding, str)
        else tuple((p, p) for p in padding_values)
    )
    out = tuple(
        _out_size(sz, k, s, lo, hi, d)
        for sz, k, s, (lo, hi), d in zip(size, kernel, stride, pads, dilation)
    )
    if any(o <= 0 for o in out):
        padded = " x ".join(str(sz + lo + hi) for sz, (lo, hi) in zip(size, pads))
        effective = " x ".join(str(d * (k - 1) + 1) for k, d in zip(kernel, dilation))
        raise RuntimeError(
            f"Calculated padded input size per channel: ({padded}). Kernel size: ({effective}). "
            "Kernel size can't be greater than actual input size"
        )
    _check_weight(x, weight, nd, op)
    _check_devices(x, weight, bias)
    check_conv_dilation(dilation, transposed=False)
    if x.dtype in HALF_TYPES:  # in float32, rounded once, as torch's CPU kernels
        given_padding = padding if isinstance(padding, str) else padding_values
        return composite(
            ConvolutionBackward0,
            lambda *inputs: in_float32(
                _conv_nd, inputs, stride, given_padding, dilation, groups, nd, op
            ),
            (input, weight, bias),
        )
    taps = in_per_group * math.prod(kernel)

    def compute(input, weight, bias):
        x = input.unsqueeze(0) if unbatched else input
        if groups == 1:  # one GEMM: (O, C·∏K) @ (C·∏K, N·∏O)
            cols = unfold_windows(x, kernel, stride, pads, dilation, channels_first=True)
            y = weight.reshape(out_ch, taps) @ cols.reshape(taps, n * math.prod(out))
            y = y.reshape((out_ch, n) + out).transpose(0, 1)
        else:
            cols = unfold_windows(x, kernel, stride, pads, dilation)  # (N, C, *K, *O)
            cols = cols.reshape(n, groups, taps, math.prod(out))
            wmat = weight.reshape(groups, out_ch // groups, taps)
            y = (wmat @ cols).reshape((n, out_ch) + out)  # one batched GEMM per group
        if bias is not None:
            y = y + bias.reshape((1, out_ch) + (1,) * nd)
        return y.squeeze(0) if unbatched else y

    geometry = (kernel, stride, pads, dilation)
    return _conv_one_gemm(
        input, weight, bias, compute, unbatched, geometry, out, out_ch, taps, groups
    )


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """1-D convolution (cross-correlation, as PyTorch) of (N, C, L) or (C, L) input.

    >>> conv1d(ember.ones(1, 1, 4), ember.ones(1, 1, 2)).tolist()
    [[[2.0, 2.0, 2.0]]]
    """
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """2-D convolution (cross-correlation, as PyTorch) of (N, C, H, W) or (C, H, W) input."""
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """3-D convolution of (N, C, D, H, W) or (C, D, H, W) input."""
    return _conv_nd(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """``ember.nn.functional.unfold``: (N, C, H, W) -> (N, C·kh·kw, L), or unbatched
    (C, H, W) -> (C·kh·kw, L)."""
    if input.dim() not in (3, 4):
        raise RuntimeError(
            f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)"
        )
    unbatched = input.dim() == 3
    if 0 in tuple(input.shape[1 - unbatched :]):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other "
            f"non-zero dimensions for input, but got: {list(input.shape)}"
        )
    x = input.unsqueeze(0) if unbatched else input
    kernel = _pair(kernel_size, 2, "kernel_size")
    pads = tuple((p, p) for p in _pair(padding, 2, "padding"))
    cols = unfold_windows(
        x, kernel, _pair(stride, 2, "stride"), pads, _pair(dilation, 2, "dilation")
    )
    n, c = x.shape[:2]
    blocks = cols.shape[-2] * cols.shape[-1]  # explicit: -1 cannot be inferred for n == 0
    out = cols.reshape(n, c * kernel[0] * kernel[1], blocks)
    return out.squeeze(0) if unbatched else out


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """``ember.nn.functional.fold``: (N, C·kh·kw, L) -> (N, C, H, W), summing overlaps;
    (C·kh·kw, L) -> (C, H, W)."""
    if input.dim() not in (2, 3) or 0 in tuple(input.shape[input.dim() - 2 :]):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(input.shape)}"
        )
    unbatched = input.dim() == 2
    x = input.unsqueeze(0) if unbatched else input
    kernel = _pair(kernel_size, 2, "kernel_size")
    size = _pair(output_size, 2, "output_size")
    stride, dilation = _pair(stride, 2, "stride"), _pair(dilation, 2, "dilation")
    padding = _pair(padding, 2, "padding")
    pads = tuple((p, p) for p in padding)
    oh = _out_size(size[0], kernel[0], stride[0], *pads[0], dilation[0])
    ow = _out_size(size[1], kernel[1], stride[1], *pads[1], dilation[1])
    n, ckk, blocks = x.shape
    if ckk % (kernel[0] * kernel[1]):
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={ckk} and kernel_size={kernel}."
        )
    if blocks != oh * ow:
        raise RuntimeError(
            f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match "
            f"the calculated number of sliding blocks {oh} * {ow} = {oh * ow}, but got "
            f"input.size(2)={blocks}."
        )
    c = ckk // (kernel[0] * kernel[1])
    cols = x.reshape(n, c, kernel[0], kernel[1], oh, ow)
    out = fold_windows(cols, size, kernel, stride, pads, dilation)
    return out.squeeze(0) if unbatched else out


def _im2col_jvp(node, tangents):  # unfolding into windows is linear: unfold the tangent
    return unfold_windows(
        tangents[0], node.kernel, node.stride, node.pads, node.dilation, node.channels_first
    )


forward_rules.RULES["Im2ColBackward0"] = _im2col_jvp

# the transposed convolutions live next door; ember.ops.conv keeps offering them
from .conv_transpose import conv_transpose1d, conv_transpose2d, conv_transpose3d  # noqa: E402, F401
