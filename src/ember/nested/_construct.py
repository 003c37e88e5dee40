"""The public constructors: ``nested_tensor``, ``as_nested_tensor``,
``nested_tensor_from_jagged``, ``narrow`` and ``masked_select``."""

from __future__ import annotations

import ember

from .._tensor import Tensor
from ._build import jagged_from_list, offsets_of, strided_from_list
from ._layout import jagged, strided
from ._tensor import NestedTensor, make_jagged, make_strided


def _check_layout(layout, what: str = "nested tensors"):
    if layout is None:
        return strided
    if layout != strided and layout != jagged:
        raise RuntimeError(f"Specified layout is unsupported for {what}: {layout!r}")
    return layout


def _cast(t: Tensor, dtype, device) -> Tensor:
    if dtype is None and device is None:
        return t
    return t.to(device=device, dtype=dtype)


def _check_components(tensors: list, layout) -> None:
    if layout == jagged:
        if not tensors:
            raise RuntimeError("Cannot construct a nested tensor from an empty tensor list")
        if any(t.dim() != tensors[0].dim() for t in tensors):
            raise RuntimeError(
                "When constructing a nested tensor, all tensors in list must have the same dim"
            )
        if tensors[0].dim() == 0:
            raise RuntimeError("Cannot construct a nested tensor from a list of zero-dim tensors")
        return
    for i, t in enumerate(tensors):
        if t.dim() != tensors[0].dim():
            raise RuntimeError(
                "All Tensors given to nested_tensor must have the same dimension. Found "
                f"dimension {t.dim()} for Tensor at index {i} and dimension {tensors[0].dim()} "
                "for Tensor at index 0."
            )


def _pack(tensors: list, layout, dtype, device):
    _check_components(tensors, layout)
    if layout == jagged:
        if dtype is None and any(t.dtype != tensors[0].dtype for t in tensors):
            raise RuntimeError(
                "When constructing a nested tensor, all tensors in list must have the same dtype"
            )
        return jagged_from_list([_cast(t, dtype, device) for t in tensors], ragged_axis=0)
    if tensors and dtype is None:
        dtype = tensors[0].dtype
    return strided_from_list([_cast(t, dtype, device) for t in tensors])


