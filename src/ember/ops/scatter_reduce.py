"""scatter_reduce and index_reduce: reduce source values into positions of a copy of input.

Every output position reduces its contributors: itself (unless ``include_self=False``) and the
source values scattered onto it. Gradients follow PyTorch's rules: sum and mean spread the
gradient (divided by the count for mean), prod gives each contributor the product of the
others (exact with zeros), amax/amin share the gradient evenly among the contributors that
equal the result.
"""

from __future__ import annotations

import builtins

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.node import Node
from ._dispatch import array_module, result, wrap, wrap_dim
from .elementwise import where
from .indexing import _along_dim_key, _check_index_tensor, _embed, _src_part

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(xp, reduce: str, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind not in "iub":  # floating, ml_dtypes' bfloat16 (kind "V") included
        return -xp.inf if reduce == "amax" else xp.inf
    info = xp.iinfo(dtype) if dtype.kind in "iu" else None
    if info is None:
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


class ScatterReduceBackward0(Node):
    def backward(self, g):
        (input, src, _index) = self.unpack_saved()  # the index is checked, not read
        out = self.saved_output()
        d, index, reduce, include_self = self.dim, self.index, self.reduce, self.include_self
        src = _src_part(src, index)
        touched = self.touched  # bool array: positions that received a source value
        keep_self = wrap(~touched) if not include_self else None
        if reduce == "sum":
            g_self = g if keep_self is None else g * keep_self
            g_src = g.gather(d, index)
        elif reduce == "mean":
            scaled = g / self.counts
            g_self = scaled if keep_self is None else g * keep_self
            g_src = scaled.gather(d, index)
        elif reduce == "prod":
            # the product of the other contributors, without dividing by zero
            zeros_here = self.zero_counts
            others_self = _product_of_others(input, out, self.nonzero_products, zeros_here)
            g_self = g * others_self
            if keep_self is not None:
                g_self = where(wrap(touched), g_self * 0, g)
            out_at = out.gather(d, index)
            others_src = _product_of_others(
                src, out_at, self.nonzero_products.gather(d, index), zeros_here.gather(d, index)
            )
            g_src = g.gather(d, index) * others_src
        else:  # amax / amin: evenly over the contributors equal to the result
            hit_self = (input == out).to(g.dtype)
            if keep_self is not None:
                hit_self = hit_self * wrap((~touched).astype(hit_self._data.dtype))
            hit_src = (src == out.gather(d, index)).to(g.dtype)
            count = hit_self.scatter_add(d, index, hit_src)
            share = g / count
            g_self = share * hit_self
            g_src = share.gather(d, index) * hit_src
        edges = self._edges
        return (
            g_self if edges[0] is not None else None,
            _embed(g_src, self.src_shape) if edges[1] is not None else None,
        )


def _product_of_others(values: Tensor, product: Tensor, nonzero_product: Tensor, zero_count):
    nonzero = values != 0
    safe = where(nonzero, values, 1.0)
    return where(
        nonzero,
        where(zero_count == 0, product / safe, product * 0),
        where(zero_count == 1, nonzero_product, product * 0),
    )


def scatter_reduce(
    input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *, include_self: bool = True
) -> Tensor:
    """Reduce ``src`` into ``input`` at ``index`` along ``dim`` with sum/prod/mean/amax/amin."""
    if reduce not in REDUCTIONS:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    d = wrap_dim(dim, builtins.max(input._data.ndim, 1), "scatter_reduce")
    if src.dtype != input.dtype:
        raise RuntimeError("scatter_reduce(): Expected self.dtype to be equal to src.dtype")
    _check_index_tensor("scatter_reduce", input, d, index, src)
    if index._data.size == 0:  # nothing is reduced (and torch checks nothing more)
        return input.clone()
    if input._data.ndim == 0:  # one element: reduce into a 1-d view of it
        flat = scatter_reduce(
            input.reshape(1),
            0,
            index.reshape(-1),
            src.reshape(-1),
            reduce,
            include_self=include_self,
        )
        return flat.reshape(())
    if index._data.ndim == 0:  # a 0-d index into a 1-d tensor names one element
        return scatter_reduce(
            input, 0, index.reshape(1), src.reshape(-1)[:1], reduce, include_self=include_self
        )
    xp = array_module(input._data)
    data = input._data
    out = data.copy()
    key = _along_dim_key(xp, index._data, d) if out.ndim else ()
    part = _src_part(src, index)._data
    touched = xp.zeros(data.shape, dtype=bool)
    touched[key] = True
    if not include_self:
        out[touched] = _identity(xp, reduce, out.dtype)
    counts = None
    if reduce in ("sum", "mean"):
        xp.add.at(out, key, part)
        if reduce == "mean":
            counts = xp.full(data.shape, 1 if include_self else 0, dtype=data.dtype)
            xp.add.at(counts, key, 1)
            counts = xp.maximum(counts, 1)
            floating = out.dtype.kind not in "iub"  # bfloat16's kind is "V"
            out = out / counts if floating else xp.floor_divide(out, counts)
            out = out.astype(data.dtype, copy=False)
    elif reduce == "prod":
        xp.multiply.at(out, key, part)
    elif reduce == "amax":
        xp.maximum.at(out, key, part)
    else:
        xp.minimum.at(out, key, part)
    attrs = dict(
        dim=d,
        index=index,
        reduce=reduce,
        include_self=include_self,
        touched=touched,
        src_shape=src._data.shape,
    )
    if counts is not None:
        attrs["counts"] = wrap(counts)
    if reduce == "prod" and data.dtype.kind not in "iub":
        # per position: how many contributors are zero, and the product of the others
        self_zero = data == 0
        if not include_self:
            self_zero &= ~touched
        zero_count = self_zero.astype(dt.int64.np)
        xp.add.at(zero_count, key, (part == 0).astype(dt.int64.np))
        excluded = self_zero | touched if not include_self else self_zero
        nonzero = xp.where(excluded, 1, data).astype(data.dtype)
        xp.multiply.at(nonzero, key, xp.where(part == 0, 1, part).astype(data.dtype))
        attrs["zero_counts"] = wrap(zero_count)
        attrs["nonzero_products"] = wrap(nonzero)
    if not dt.is_floating_array_dtype(data.dtype):  # (bfloat16 is kind "V")
        return wrap(out)
    return result(
        ScatterReduceBackward0, out, (input, src), (input, src, index), save_output=True, **attrs
    )


def index_reduce(
    input: Tensor,
    dim: int,
    index: Tensor,
    source: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """Reduce the slices of ``source`` into the slices of ``input`` picked by ``index``
    (``prod``, ``mean``, ``amax`` or ``amin``)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    d = wrap_dim(dim, builtins.max(input.dim(), 1), "index_reduce")
    if input.dim() == 0:  # torch treats a 0-d input (and source) as one of shape (1,)
        flat_source = source.reshape(1) if source.dim() == 0 else source
        reduced = index_reduce(
            input.reshape(1), 0, index, flat_source, reduce, include_self=include_self
        )
        return reduced.reshape(())
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index should have dimension 1 or 0 (got {index.dim()})")
    n = source.shape[d] if source.dim() else 1
    if index.numel() != n:
        raise RuntimeError(
            f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim) ({n})"
        )
    shape = [1] * builtins.max(source.dim(), 1)
    shape[d] = -1
    expanded = index.reshape(shape).expand(tuple(source.shape)).contiguous()
    return scatter_reduce(input, d, expanded, source, reduce, include_self=include_self)
