"""Compressed sparse layouts: CSR, CSC, BSR and BSC (``ember.sparse_csr`` ...).

A compressed tensor keeps its elements as coalesced COO storage (every element of a stored
block included), so ``to_dense``, ``@`` with a dense matrix and the autograd formulas of COO
tensors serve it unchanged; what the layout adds is the compressed view of that storage
(``crow_indices``/``col_indices``, ``ccol_indices``/``row_indices``, block ``values``), the
layout's checks and repr. 2-D matrices only (no batch dimensions).
"""

from __future__ import annotations

from .. import _backend
from .._tensor import Tensor
from ..autograd.node import Node
from ..ops._dispatch import wrap
from ._construct import _as_tensor, check_sparse_tensor_invariants
from ._convert import values as coo_values
from ._graph import from_values, record
from ._layout import sparse_bsc, sparse_bsr, sparse_csc, sparse_csr
from ._storage import SparseStorage, coalesce_arrays
from ._tensor import SparseTensor

_ROW_MAJOR = (sparse_csr, sparse_bsr)  # compressed along rows
_BLOCKED = (sparse_bsr, sparse_bsc)
COMPRESSED = frozenset({sparse_csr, sparse_csc, sparse_bsr, sparse_bsc})
_NAMES = {sparse_csr: "Csr", sparse_csc: "Csc", sparse_bsr: "Bsr", sparse_bsc: "Bsc"}


class SparseCompressedTensor(SparseTensor):
    """A 2-D tensor in a compressed layout; build one with ``ember.sparse_csr_tensor`` (or
    ``_csc``/``_bsr``/``_bsc``) or ``dense.to_sparse_csr()``.

    Example::
        >>> s = ember.tensor([[0.0, 2.0], [3.0, 4.0]]).to_sparse_csr()
        >>> s.crow_indices(), s.col_indices(), s.values()
        (tensor([0, 1, 3]), tensor([1, 0, 1]), tensor([2., 3., 4.]))
    """

    is_sparse = False

    @property
    def layout(self):
        return self._compressed_layout

    @property
    def is_sparse_csr(self) -> bool:
        return self._compressed_layout is sparse_csr

    @property
    def grad(self):
        """torch keeps a compressed leaf's gradient in its layout; the COO formulas' gradient
        is converted once, when read."""
        g = Tensor.grad.fget(self)
        if type(g) is SparseTensor and tuple(g.shape) == tuple(self.shape):
            g = to_compressed(g.detach(), self._compressed_layout, self._blocksize)
            self._grad = g
        return g

    @grad.setter
    def grad(self, value) -> None:
        Tensor.grad.fset(self, value)

    @grad.deleter
    def grad(self) -> None:
        Tensor.grad.fdel(self)

    def _blocksize_or_one(self) -> tuple[int, int]:
        return self._blocksize if self._compressed_layout in _BLOCKED else (1, 1)

    def _block_order(self):
        """Per stored element: its block's (compressed, plain) index and its place in it,
        and the permutation listing elements block by block in the layout's order."""
        storage = self._data
        xp = _backend.array_module(storage.values)
        rows, cols = storage.indices[0], storage.indices[1]
        bh, bw = self._blocksize_or_one()
        block_row, block_col = rows // bh, cols // bw
        inner_row, inner_col = rows % bh, cols % bw
        if self._compressed_layout in _ROW_MAJOR:
            keys = (inner_col, inner_row, block_col, block_row)
            compressed, plain = block_row, block_col
        else:
            keys = (inner_col, inner_row, block_row, block_col)
            compressed, plain = block_col, block_row
        order = xp.lexsort(xp.stack(keys)) if rows.size else xp.zeros(0, dtype=xp.int64)
        return xp, compressed[order], plain[order], order

    def _nnz(self) -> int:
        bh, bw = self._blocksize_or_one()
        return self._data.nnz // (bh * bw)

    def _compressed_and_plain(self):
        xp, compressed, plain, _ = self._block_order()
        bh, bw = self._blocksize_or_one()
        step = bh * bw
        compressed, plain = compressed[::step], plain[::step]
        rows, cols = self._data.shape
        n = rows // bh if self._compressed_layout in _ROW_MAJOR else cols // bw
        counts = xp.bincount(compressed, minlength=n) if compressed.size else xp.zeros(n, int)
        pointers = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(counts)])
        return wrap(pointers.astype(xp.int64)), wrap(plain.astype(xp.int64))

    def _expect(self, op: str, layouts, what: str):
        if self._compressed_layout not in layouts:
            raise RuntimeError(
                f"{op} expected {what} tensor layout but got "
                f"Sparse{_NAMES[self._compressed_layout]}"
            )

    def crow_indices(self) -> Tensor:
        self._expect("crow_indices", _ROW_MAJOR, "sparse row compressed")
        return self._compressed_and_plain()[0]

    def col_indices(self) -> Tensor:
        self._expect("col_indices", _ROW_MAJOR, "sparse row compressed")
        return self._compressed_and_plain()[1]

    def ccol_indices(self) -> Tensor:
        self._expect("ccol_indices", (sparse_csc, sparse_bsc), "sparse column compressed")
        return self._compressed_and_plain()[0]

    def row_indices(self) -> Tensor:
        self._expect("row_indices", (sparse_csc, sparse_bsc), "sparse column compressed")
        return self._compressed_and_plain()[1]

    def values(self) -> Tensor:
        """The stored values in the layout's order ((nnz, *blocksize) for a blocked one)."""
        _, _, _, order = self._block_order()
        values = coo_values(self)  # differentiable, in the storage's row-major order
        if self._compressed_layout is not sparse_csr:
            values = values[wrap(order)]
        if self._compressed_layout in _BLOCKED:
            values = values.reshape(-1, *self._blocksize)  # ordered block by block
        return values

    def indices(self):
        raise RuntimeError(
            f"indices expected sparse coordinate tensor layout but got "
            f"Sparse{_NAMES[self._compressed_layout]}"
        )

    def to_sparse_coo(self) -> SparseTensor:
        out = SparseTensor.__new__(SparseTensor)
        out._data = self._data
        out._vc = [0]
        return record(_ToCooBackward, out, (self,))

    to_sparse = to_sparse_coo

    def __repr__(self) -> str:
        from ._repr import compressed_repr

        return compressed_repr(self)


