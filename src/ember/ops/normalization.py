"""Normalisations: layer, batch and group norm as one fused node each (PyTorch's
``native_*_norm``), instance norm on top of batch norm, RMS and local response norm.

The fused norms share one kernel over a canonical view of the input (``_Layout``): the input
is reshaped so that the statistics run over some axes and the affine parameters vary along
others. Forward takes the mean, centres into the output buffer, takes the variance from it and
scales in place; backward recomputes the normalised input from the saved mean and 1/std (as
PyTorch, which saves no full-size temporaries) and applies the closed form. Both run slab by
slab along an axis the statistics do not span, so that a slab's passes stay in the caches, and
share the slabs among the intra-op threads. Under ``create_graph`` the same closed form is
written with ember ops, so gradients of every order exist. Instance norm is batch norm over
(1, N·C, *S); RMS and local response norm are composed of ember ops.
"""

from __future__ import annotations

import math

from .. import _backend
from .._dtype import from_numpy_dtype
from .._kernels import jit
from .._kernels.blocked import errors_ignored, is_plain_numpy
from .._out import with_out
from .._tensor import Tensor
from ..autograd.node import Node
from ._dispatch import array_module, grad_state, result, wrap
from ._linalg_common import MultiOutputNode, record_outputs
from ._recorded import KernelCall as _KernelCall
from ._recorded import kernel_call as _kernel_call
from ._recorded import recorder as _recorder
from ._spatial_checks import require_floating
from .indexing import pad
from .pooling import avg_pool_nd
from .pooling_2d import avg_pool2d

# --------------------------------------------------------------------------------------------
# Fused layer / batch / group norm
# --------------------------------------------------------------------------------------------
_AXES = "abcd"


class _Layout:
    """A fused norm's view of its input: the canonical ``shape``, the axes the statistics run
    over (``stats``), the axes the affine parameters vary along, and the number of elements
    each statistic covers."""

    __slots__ = ("shape", "stats", "params", "param_shape", "param_sums", "others", "count")

    def __init__(self, shape: tuple, stats: tuple, params: tuple):
        self.shape, self.stats, self.params = shape, stats, params
        self.param_shape = tuple(s if i in params else 1 for i, s in enumerate(shape))
        self.param_sums = tuple(i for i in range(len(shape)) if i not in params)
        self.others = tuple(i for i in range(len(shape)) if i not in stats)
        self.count = math.prod(shape[i] for i in stats)


def _sum_of_products(xp, a, b, keep: tuple):
    """Σ a·b over every axis not in ``keep``, in one pass and without a full-size product."""
    letters = _AXES[: a.ndim]
    kept = "".join(letters[i] for i in keep)
    return xp.einsum(f"{letters},{letters}->{kept}", a, b)


def _work_dtype(xp, dtype):
    """float16 / bfloat16 are normalised in float32, as PyTorch's CPU kernels accumulate."""
    return xp.dtype(xp.float32) if dtype.itemsize < 4 else dtype


def _check_norm_input(input: Tensor, kernel: str, *params) -> None:
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype.legacy_name}'")
    dtype = input._data.dtype
    for p in params:
        if p is None or p._data.dtype == dtype:
            continue
        if not (dtype.itemsize < 4 and p._data.dtype.name == "float32"):
            raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


_SLAB = 1 << 17  # elements per slab: a slab and its temporaries stay in the caches