def nested_tensor(
    tensor_list,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> NestedTensor:
    """A nested tensor with no autograd history (a leaf) from a list of tensors or array-likes
    of one dimensionality; ``layout`` is ``ember.strided`` (default) or ``ember.jagged``.

    Example::
        >>> nt = ember.nested.nested_tensor([[1.0, 2.0], [3.0]], layout=ember.jagged)
        >>> nt.offsets()
        tensor([0, 2, 3])
    """
    layout = _check_layout(layout)
    tensors = [t if isinstance(t, Tensor) else ember.as_tensor(t) for t in tensor_list]
    with ember.no_grad():
        nt = _pack([t.detach() for t in tensors], layout, dtype, device)
        if len(tensors) == 1:  # a cat of one tensor may share its memory: copy, as torch
            nt._inner = nt._inner.clone()
            nt._vc = nt._inner._vc
    nt._inner.requires_grad_(requires_grad)
    return nt


def as_nested_tensor(ts, dtype=None, device=None, layout=None) -> NestedTensor:
    """A nested tensor that keeps the autograd history of ``ts``: a list or tuple of tensors,
    or one tensor whose first dimension is the batch.

    Example::
        >>> a = ember.ones(2, requires_grad=True)
        >>> nt = ember.nested.as_nested_tensor([a, ember.ones(3)])
        >>> nt.to_padded_tensor(0.0).sum().backward()
        >>> a.grad
        tensor([1., 1.])
    """
    is_list = isinstance(ts, (list, tuple)) and all(isinstance(t, Tensor) for t in ts)
    if not isinstance(ts, Tensor) and not is_list:
        raise TypeError(
            "as_nested_tensor(): Expected first argument to be a tensor or a list / tuple of "
            "tensors "
        )
    if isinstance(ts, NestedTensor):
        if layout is not None and layout != ts.layout:
            raise RuntimeError(
                "as_nested_tensor(): Converting between nested tensor layouts is not supported"
            )
        return ts if dtype is None and device is None else ts.to(device=device, dtype=dtype)
    if isinstance(ts, Tensor) and ts.dim() < 2:
        raise RuntimeError("as_nested_tensor(): Expected tensor argument to have dim() > 1")
    layout = _check_layout(layout)
    if isinstance(ts, Tensor):
        batch, rest = ts.shape[0], tuple(ts.shape[1:])
        if layout == strided:
            return make_strided(_cast(ts.reshape(-1), dtype, device), [rest] * batch)
        values = _cast(ts.contiguous().flatten(0, 1), dtype, device)
        return make_jagged(values, offsets_of([rest[0]] * batch, values.device), None, 1)
    return _pack(list(ts), layout, dtype, device)


def nested_tensor_from_jagged(
    values: Tensor,
    offsets: Tensor | None = None,
    lengths: Tensor | None = None,
    jagged_dim: int | None = None,
    min_seqlen: int | None = None,
    max_seqlen: int | None = None,
) -> NestedTensor:
    """A jagged nested tensor viewing ``values`` (the ragged dimension packed at
    ``jagged_dim - 1``), split by ``offsets`` (B + 1) and/or ``lengths`` (B).

    Example::
        >>> nt = ember.nested.nested_tensor_from_jagged(ember.ones(5, 2), ember.tensor([0, 2, 5]))
        >>> [t.shape[0] for t in nt.unbind()]
        [2, 3]
    """
    if offsets is None:
        if lengths is None:
            raise RuntimeError(
                "nested_tensor_from_jagged(): At least one of offsets or lengths is required."
            )
        offsets = ember.nn.functional.pad(lengths.cumsum(0), (1, 0))
        lengths = None
    if jagged_dim is None:
        jagged_dim = 1
    elif jagged_dim < 1:
        raise ValueError(f"Expected jagged_dim >=1, but got {jagged_dim}.")
    if values.dim() < jagged_dim:
        raise RuntimeError(
            f"nested_tensor_from_jagged(): values of {values.dim()} dimensions have no jagged "
            f"dimension {jagged_dim}"
        )
    if offsets.dim() != 1:
        raise RuntimeError("nested_tensor_from_jagged(): expected offsets to be 1-dimensional")
    return make_jagged(values.view(values.shape), offsets, lengths, jagged_dim)


def narrow(tensor: Tensor, dim: int, start, length, layout=strided) -> NestedTensor:
    """A nested tensor of ``tensor[i].narrow(dim - 1, start[i], length[i])``; ``start`` and
    ``length`` are ints or (for the jagged layout, a view of ``tensor``) tensors of shape B.

    Example::
        >>> base = ember.arange(12.0).reshape(3, 4)
        >>> nt = ember.nested.narrow(base, 1, ember.tensor([0, 1, 2]), ember.tensor([2, 2, 1]),
        ...                          layout=ember.jagged)
        >>> [t.tolist() for t in nt.unbind()]
        [[0.0, 1.0], [5.0, 6.0], [10.0]]
    """
    if not isinstance(start, (int, Tensor)):
        raise RuntimeError("start must be an integer or a tensor")
    if not isinstance(length, (int, Tensor)):
        raise RuntimeError("length must be an integer or a tensor")
    layout = _check_layout(layout, "nested narrow")
    if layout == strided:
        if isinstance(start, Tensor) or isinstance(length, Tensor):
            raise RuntimeError("start and length must be integers for the strided layout NT impl")
        if dim == 0:
            return as_nested_tensor(list(tensor.unbind(0)[start : start + length]))
        return strided_from_list([t.narrow(dim - 1, start, length) for t in tensor.unbind(0)])
    if dim != 1:
        raise RuntimeError("jagged layout only supports dim=1")
    batch, width = tensor.shape[0], tensor.shape[1]
    starts = [int(start)] * batch if isinstance(start, int) else start.tolist()
    lens = [int(length)] * batch if isinstance(length, int) else length.tolist()
    if len(starts) == 1:
        starts = starts * batch
    if len(lens) == 1:
        lens = lens * batch
    positions = [i * width + s for i, s in enumerate(starts)]
    positions.append(positions[-1] + lens[-1])
    device = tensor.device
    offsets = ember.tensor(positions, dtype=ember.int64, device=device)
    lengths = ember.tensor(lens, dtype=ember.int64, device=device)
    return make_jagged(tensor.flatten(0, 1), offsets, lengths, 1)


def masked_select(tensor: Tensor, mask: Tensor) -> NestedTensor:
    """A jagged nested tensor of the elements of ``tensor`` where ``mask`` holds, one
    component per row of the last dimension.

    Example::
        >>> t = ember.arange(6.0).reshape(2, 3)
        >>> nt = ember.nested.masked_select(t, t > 1)
        >>> nt.offsets()
        tensor([0, 1, 4])
    """
    if tensor.layout != strided:
        raise RuntimeError(
            f"torch.nested.masked_select requires a strided tensor, given {tensor.layout}"
        )
    if mask.layout != strided:
        raise RuntimeError(
            f"torch.nested.masked_select requires a strided mask, given: {mask.layout}"
        )
    values = tensor.masked_select(mask)
    counts = mask.expand(tensor.shape).sum(dim=tensor.dim() - 1).reshape(-1)
    return make_jagged(values, offsets_of(counts.tolist(), values.device), None, 1)