class _ToCooBackward(Node):
    """to_sparse_coo of a compressed tensor: the same elements, so the gradient passes."""

    def backward(self, g):
        return g


def _wrap_compressed(storage: SparseStorage, layout, blocksize=None) -> SparseCompressedTensor:
    out = SparseCompressedTensor.__new__(SparseCompressedTensor)
    out._data = storage
    out._vc = [0]
    out._compressed_layout = layout
    out._blocksize = tuple(blocksize) if blocksize is not None else None
    return out


# --- construction ---------------------------------------------------------------------------
_INDEX_NAMES = {
    sparse_csr: ("crow_indices", "col_indices", "ncols", "nrows"),
    sparse_bsr: ("crow_indices", "col_indices", "ncols", "nrows"),
    sparse_csc: ("ccol_indices", "row_indices", "nrows", "ncols"),
    sparse_bsc: ("ccol_indices", "row_indices", "nrows", "ncols"),
}


def _check_invariants(layout, compressed, plain, nnz: int, n_compressed: int, n_plain: int):
    """torch's checks (``check_invariants=True``), with its messages."""
    xp = _backend.array_module(compressed)
    cname, pname, plain_extent, compressed_extent = _INDEX_NAMES[layout]
    if compressed.shape[-1] != n_compressed + 1:
        raise RuntimeError(
            f"{cname}.shape[-1] must be equal to the number of {compressed_extent[1:]} + 1 "
            f"(={n_compressed + 1}), but got {compressed.shape[-1]}"
        )
    if plain.shape[-1] != nnz:
        raise RuntimeError(
            f"{pname}.shape[-1] must be equal to nnz (={nnz}) as defined by values.shape[0], "
            f"but got {plain.shape[-1]}"
        )
    if int(compressed[0]) != 0:
        raise RuntimeError(f"`{cname}[..., 0] == 0` is not satisfied.")
    if int(compressed[-1]) != nnz:
        raise RuntimeError(f"`{cname}[..., -1] == nnz` is not satisfied.")
    counts = xp.diff(compressed)
    if (counts < 0).any() or (counts > n_plain).any():
        raise RuntimeError(
            f"`0 <= {cname}[..., 1:] - {cname}[..., :-1] <= {plain_extent}` is not satisfied."
        )
    if plain.size and ((plain < 0).any() or (plain >= n_plain).any()):
        raise RuntimeError(f"`0 <= {pname} < {plain_extent}` is not satisfied.")
    segment = xp.repeat(xp.arange(n_compressed), counts)
    if plain.size > 1:
        same = segment[1:] == segment[:-1]
        if (same & (plain[1:] <= plain[:-1])).any():
            raise RuntimeError(
                f"`{pname}[..., {cname}[..., i - 1]:{cname}[..., i]] for all i = 1, ..., "
                f"{compressed_extent} are sorted and distinct along the last dimension values` "
                "is not satisfied."
            )


