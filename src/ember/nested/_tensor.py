"""NestedTensor: a batch of tensors of different sizes, held as one dense ember tensor.

The numbers live in ``_inner``, an ordinary ember tensor in the autograd graph: the packed
values (``(sum of lengths, *rest)``) for the jagged layout, a flat buffer of the components
one after the other for the strided layout. Every nested op is written with ember ops on
``_inner`` (or on the components, views of it), so autograd reaches the tensors the nested
tensor was built from without any rule of its own. A nested tensor's autograd state
(``requires_grad``, ``grad_fn``, ``grad``, ``is_leaf``, ``backward``) is its inner tensor's.

``_data`` holds a ``NestedStorage``: a dense op without a nested kernel raises
``NotImplementedError`` naming the op (as PyTorch does) rather than an internal error.
"""

from __future__ import annotations

from .._creation import tensor
from .._dtype import int64
from .._tensor import Size, Tensor, _wrap_dim
from . import _errors
from ._layout import jagged, strided
from ._nested_int import nested_int_for
from ._repr import nested_repr
from ._storage import NestedStorage

_new = object.__new__
_STORAGE = {jagged: NestedStorage(jagged), strided: NestedStorage(strided)}


class NestedTensor(Tensor):
    """The common part of both layouts; build one with ``ember.nested.nested_tensor``.

    Example::
        >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(4, 3)])
        >>> [t.shape for t in nt.unbind()]
        [ember.Size([2, 3]), ember.Size([4, 3])]
    """

    is_nested = True
    is_sparse = False
    _grad_wrapper = None  # (inner grad, its nested wrapper): nt.grad is nt.grad

    # --- what the layouts provide -------------------------------------------------------
    def unbind(self, dim: int = 0) -> tuple:
        raise NotImplementedError

    def _like(self, inner: Tensor, **changes) -> NestedTensor:
        raise NotImplementedError

    def _same_structure(self, other: NestedTensor) -> bool:
        raise NotImplementedError

    def _describe(self) -> str:
        raise NotImplementedError

    # --- metadata -----------------------------------------------------------------------
    @property
    def dtype(self):
        return self._inner.dtype

    @property
    def device(self):
        return self._inner.device

    @property
    def is_cuda(self) -> bool:
        return self._inner.is_cuda

    @property
    def ndim(self) -> int:
        return self.dim()

    def numel(self) -> int:
        return self._inner.numel()

    nelement = numel

    def element_size(self) -> int:
        return self._inner.element_size()

    @property
    def itemsize(self) -> int:
        return self._inner.itemsize

    @property
    def nbytes(self) -> int:
        return self._inner.nbytes

    def is_floating_point(self) -> bool:
        return self._inner.is_floating_point()

    @property
    def _version(self) -> int:
        return self._inner._version

    def __len__(self) -> int:
        return self.size(0)

    def __iter__(self):
        return iter(self.unbind())

    def __getitem__(self, index):
        if isinstance(index, int) and not isinstance(index, bool):
            components = self.unbind()
            n = len(components)
            if not -n <= index < n:
                raise IndexError(f"index {index} is out of bounds for dimension 0 with size {n}")
            return components[index]
        raise _errors.unsupported(f"indexing with {index!r}", str.__str__(self.layout))

    # --- autograd state: the inner tensor's -----------------------------------------------
    @property
    def _rg(self) -> bool:
        return self._inner._rg

    @property
    def _grad_fn(self):
        return self._inner.grad_fn

    @property
    def requires_grad(self) -> bool:
        return self._inner.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._inner.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True) -> NestedTensor:
        self._inner.requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        return self._inner.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._inner.is_leaf

    @property
    def grad(self):
        inner_grad = self._inner.grad
        if inner_grad is None:
            return None
        cached = self._grad_wrapper
        if cached is not None and cached[0] is inner_grad:
            return cached[1]
        wrapper = self._like(inner_grad)
        self._grad_wrapper = (inner_grad, wrapper)
        return wrapper

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            self._check_same(value, "grad assignment")
            value = value._inner
        self._inner.grad = value

    @grad.deleter
    def grad(self) -> None:
        self._inner.grad = None

    @property
    def retains_grad(self) -> bool:
        return self._inner.retains_grad

    def retain_grad(self) -> None:
        self._inner.retain_grad()

    def _accumulator(self):
        return self._inner._accumulator()

    def _edge(self):
        return self._inner._edge()

    def register_hook(self, hook):
        """``hook(grad)`` runs with the nested gradient; it may return a new nested one."""

        def on_inner_grad(grad):
            out = hook(self._like(grad))
            return None if out is None else out._inner

        return self._inner.register_hook(on_inner_grad)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Backpropagate ``gradient`` (a nested tensor of this structure) to the components."""
        if gradient is None:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        self._check_same(gradient, "backward")
        self._inner.backward(gradient._inner, retain_graph, create_graph, inputs)

    def detach(self) -> NestedTensor:
        return self._like(self._inner.detach())

    def detach_(self) -> NestedTensor:
        self._inner.detach_()
        return self

    @property
    def data(self) -> NestedTensor:
        return self._like(self._inner.data)

    @data.setter
    def data(self, value) -> None:
        self._check_same(value, "data assignment")
        self._inner.data = value._inner

    def _check_same(self, other, op: str) -> None:
        if not isinstance(other, NestedTensor):
            raise RuntimeError(
                f"{op}: expected a nested tensor of the structure {self._describe()}, got a "
                f"{type(other).__name__}"
            )
        if not self._same_structure(other):
            raise RuntimeError(
                f"{op}: nested structures differ: {self._describe()} and {other._describe()}"
            )

    # --- conversions ------------------------------------------------------------------------
    def item(self):
        if self.numel() != 1:
            raise RuntimeError(
                f"a Tensor with {self.numel()} elements cannot be converted to Scalar"
            )
        return self._inner.item()

    def tolist(self):
        raise RuntimeError(
            ".tolist() is not supported for NestedTensor; use [t.tolist() for t in nt.unbind()]"
        )

    def numpy(self, *, force: bool = False):
        raise RuntimeError(
            ".numpy() is not supported for NestedTensor; convert with nt.to_padded_tensor(0.0) "
            "or nt.unbind() first"
        )

    def __array__(self, dtype=None, copy=None):
        self.numpy()

    def __bool__(self) -> bool:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")

    def __deepcopy__(self, memo):
        out = self._like(self._inner.__deepcopy__(memo))
        memo[id(self)] = out
        return out

    __hash__ = Tensor.__hash__

    def __repr__(self) -> str:
        return nested_repr(self)


def _lengths_of(sizes) -> str:
    return ", ".join(str(tuple(s)) for s in sizes)


class JaggedTensor(NestedTensor):
    """A jagged-layout nested tensor: packed ``values``, ``offsets`` (B + 1) and optional
    ``lengths`` (a tensor "with holes"), one ragged dimension at ``_ragged_idx``."""

    @property
    def layout(self):
        return jagged

    def dim(self) -> int:
        return self._inner.dim() + 1

    ndimension = dim

    @property
    def shape(self) -> Size:
        dims = list(self._inner.shape)
        dims[self._ragged_idx - 1] = self._ragged_size
        return Size([len(self._bounds), *dims])

    def size(self, dim: int | None = None):
        if dim is None:
            return self.shape
        return self.shape[_wrap_dim(dim, self.dim(), "size")]

    def stride(self, dim: int | None = None):
        raise RuntimeError("stride(): not supported for NestedTensor in ember")

    def values(self) -> Tensor:
        """The packed values (a view: in-place writes and gradients reach the nested tensor)."""
        return self._inner.view(self._inner.shape)

    def offsets(self) -> Tensor:
        return self._offsets

    def lengths(self):
        return self._lengths

    def is_contiguous(self, memory_format=None) -> bool:
        return self._lengths is None and self._ragged_idx == 1 and self._inner.is_contiguous()

    def _components(self) -> list:
        axis = self._ragged_idx - 1
        return [self._inner.narrow(axis, start, length) for start, length in self._bounds]

    def unbind(self, dim: int = 0) -> tuple:
        if dim != 0:
            raise RuntimeError("unbind(): only supported for NestedTensor on dim=0")
        return tuple(self._components())

    def _like(self, inner: Tensor, ragged_idx: int | None = None) -> JaggedTensor:
        return make_jagged(
            inner,
            self._offsets,
            self._lengths,
            self._ragged_idx if ragged_idx is None else ragged_idx,
            self._bounds,
            self._ragged_size,
        )

    def _same_structure(self, other) -> bool:
        return (
            isinstance(other, JaggedTensor)
            and other._ragged_size == self._ragged_size
            and other._ragged_idx == self._ragged_idx
            and other.shape == self.shape
        )

    def _describe(self) -> str:
        return str(tuple(self.shape))


class StridedNestedTensor(NestedTensor):
    """A strided-layout nested tensor: components of one dimensionality, any sizes, stored
    one after the other in a flat buffer."""

    @property
    def layout(self):
        return strided

    def dim(self) -> int:
        return self._ndim

    ndimension = dim

    @property
    def shape(self):
        raise RuntimeError(
            "Internal error: NestedTensorImpl doesn't support sizes. Please file an issue."
        )

    def size(self, dim: int | None = None):
        if dim is None:
            return self.shape
        dim = _wrap_dim(dim, self._ndim, "size")
        if dim == 0:
            return len(self._sizes)
        sizes = {s[dim - 1] for s in self._sizes}
        if len(sizes) > 1:
            raise RuntimeError(f"Given dimension {dim} is irregular and does not have a size.")
        return sizes.pop()

    def stride(self, dim: int | None = None):
        raise RuntimeError(
            "Internal error: NestedTensorImpl doesn't support strides. Please file an issue."
        )

    def values(self) -> Tensor:
        """The flat buffer of the components, one after the other (a view)."""
        return self._inner.view(-1)

    def _nested_tensor_size(self) -> Tensor:
        return tensor([list(s) for s in self._sizes], dtype=int64)

    def is_contiguous(self, memory_format=None) -> bool:
        return True

    def _components(self) -> list:
        buffer = self._inner
        return [
            buffer.narrow(0, start, _numel(size)).view(size)
            for start, size in zip(self._starts, self._sizes)
        ]

    def unbind(self, dim: int = 0) -> tuple:
        if dim != 0:
            raise RuntimeError(
                f"NestedTensor can only be unbound along dimension 0 got dimension {dim} instead."
            )
        return tuple(self._components())

    def _like(self, inner: Tensor, sizes=None) -> StridedNestedTensor:
        return make_strided(inner, self._sizes if sizes is None else sizes, self._ndim)

    def _same_structure(self, other) -> bool:
        return isinstance(other, StridedNestedTensor) and other._sizes == self._sizes

    def _describe(self) -> str:
        return f"nested sizes [{_lengths_of(self._sizes)}]"


def _numel(size) -> int:
    n = 1
    for s in size:
        n *= s
    return n


def make_jagged(values, offsets, lengths, ragged_idx: int, bounds=None, ragged_size=None):
    """A jagged nested tensor over ``values``; ``bounds`` (start, length per component) and
    ``ragged_size`` are derived from offsets/lengths when not given."""
    if bounds is None:
        starts = [int(v) for v in offsets.tolist()]
        if lengths is None:
            bounds = tuple((starts[i], starts[i + 1] - starts[i]) for i in range(len(starts) - 1))
        else:
            lens = [int(v) for v in lengths.tolist()]
            bounds = tuple(zip(starts[: len(lens)], lens))
    if ragged_size is None:
        ragged_size = nested_int_for(offsets if lengths is None else lengths)
    t = _new(JaggedTensor)
    t._data = _STORAGE[jagged]
    t._vc = values._vc
    t._inner = values
    t._offsets = offsets
    t._lengths = lengths
    t._ragged_idx = ragged_idx
    t._bounds = bounds
    t._ragged_size = ragged_size
    return t


def make_strided(buffer, sizes, ndim: int | None = None) -> StridedNestedTensor:
    """A strided nested tensor whose components of ``sizes`` fill the flat ``buffer``."""
    sizes = tuple(tuple(int(d) for d in s) for s in sizes)
    starts, offset = [], 0
    for s in sizes:
        starts.append(offset)
        offset += _numel(s)
    t = _new(StridedNestedTensor)
    t._data = _STORAGE[strided]
    t._vc = buffer._vc
    t._inner = buffer
    t._sizes = sizes
    t._starts = tuple(starts)
    t._ndim = (len(sizes[0]) + 1) if sizes else (1 if ndim is None else ndim)
    return t