def _slabs(shape: tuple, axis: int, plain: bool) -> list:
    """Index tuples cutting ``shape`` along ``axis`` into cache-sized slabs (one slab, the
    whole array, for CuPy and ember.compile's recorded arrays, whose replay does not carry
    writes through views)."""
    size = math.prod(shape)
    if not plain or size == 0 or size <= _SLAB:
        return [Ellipsis]
    per = max(1, _SLAB * shape[axis] // size)
    lead = (slice(None),) * axis
    return [lead + (slice(s, s + per),) for s in range(0, shape[axis], per)]


def _run_slabs(work, slabs: list, size: int) -> list:
    """``work(index)`` for every slab, shared among ember's intra-op threads; the results in
    slab order (so that sums of partial results do not depend on the threads)."""
    threads = _backend.get_num_threads() if size >= _backend.PARALLEL_MIN_ELEMENTS else 1
    if threads < 2 or len(slabs) < 2:
        return [work(index) for index in slabs]

    def span(part):
        with errors_ignored():  # the caller's errstate does not reach the threads
            return [work(index) for index in part]

    step = -(-len(slabs) // threads)
    parts = [slabs[i : i + step] for i in range(0, len(slabs), step)]
    return [r for part in _backend.run_spans(span, [(p,) for p in parts], blas=False) for r in part]


def _pick(array, index):
    """``array[index]`` for arrays that vary along the slab axis; others (size-1 there, or
    None) broadcast against every slab as they are."""
    if array is None or index is Ellipsis:
        return array
    axis = len(index) - 1
    return array[index] if array.shape[axis] != 1 else array


def _normalize_slab(xp, x, out, mean, var, rstd, w, b, layout: _Layout, eps, batch_stats):
    """One slab of the forward: statistics into ``mean``/``var``/``rstd`` (when taken from
    the batch), then ``out = (x - mean) · rstd · w + b``."""
    if batch_stats:
        count = layout.count
        if count == 0:  # PyTorch: mean 0 and a NaN 1/std over nothing
            mean[...] = 0
            var[...] = xp.nan
        else:
            xp.mean(x, axis=layout.stats, keepdims=True, out=mean)
        xp.subtract(x, mean, out=out)
        if count:
            squares = _sum_of_products(xp, out, out, layout.others).reshape(var.shape)
            xp.divide(squares, count, out=var)
        xp.add(var, eps, out=rstd)
        xp.sqrt(rstd, out=rstd)
        xp.divide(1, rstd, out=rstd)
    else:
        xp.subtract(x, mean, out=out)
    out *= rstd
    if w is not None:
        out *= w
    if b is not None:
        out += b


def _backward_slab(xp, g, x, mean, rstd, w, gx, layout: _Layout, need, batch_stats):
    """One slab of the backward: the input's gradient into ``gx``; returns the slab's
    (weight, bias) gradient sums over its part of the parameters' summed axes."""
    xhat = xp.subtract(x, mean)
    xhat *= rstd
    gw = _sum_of_products(xp, g, xhat, layout.params) if need[1] else None
    gb = g.sum(axis=layout.param_sums) if need[2] else None
    if need[0]:
        if not batch_stats:  # d/dx (x - μ)·r·w = r·w for constant μ, r
            xp.multiply(g, rstd * w if w is not None else rstd, out=gx)
        else:
            # dx = r (gy - mean(gy) - x̂ mean(gy x̂)), gy = g·w, means over the statistics
            if w is not None:
                xp.multiply(g, w, out=gx)
            else:
                gx[...] = g
            n = max(layout.count, 1)
            mean_gy = gx.sum(axis=layout.stats, keepdims=True)
            mean_gy /= n
            mean_gy_xhat = _sum_of_products(xp, gx, xhat, layout.others).reshape(mean_gy.shape)
            mean_gy_xhat /= n
            xhat *= mean_gy_xhat
            xhat += mean_gy
            gx -= xhat
            gx *= rstd
    return gw, gb


def _param_totals(parts: list, layout: _Layout, axis: int, xp):
    """Gradient sums of the slabs to one array: added when the slab axis is summed over,
    else laid side by side along it."""
    if parts[0] is None:
        return None
    if len(parts) == 1:
        return parts[0]
    if axis in layout.param_sums:
        total = parts[0].copy()
        for p in parts[1:]:
            total += p
        return total
    position = layout.params.index(axis)
    return xp.concatenate(parts, axis=position)


class _FusedNormBackward(Node):
    """The backward of a fused norm over (input, weight, bias); subclasses carry PyTorch's
    names. Attributes: ``layout``, ``eps``, ``mean`` and ``rstd`` (canonical arrays of the
    working dtype), ``batch_stats`` (False: the statistics were constants, batch norm in
    evaluation) and ``affine_shape``."""

    def backward(self, g):
        x, weight = self.unpack_saved()
        edges = self._edges
        need = [e is not None for e in edges] + [False] * (3 - len(edges))
        if grad_state.enabled:  # create_graph: the closed form in ember ops
            return self._graph_backward(g, x, weight, need)
        return self._array_backward(g, x, weight, need)

    def _array_backward(self, g, x, weight, need):
        lay = self.layout
        mean, rstd = self.mean, self.rstd
        work = mean.dtype
        xp = array_module(mean)
        gd = g._data.astype(work, copy=False).reshape(lay.shape)
        xd = x._data.astype(work, copy=False).reshape(lay.shape)
        w = _param_array(weight, lay, work)
        gx = xp.empty(lay.shape, work) if need[0] else None
        plain = is_plain_numpy(gd) and is_plain_numpy(xd)
        slabs = _slabs(lay.shape, self.slab_axis, plain)

        def slab(i):
            picked = (_pick(a, i) for a in (gd, xd, mean, rstd, w, gx))
            return _backward_slab(xp, *picked, lay, need, self.batch_stats)

        with _backend.errstate(xp, all="ignore"):
            parts = _run_slabs(slab, slabs, xd.size)
        gw = _param_totals([p[0] for p in parts], lay, self.slab_axis, xp)
        gb = _param_totals([p[1] for p in parts], lay, self.slab_axis, xp)
        if gw is not None:
            gw = wrap(gw.reshape(self.affine_shape).astype(weight._data.dtype, copy=False))
        if gb is not None:
            gb = wrap(gb.reshape(self.affine_shape).astype(self.bias_dtype, copy=False))
        if gx is not None:
            gx = wrap(gx.reshape(x._data.shape).astype(x._data.dtype, copy=False))
        return gx, gw, gb

    def _graph_backward(self, g, x, weight, need):
        lay = self.layout
        work = from_numpy_dtype(self.mean.dtype)
        xc, gc = x.reshape(lay.shape), g.reshape(lay.shape)
        if xc.dtype != work:
            xc, gc = xc.to(work), gc.to(work)
        if self.batch_stats:
            centred = xc - xc.mean(lay.stats, keepdim=True)
            rstd = ((centred * centred).mean(lay.stats, keepdim=True) + self.eps).rsqrt()
            xhat = centred * rstd
        else:
            rstd = wrap(self.rstd)
            xhat = (xc - wrap(self.mean)) * rstd
        gx = gw = gb = None
        if need[0]:
            gy = gc
            if weight is not None:
                gy = gc * weight.to(work).reshape(lay.param_shape)
            if self.batch_stats:
                gy = (
                    gy
                    - gy.mean(lay.stats, keepdim=True)
                    - xhat * (gy * xhat).mean(lay.stats, keepdim=True)
                )
            gx = (gy * rstd).reshape(x.shape).to(x.dtype)
        if need[1]:
            gw = (gc * xhat).sum(lay.param_sums).reshape(self.affine_shape).to(weight.dtype)
        if need[2]:
            gb = gc.sum(lay.param_sums).reshape(self.affine_shape)
            gb = gb.to(from_numpy_dtype(self.bias_dtype))
        return gx, gw, gb


class NativeLayerNormBackward0(_FusedNormBackward):
    torch_saved = {
        "bias": ("tensor", lambda node: node.saved_bias),
        "input": 0,
        "normalized_shape": "affine_shape",
        "result1": ("tensor", lambda node: wrap(node.mean)),
        "result2": ("tensor", lambda node: wrap(node.rstd)),
        "weight": 1,
    }
    saved_bias = None

    def _array_backward(self, g, x, weight, need):
        kernels = _layer_norm_kernels(x._data, g._data, weight)
        if kernels is None or self.mean.dtype != x._data.dtype:
            return super()._array_backward(g, x, weight, need)
        shape, xp = self.layout.shape, array_module(x._data)
        gx, gw, gb = _kernel_call(
            xp,
            _KernelCall(kernels.layer_norm_backward),
            xp.ascontiguousarray(g._data).reshape(shape),
            xp.ascontiguousarray(x._data).reshape(shape),
            self.mean,
            self.rstd,
            None if weight is None else weight._data,
            # a recorded call returns arrays only: the input gradient is then always made
            need[0] or _recorder(xp) is not None,
        )
        return (
            wrap(gx.reshape(x._data.shape)) if need[0] else None,
            wrap(gw.reshape(self.affine_shape)) if need[1] else None,
            wrap(gb.reshape(self.affine_shape)) if need[2] else None,
        )


def _layer_norm_kernels(data, *others):
    """ember._kernels.layernorm_jit for float32/float64 NumPy arrays (or ember.compile's
    recording of them) of one dtype with rows to normalise, when compiled kernels are on; else
    None (the NumPy path)."""
    if not (is_plain_numpy(data) or _recorder(array_module(data)) is not None):
        return None
    if not data.size or data.dtype.char not in "fd":  # float32, float64
        return None
    for other in others:
        array = getattr(other, "_data", other)
        if array is not None and (type(array) is not type(data) or array.dtype != data.dtype):
            return None
    return jit.module("layernorm_jit", data.size)


class NativeBatchNormBackward0(_FusedNormBackward):
    torch_saved = {
        "eps": "eps",
        "input": 0,
        "result1": (
            "tensor",
            lambda node: wrap(node.mean.reshape(-1)) if node.batch_stats else None,
        ),
        "result2": (
            "tensor",
            lambda node: wrap(node.rstd.reshape(-1)) if node.batch_stats else None,
        ),
        "running_mean": ("tensor", lambda node: node.running[0]),
        "running_var": ("tensor", lambda node: node.running[1]),
        "training": "batch_stats",
        "weight": 1,
    }
    running = (None, None)  # torch saves the running statistics; batch_norm notes them here

    def _array_backward(self, g, x, weight, need):
        kernels = _batch_norm_kernels(x._data, g._data, weight, self.mean)
        if kernels is None or self.layout.shape[2] < kernels.SHORT_ROWS:
            return super()._array_backward(g, x, weight, need)
        shape = self.layout.shape
        w = None if weight is None else weight._data
        gx, gw, gb = _kernel_call(
            array_module(x._data),
            _KernelCall(kernels.batch_norm_backward),
            g._data.reshape(shape),
            x._data.reshape(shape),
            self.mean,
            self.rstd,
            w,
            self.batch_stats,
            True,  # the input gradient is always made: one array count, whatever is wanted
        )
        return (
            wrap(gx.reshape(x._data.shape)) if need[0] else None,
            wrap(gw.reshape(self.affine_shape)) if need[1] else None,
            wrap(gb.reshape(self.affine_shape)) if need[2] else None,
        )


def _norm_kernels(module: str, data, *others):
    """The kernel module ``ember._kernels.<module>`` when compiled kernels are on and every
    array is a float32/float64 NumPy array (or ember.compile's recording of one) of one
    dtype, else None (the NumPy path; small norms keep to it too)."""
    recording = _recorder(array_module(data)) is not None
    if not (is_plain_numpy(data) or recording) or not data.size:
        return None
    if data.dtype.name not in ("float32", "float64"):
        return None
    for other in others:
        array = getattr(other, "_data", other)
        if array is not None and (type(array) is not type(data) or array.dtype != data.dtype):
            return None
    return jit.module(module, data.size)


def _batch_norm_kernels(data, *others):
    return _norm_kernels("normalization_jit", data, *others)


def _batch_norm_compiled(kernels, input, layout, weight, bias, eps, stats=None):
    """Batch norm by the compiled kernel (``stats``: the evaluation mean and rstd); the same
    node and canonical statistics as :func:`_fused_norm`."""
    data = input._data
    shape = layout.shape
    xp = array_module(data)
    arrays = (
        data.reshape(shape),
        None if weight is None else weight._data,
        None if bias is None else bias._data,
        float(eps),
    )
    kept = layout.param_shape
    if stats is None:
        forward = _KernelCall(kernels.batch_norm_forward)
        out, mean, var, rstd = _kernel_call(xp, forward, *arrays)
        mean, var, rstd = mean.reshape(kept), var.reshape(kept), rstd.reshape(kept)
    else:  # only the output is new: the statistics are the caller's
        (mean, rstd), var = stats, None
        forward = _KernelCall(kernels.batch_norm_forward, keep=1)
        (out,) = _kernel_call(xp, forward, *arrays, mean, rstd)
    inputs = (input, weight, bias)
    out = out.reshape(data.shape)
    output = _fused_norm_result(
        NativeBatchNormBackward0, out, inputs, layout, eps, mean, rstd, stats, (shape[1],), 1
    )
    return output, mean, var, rstd


class NativeGroupNormBackward0(_FusedNormBackward):
    def _array_backward(self, g, x, weight, need):
        kernels = _group_norm_kernels(x._data, g._data, weight, self.mean)
        if kernels is None:
            return super()._array_backward(g, x, weight, need)
        n, group, width, size = self.layout.shape
        shape = (n, group * width, size)
        gx, gw, gb = _kernel_call(
            array_module(x._data),
            _KernelCall(kernels.group_norm_backward),
            g._data.reshape(shape),
            x._data.reshape(shape),
            self.mean.reshape(n, group),
            self.rstd.reshape(n, group),
            None if weight is None else weight._data,
            True,  # the input gradient is always made: one array count, whatever is wanted
        )
        return (
            wrap(gx.reshape(x._data.shape)) if need[0] else None,
            wrap(gw.reshape(self.affine_shape)) if need[1] else None,
            wrap(gb.reshape(self.affine_shape)) if need[2] else None,
        )


def _group_norm_kernels(data, *others):
    return _norm_kernels("groupnorm_jit", data, *others)


def _group_norm_compiled(kernels, input, layout, weight, bias, eps):
    """Group norm by the compiled kernel; the same node and canonical statistics (shaped
    (N, G, 1, 1)) as :func:`_fused_norm`."""
    data = input._data
    n, group, width, size = layout.shape
    forward = _KernelCall(kernels.group_norm_forward)
    out, mean, rstd = _kernel_call(
        array_module(data),
        forward,
        data.reshape(n, group * width, size),
        group,
        None if weight is None else weight._data,
        None if bias is None else bias._data,
        float(eps),
    )
    kept = (n, group, 1, 1)
    mean, rstd = mean.reshape(kept), rstd.reshape(kept)
    output = _fused_norm_result(
        NativeGroupNormBackward0,
        out.reshape(data.shape),
        (input, weight, bias),
        layout,
        eps,
        mean,
        rstd,
        None,
        (group * width,),
        0,
    )
    return output, mean, rstd


def _param_array(p: Tensor | None, layout: _Layout, work):
    return None if p is None else p._data.astype(work, copy=False).reshape(layout.param_shape)


def _fused_norm(node_cls, input, layout, weight, bias, eps, affine_shape, slab_axis, stats=None):
    """Normalise ``input`` over ``layout`` slab by slab along ``slab_axis`` (an axis the
    statistics do not span); ``stats`` = (mean, rstd) when they are given (batch norm in
    evaluation). Returns the output tensor and the canonical mean, var, rstd."""
    data = input._data
    xp = array_module(data)
    work = _work_dtype(xp, data.dtype)
    x = data.astype(work, copy=False).reshape(layout.shape)
    out = xp.empty(layout.shape, work)
    if stats is None:
        kept = tuple(1 if i in layout.stats else s for i, s in enumerate(layout.shape))
        mean, var, rstd = (xp.empty(kept, work) for _ in range(3))
    else:
        (mean, rstd), var = stats, None
    w, b = _param_array(weight, layout, work), _param_array(bias, layout, work)
    slabs = _slabs(layout.shape, slab_axis, is_plain_numpy(x))

    def slab(i):
        picked = (_pick(a, i) for a in (x, out, mean, var, rstd, w, b))
        _normalize_slab(xp, *picked, layout, eps, stats is None)

    with _backend.errstate(xp, all="ignore"):
        _run_slabs(slab, slabs, x.size)
    out = out.reshape(data.shape).astype(data.dtype, copy=False)
    inputs = (input, weight, bias)
    output = _fused_norm_result(
        node_cls, out, inputs, layout, eps, mean, rstd, stats, affine_shape, slab_axis
    )
    return output, mean, var, rstd


def _fused_norm_result(
    node_cls, out, inputs, layout, eps, mean, rstd, stats, affine_shape, slab_axis
) -> Tensor:
    """A fused norm's output tensor and its node, with what the backward reads (``inputs``:
    the input, weight and bias; ``stats``: the statistics given, None for the batch's)."""
    input, weight, bias = inputs
    return result(
        node_cls,
        out,
        inputs,
        (input, weight),
        layout=layout,
        eps=eps,
        mean=mean,
        rstd=rstd,
        batch_stats=stats is None,
        affine_shape=affine_shape,
        bias_dtype=bias._data.dtype if bias is not None else None,
        slab_axis=slab_axis,
    )


def layer_norm_rows(xp, rows, weight, bias, eps: float, out=None):
    """Layer norm over the rows of a (rows, width) float32/float64 array, as the NumPy path
    of :func:`native_layer_norm` computes it (no node, no statistics kept): for callers that
    run whole blocks on arrays (the encoder layer's inference path); ``weight``, ``bias``:
    (width,) arrays or None; ``out``: a (rows, width) array to write to."""
    layout = _Layout(rows.shape, (1,), (1,))
    if out is None:
        out = xp.empty(rows.shape, rows.dtype)
    stats = [xp.empty((rows.shape[0], 1), rows.dtype) for _ in range(3)]
    params = (None if p is None else p.reshape(1, -1) for p in (weight, bias))
    _normalize_slab(xp, rows, out, *stats, *params, layout, eps, True)
    return out


def _statistic(array, shape, dtype) -> Tensor:
    return wrap(array.reshape(shape).astype(dtype, copy=False))


def native_layer_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None,
    bias: Tensor | None,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """Layer norm over the trailing ``normalized_shape`` dims as one node; returns
    ``(output, mean, rstd)`` with the statistics shaped ``input.shape[:-k] + (1,) * k``.

    >>> out, mean, rstd = ember.native_layer_norm(ember.tensor([[1.0, 3.0]]), (2,), None, None, 0.0)
    >>> out
    tensor([[-1.,  1.]])
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            "one element, but got normalized_shape = []"
        )
    k = len(shape)
    if input.dim() < k or tuple(input.shape[input.dim() - k :]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*, "
            f"{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {list(p.shape)} and normalized_shape = {list(shape)}"
            )
    _check_norm_input(input, "LayerNormKernelImpl", weight, bias)
    lead = tuple(input.shape[: input.dim() - k])
    stats_shape = lead + (1,) * k
    cupy = _backend._cupy
    if cupy is not None and input._data.__class__ is cupy.ndarray:
        from . import cuda_fused as fused_ops

        fused = fused_ops.layer_norm(input, shape, weight, bias, eps)
        if fused is not None:  # one CUDA kernel per row
            out, mean, rstd = fused
            dtype = input._data.dtype
            return out, _statistic(mean, stats_shape, dtype), _statistic(rstd, stats_shape, dtype)
    layout = _Layout((math.prod(lead), math.prod(shape)), (1,), (1,))
    kernels = _layer_norm_kernels(input._data, weight, bias)
    if kernels is not None:  # one compiled pass per row (the statistics in float64)
        rows = array_module(input._data).ascontiguousarray(input._data).reshape(layout.shape)
        params = (None if p is None else p._data for p in (weight, bias))
        out, mean, rstd = _kernel_call(
            array_module(rows), _KernelCall(kernels.layer_norm_forward), rows, *params, eps
        )
        mean, rstd = mean.reshape(-1, 1), rstd.reshape(-1, 1)
        inputs = (input, weight, bias)
        out = _fused_norm_result(
            NativeLayerNormBackward0,
            out.reshape(input._data.shape),
            inputs,
            layout,
            eps,
            mean,
            rstd,
            None,  # the statistics are the rows' own
            shape,
            0,
        )
    else:
        out, mean, _, rstd = _fused_norm(
            NativeLayerNormBackward0, input, layout, weight, bias, eps, shape, 0
        )
    if out._grad_fn is not None and bias is not None:  # torch saves the bias too
        out._grad_fn.saved_bias = bias
    dtype = input._data.dtype
    return out, _statistic(mean, stats_shape, dtype), _statistic(rstd, stats_shape, dtype)


def _check_channel_param(name: str, p: Tensor | None, channels: int) -> None:
    if p is not None and p.numel() != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {p.numel()}")


def native_batch_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """Batch norm of (N, C, *) input over all dims but C as one node; returns ``(output,
    save_mean, save_invstd)`` (empty statistics in evaluation).

    In training the running statistics are updated in place with the batch mean and the
    unbiased batch variance: ``running = (1 - momentum) * running + momentum * batch``.
    """
    if input.dim() < 2:
        from .._tensor import _wrap_dim

        _wrap_dim(1, input.dim(), "batch_norm")
    channels = input.shape[1]
    for name, p in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        _check_channel_param(name, p, channels)
    _check_norm_input(input, "batch_norm", weight, bias, running_mean, running_var)
    shape = tuple(input.shape)
    layout = _Layout((shape[0], channels, math.prod(shape[2:])), (0, 2), (1,))
    data = input._data
    xp = array_module(data)
    dtype = data.dtype
    kernels = _batch_norm_kernels(data, weight, bias)
    if kernels is not None and layout.shape[2] < kernels.SHORT_ROWS:
        kernels = None
    if training:
        if kernels is not None and layout.count:  # statistics and output in three passes
            out, mean, var, rstd = _batch_norm_compiled(kernels, input, layout, weight, bias, eps)
        else:
            out, mean, var, rstd = _fused_norm(
                NativeBatchNormBackward0, input, layout, weight, bias, eps, (channels,), 1
            )
        if layout.count:
            _update_running(running_mean, running_var, mean, var, layout.count, momentum)
        _note_running(out, running_mean, running_var)
        return out, _statistic(mean, (channels,), dtype), _statistic(rstd, (channels,), dtype)
    for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
        if stat is None:
            raise RuntimeError(f"{name} must be defined in evaluation mode")
    work = _work_dtype(xp, dtype)
    mean = running_mean._data.astype(work, copy=False).reshape(layout.param_shape)
    rstd = xp.sqrt(running_var._data.astype(work) + work.type(eps)).reshape(layout.param_shape)
    xp.divide(1, rstd, out=rstd)
    if kernels is not None and mean.dtype == dtype:
        out, *_ = _batch_norm_compiled(kernels, input, layout, weight, bias, eps, (mean, rstd))
        _note_running(out, running_mean, running_var)
        return out, wrap(xp.empty(0, dtype=dtype)), wrap(xp.empty(0, dtype=dtype))
    out, *_ = _fused_norm(
        NativeBatchNormBackward0, input, layout, weight, bias, eps, (channels,), 1, (mean, rstd)
    )
    _note_running(out, running_mean, running_var)
    empty = wrap(xp.empty(0, dtype=dtype))
    return out, empty, wrap(xp.empty(0, dtype=dtype))


def _note_running(out: Tensor, running_mean, running_var) -> None:
    """Keep the running statistics on the node, where torch's saves them (_saved_running_*)."""
    node = out._grad_fn
    if node is not None:
        node.running = (running_mean, running_var)


def _update_running(running_mean, running_var, mean, var, count: int, momentum: float) -> None:
    from ..autograd.grad_mode import no_grad

    with no_grad():
        if running_mean is not None:
            batch = wrap(mean.reshape(-1).astype(running_mean._data.dtype, copy=False))
            running_mean.mul_(1 - momentum).add_(batch, alpha=momentum)
        if running_var is not None:
            with _backend.errstate(array_module(var), divide="ignore", invalid="ignore"):
                unbiased = var.reshape(-1) * (count / (count - 1) if count > 1 else math.nan)
            batch = wrap(unbiased.astype(running_var._data.dtype, copy=False))
            running_var.mul_(1 - momentum).add_(batch, alpha=momentum)


def native_group_norm(
    input: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    N: int,
    C: int,
    HxW: int,
    group: int,
    eps: float,
) -> tuple[Tensor, Tensor, Tensor]:
    """Group norm of (N, C, *) input (C split into ``group`` groups) as one node; returns
    ``(output, mean, rstd)`` with the statistics shaped (N, group)."""
    if input.numel() != N * C * HxW:
        raise RuntimeError(
            f"Expected the input to have {N * C * HxW} elements (N={N}, C={C}, HxW={HxW}), "
            f"got {input.numel()}"
        )
    _check_norm_input(input, "GroupNormKernelImpl", weight, bias)
    layout = _Layout((N, group, C // group, HxW), (2, 3), (1, 2))
    kernels = _group_norm_kernels(input._data, weight, bias)
    if kernels is not None:  # statistics and output in three passes per group
        out, mean, rstd = _group_norm_compiled(kernels, input, layout, weight, bias, eps)
    else:
        out, mean, _, rstd = _fused_norm(
            NativeGroupNormBackward0, input, layout, weight, bias, eps, (C,), 0
        )
    dtype = input._data.dtype
    stats = (mean.reshape(N, group).astype(dtype), rstd.reshape(N, group).astype(dtype))
    # recorded on weight and bias too: torch marks the statistics as requiring grad when any
    # input does (they take no gradient from weight or bias)
    inputs = (input, weight, bias)
    mean, rstd = record_outputs(NativeGroupNormStatsBackward, stats, inputs, (input,))
    return out, mean, rstd


class NativeGroupNormStatsBackward(MultiOutputNode):
    """The statistics of native_group_norm, differentiable as torch's are: over each group
    of M elements, d mean/dx = 1/M and d rstd/dx = -rstd³ (x - mean)/M."""

    torch_name = "NativeGroupNormBackward0"

    def backward(self, g_mean, g_rstd):
        (x,) = self.unpack_saved()
        mean, rstd = self.saved_outputs()
        if not self.needs(0):
            return None, None, None
        n, group = mean.shape
        groups = x.reshape(n, group, x.numel() // (n * group) if n * group else 0)
        m = groups.shape[-1]
        grad = None
        if g_mean is not None:
            grad = (g_mean / m).unsqueeze(-1).expand(groups.shape)
        if g_rstd is not None:
            scale = (g_rstd * -(rstd**3) / m).unsqueeze(-1)
            part = scale * (groups - mean.unsqueeze(-1))
            grad = part if grad is None else grad + part
        return grad.reshape(x.shape), None, None


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each (sample, channel) plane of (N, C, *S) over its spatial dims.

    With running stats and ``use_input_stats``, they are updated with the batch average of the
    per-instance statistics (unbiased variance), as PyTorch does."""
    from ..autograd.grad_mode import no_grad

    if input.dim() < 2:
        raise ValueError(f"instance_norm expects at least 2D input, got {input.dim()}D")
    require_floating(input, "instance_norm")
    shape = tuple(input.shape)
    n, channels = shape[:2]
    if use_input_stats:
        if math.prod(shape[2:]) <= 1:
            raise ValueError(
                f"Expected more than 1 spatial element when training, got input size {list(shape)}"
            )
    elif running_mean is None or running_var is None:
        raise ValueError(
            "Expected running_mean and running_var to be defined when use_input_stats is false"
        )
    # batch norm over (1, N·C, *S): each (sample, channel) plane is one channel, with the
    # parameters and running statistics repeated per sample (PyTorch does the same)
    repeat = lambda t: t.repeat(n) if t is not None else None  # noqa: E731
    with no_grad():
        stats = [repeat(running_mean), repeat(running_var)]
    out, _, _ = native_batch_norm(
        input.reshape((1, n * channels) + shape[2:]),
        repeat(weight),
        repeat(bias),
        *stats,
        use_input_stats,
        momentum,
        eps,
    )
    if use_input_stats:
        with no_grad():
            for running, repeated in zip((running_mean, running_var), stats):
                if running is not None and n:
                    running.copy_(repeated.reshape(n, channels).mean(0))
    return out.reshape(shape)


def rms_norm(
    input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None
) -> Tensor:
    """x / sqrt(mean(x²) + eps) over the trailing ``normalized_shape`` dims, times ``weight``;
    ``eps`` defaults to the machine epsilon of the dtype computed in. Half types are computed
    in float32 (weight included) and rounded once, as torch does."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            "one element, but got normalized_shape = []"
        )
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(
            "Expected weight to be of same shape as normalized_shape, but got weight of shape "
            f"{list(weight.shape)} and normalized_shape = {list(shape)}"
        )
    if tuple(input.shape[input.dim() - len(shape) :]) != shape or input.dim() < len(shape):
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"
        )
    require_floating(input, "rms_norm")
    half = input.dtype.name in ("float16", "bfloat16")
    x = input.float() if half else input
    if eps is None:
        eps = float(array_module(x._data).finfo(x._data.dtype).eps)
    dims = tuple(range(input.dim() - len(shape), input.dim()))
    out = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * (weight.float() if half else weight)
    return out.to(input.dtype) if half else out


def _channel_window_matrix(channels: int, size: int, xp, dtype):
    """(C, C) band: channel c averages squares of channels c - size//2 .. c + (size-1)//2,
    dividing by ``size`` whether or not the window runs off the ends (zero padding)."""
    c = xp.arange(channels)
    offset = c[None, :] - c[:, None]
    band = (offset >= -(size // 2)) & (offset <= (size - 1) // 2)
    return xp.asarray(band / size, dtype=dtype)


def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """x / (k + alpha · mean of x² over ``size`` neighbouring channels)^beta (AlexNet)."""
    if input.dim() < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)"
        )
    if not (input.is_floating_point() or input.is_complex()):
        return _integer_local_response_norm(input, size, alpha, beta, k)
    require_floating(input, "local_response_norm")
    if input.numel() == 0:
        return input
    xp = array_module(input._data)
    band = wrap(_channel_window_matrix(input.shape[1], size, xp, input._data.dtype))
    squares = (input * input).movedim(1, -1)
    div = (squares @ band.mT).movedim(-1, 1)
    return input / (div * alpha + k).pow(beta)


def _cross_map_band(channels: int, size: int, xp):
    """(C, C) 0/1 mask of the channels each output channel sums in the legacy Lua-Torch
    CrossMapLRN2d. Its running window adds channel c + pre - 1 and drops channel c - pre only
    once c > pre, so row c holds channels c - pre + 1 .. c + pre - 1 and channel 0 is never
    dropped (windows are not centred; kept for compatibility)."""
    pre = int((size - 1) / 2 + 1)
    c = xp.arange(channels)[:, None]
    j = xp.arange(channels)[None, :]
    return (j <= c + pre - 1) & ((j >= c - pre + 1) | (j == 0))


def cross_map_lrn2d(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """Lua-Torch's cross-channel LRN of (N, C, H, W) input: x · (k + alpha/size · Σ x²)^-beta.

    Values match PyTorch's CrossMapLRN2d; the gradient is the exact one of this forward
    (PyTorch's hand-written backward for the layer does not pass gradcheck)."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    require_floating(input, "cross_map_lrn2d")
    xp = array_module(input._data)
    band = xp.where(_cross_map_band(input.shape[1], size, xp), alpha / size, 0.0)
    weights = wrap(band.astype(input._data.dtype))
    sums = ((input * input).movedim(1, -1) @ weights.mT).movedim(-1, 1)
    return input * (sums + k).pow(-beta)


def _integer_local_response_norm(input: Tensor, size: int, alpha, beta, k) -> Tensor:
    """Integer input as torch's composite computes it: the squares averaged over channel
    windows by the integer average pooling (window sums divided toward zero), then x / (k +
    alpha · that)^beta in the default float dtype."""
    squares = (input * input).unsqueeze(1)
    if input.dim() == 3:
        squares = pad(squares, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(squares, (size, 1), stride=1).squeeze(1)
    else:
        n, c = input.shape[:2]
        squares = squares.reshape(n, 1, c, input.shape[2], -1)
        squares = pad(squares, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool_nd(squares, (size, 1, 1), 1, 0, False, True, None, 3, "avg_pool3d")
        div = div.squeeze(1).reshape(input.shape)
    return input / (div * alpha + k).pow(beta)


# torch.native_batch_norm takes out= (three tensors); ember's root reaches it lazily, past the
# root's out= installation, so it carries its own
native_batch_norm = with_out(native_batch_norm, "native_batch_norm")