def sparse_compressed_tensor(
    compressed_indices,
    plain_indices,
    values,
    size=None,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad: bool = False,
    check_invariants=None,
) -> SparseCompressedTensor:
    """A compressed sparse matrix of ``layout`` (CSR, CSC, BSR or BSC) from its index arrays.

    Example::
        >>> ember.sparse_compressed_tensor([0, 1, 2], [1, 0], [5.0, 6.0], (2, 2),
        ...                                layout=ember.sparse_csr).to_dense()
        tensor([[0., 5.],
                [6., 0.]])
    """
    if layout not in COMPRESSED:
        raise RuntimeError(
            f"sparse_compressed_tensor expected sparse compressed tensor layout but got {layout}"
        )
    compressed = _as_tensor(compressed_indices)
    plain = _as_tensor(plain_indices)
    values_t = _as_tensor(values, dtype)
    if dtype is not None and values_t.dtype != dtype:
        values_t = values_t.to(dtype)
    if device is not None:
        values_t = values_t.to(device)
    for name, t in (("compressed_indices", compressed), ("plain_indices", plain)):
        if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype.name == "bool":
            raise RuntimeError(
                f"{name} must be an int32 or int64 tensor, but got {t.dtype.name.capitalize()}"
            )
    if compressed.ndim != 1 or plain.ndim != 1:
        raise NotImplementedError(
            "sparse_compressed_tensor: batched compressed tensors are not supported by ember "
            f"(got compressed_indices of {compressed.ndim} dims)"
        )
    blocked = layout in _BLOCKED
    block_dims = 3 if blocked else 1
    if values_t.ndim != block_dims:
        raise RuntimeError(
            f"values must be a {block_dims}-D tensor for {layout!r} (2-D matrices only), got "
            f"{values_t.ndim}-D"
        )
    blocksize = tuple(values_t.shape[1:3]) if blocked else (1, 1)
    bh, bw = blocksize
    xp = _backend.array_module(values_t._data)
    c = xp.asarray(compressed._data, dtype=xp.int64)
    p = xp.asarray(plain._data, dtype=xp.int64)
    n_compressed = c.shape[0] - 1
    row_major = layout in _ROW_MAJOR
    if size is None:
        n_plain = int(p.max()) + 1 if p.size else 0
        grid = (n_compressed, n_plain) if row_major else (n_plain, n_compressed)
        size = (grid[0] * bh, grid[1] * bw)
    size = tuple(int(s) for s in size)
    if len(size) != 2:
        raise NotImplementedError(
            f"sparse_compressed_tensor: ember supports 2-D compressed tensors, got size {size}"
        )
    if size[0] % bh or size[1] % bw:
        raise RuntimeError(
            f"tensor shape[0] (={size[0]}) and shape[1] (={size[1]}) must be divisible by the "
            f"blocksize {blocksize}"
        )
    grid = (size[0] // bh, size[1] // bw)
    n_compressed_expected, n_plain = grid if row_major else grid[::-1]
    nnz = values_t.shape[0]
    if check_invariants or (
        check_invariants is None and check_sparse_tensor_invariants.is_enabled()
    ):
        _check_invariants(layout, c, p, nnz, n_compressed_expected, n_plain)
    segment = xp.repeat(xp.arange(n_compressed, dtype=xp.int64), xp.diff(c))
    block_rows, block_cols = (segment, p) if row_major else (p, segment)
    # every element of every block, block by block, row-major inside a block
    inner_r = xp.repeat(xp.arange(bh, dtype=xp.int64), bw)
    inner_c = xp.tile(xp.arange(bw, dtype=xp.int64), bh)
    rows = (block_rows[:, None] * bh + inner_r[None, :]).reshape(-1)
    cols = (block_cols[:, None] * bw + inner_c[None, :]).reshape(-1)
    flat_values = values_t.reshape(-1)
    indices, perm = _row_major(xp, rows, cols, size)
    element_values = flat_values[wrap(perm)] if perm is not None else flat_values
    coo = from_values(indices, element_values, size, coalesced=True)
    out = _wrap_compressed(coo._data, layout, blocksize if blocked else None)
    out._rg = coo._rg
    out._grad_fn = coo._grad_fn
    if requires_grad:
        out.requires_grad_(True)
    return out


def _row_major(xp, rows, cols, size):
    """The (2, n) indices sorted row-major and the permutation that sorts them (None when
    they already are); duplicates stay (invariants unchecked), as torch keeps them."""
    indices = xp.stack([rows, cols]).astype(xp.int64)
    if rows.size < 2:
        return indices, None
    linear = rows * size[1] + cols
    if (linear[1:] > linear[:-1]).all():
        return indices, None
    perm = xp.argsort(linear, kind="stable")
    return indices[:, perm], perm


def _layout_constructor(layout, index_names: str):
    def construct(
        compressed_indices,
        plain_indices,
        values,
        size=None,
        *,
        dtype=None,
        device=None,
        pin_memory=False,
        requires_grad=False,
        check_invariants=None,
    ):
        return sparse_compressed_tensor(
            compressed_indices, plain_indices, values, size, dtype=dtype, layout=layout,
            device=device, requires_grad=requires_grad, check_invariants=check_invariants,
        )  # fmt: skip

    name = f"sparse_{str.__str__(layout).split('_')[1]}_tensor"
    construct.__name__ = construct.__qualname__ = name
    construct.__doc__ = (
        f"A sparse matrix in the ``ember.{str.__str__(layout)}`` layout from {index_names} and "
        f"values; see ``ember.sparse_compressed_tensor``."
    )
    return construct


sparse_csr_tensor = _layout_constructor(sparse_csr, "crow_indices, col_indices")
sparse_csc_tensor = _layout_constructor(sparse_csc, "ccol_indices, row_indices")
sparse_bsr_tensor = _layout_constructor(sparse_bsr, "crow_indices, col_indices")
sparse_bsc_tensor = _layout_constructor(sparse_bsc, "ccol_indices, row_indices")


# --- conversion -----------------------------------------------------------------------------
class _ToCompressedBackward(Node):
    """dense/COO -> compressed: the same elements, so the gradient passes (made dense for a
    dense input)."""

    def backward(self, g):
        return g.to_dense() if self.dense_input and isinstance(g, SparseTensor) else g


def to_compressed(self: Tensor, layout, blocksize=None, dense_dim=None) -> SparseCompressedTensor:
    """``self`` (dense, COO or compressed) in a compressed ``layout``; blocked layouts keep
    every block that holds a nonzero (or a stored element); one int is a square block."""
    if isinstance(blocksize, int) and not isinstance(blocksize, bool):
        blocksize = (blocksize, blocksize)
    if dense_dim:
        raise NotImplementedError("to_sparse_compressed: dense_dim is not supported by ember")
    if (
        isinstance(self, SparseCompressedTensor)
        and self.layout == layout
        and (layout not in _BLOCKED or tuple(blocksize) == self._blocksize)
    ):
        return self
    if self.ndim != 2:
        raise RuntimeError(
            f"to_sparse_{str.__str__(layout).split('_')[1]}: expected a 2-D tensor (ember "
            f"supports no batch dimensions), got {self.ndim}-D"
        )
    blocked = layout in _BLOCKED
    if blocked:
        if blocksize is None or len(tuple(blocksize)) != 2:
            raise RuntimeError(
                f"to_sparse_{str.__str__(layout)[7:]}: expected a blocksize of 2 ints"
            )
        bh, bw = (int(b) for b in blocksize)
        if self.shape[0] % bh or self.shape[1] % bw:
            raise RuntimeError(
                f"Tensor size({self.ndim - 2}) {self.shape[0]} needs to be divisible by "
                f"blocksize[0] {bh}"
                if self.shape[0] % bh
                else f"Tensor size({self.ndim - 1}) {self.shape[1]} needs to be divisible by "
                f"blocksize[1] {bw}"
            )
    dense_input = not isinstance(self, SparseTensor)
    if dense_input and not blocked:
        coo = self.to_sparse()
        storage = coo._data
    else:
        source = self.to_dense() if blocked else self
        if blocked:
            data = source._data
            xp = _backend.array_module(data)
            grid = data.reshape(self.shape[0] // bh, bh, self.shape[1] // bw, bw)
            keep = (grid != 0).any(axis=(1, 3))
            if not dense_input:  # stored elements count as kept, zero or not
                s = self._data
                keep[s.indices[0] // bh, s.indices[1] // bw] = True
            mask = xp.repeat(xp.repeat(keep, bh, axis=0), bw, axis=1)
            indices = xp.stack(xp.nonzero(mask)).astype(xp.int64)
            storage = SparseStorage(indices, data[tuple(indices)], data.shape, True)
        else:
            s = source._data
            indices, values = (s.indices, s.values)
            if not s.coalesced:
                indices, values = coalesce_arrays(indices, values, s.shape)
            storage = SparseStorage(indices, values, s.shape, True)
    out = _wrap_compressed(storage, layout, (bh, bw) if blocked else None)
    return record(_ToCompressedBackward, out, (self,), dense_input=dense_input)


def to_sparse_csr(self: Tensor, dense_dim=None) -> SparseCompressedTensor:
    return to_compressed(self, sparse_csr, dense_dim=dense_dim)


def to_sparse_csc(self: Tensor, dense_dim=None) -> SparseCompressedTensor:
    return to_compressed(self, sparse_csc, dense_dim=dense_dim)


def to_sparse_bsr(self: Tensor, blocksize, dense_dim=None) -> SparseCompressedTensor:
    return to_compressed(self, sparse_bsr, blocksize, dense_dim)


def to_sparse_bsc(self: Tensor, blocksize, dense_dim=None) -> SparseCompressedTensor:
    return to_compressed(self, sparse_bsc, blocksize, dense_dim)


# --- ops that keep the layout ---------------------------------------------------------------
_TRANSPOSED = {sparse_csr: sparse_csc, sparse_csc: sparse_csr, sparse_bsr: sparse_bsc,
               sparse_bsc: sparse_bsr}  # fmt: skip
_LAYOUT_KEEPING = (
    "__mul__ __rmul__ __truediv__ __add__ __radd__ __sub__ __rsub__ __neg__ mul div add sub "
    "neg clone detach to double float half abs sqrt pow"
).split()


def _keeping_layout(name: str, transposes: bool = False):
    """The COO op ``name`` with its result put back into the operand's compressed layout (the
    transposed layout for ``t``), as torch's ops on compressed tensors return."""
    coo_op = getattr(SparseTensor, name)

    def op(self, *args, **kwargs):
        out = coo_op(self, *args, **kwargs)
        if type(out) is not SparseTensor or out.ndim != 2:
            return out
        layout, blocksize = self._compressed_layout, self._blocksize
        if transposes:
            layout = _TRANSPOSED[layout]
            blocksize = blocksize[::-1] if blocksize is not None else None
        return to_compressed(out, layout, blocksize)

    op.__name__ = op.__qualname__ = name
    return op


for _name in _LAYOUT_KEEPING:
    if hasattr(SparseTensor, _name):
        setattr(SparseCompressedTensor, _name, _keeping_layout(_name))
SparseCompressedTensor.t = _keeping_layout("t", transposes=True)
