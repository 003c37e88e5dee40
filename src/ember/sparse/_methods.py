"""The methods of ``SparseTensor`` that run sparse ops, attached in one place (as
``_tensor_methods`` does for dense tensors)."""

from __future__ import annotations

from .. import _dtype as dt
from . import _arith, _convert, _reduce
from ._tensor import SparseTensor

S = SparseTensor

S.to_dense = _convert.to_dense
S.to_sparse = _convert.to_sparse
S.to_sparse_coo = _convert.to_sparse_coo
S.coalesce = _convert.coalesce
S.indices = _convert.indices
S._indices = _convert._indices
S.values = _convert.values
S._values = _convert._values
S.transpose = _convert.transpose
S.t = _convert.t
S.mT = property(lambda self: _convert.transpose(self, -2, -1))
S.to = _convert.to
S.clone = _convert.clone
S.double = lambda self, memory_format=None: self.to(dt.float64)
S.float = lambda self, memory_format=None: self.to(dt.float32)
S.half = lambda self, memory_format=None: self.to(dt.float16)
S.cpu = lambda self, memory_format=None: self.to("cpu")
S.cuda = lambda self, device=None, non_blocking=False, memory_format=None: self.to(
    "cuda" if device is None else device
)

S.add = _arith.add
S.__add__ = _arith.add
S.__radd__ = _arith.radd
S.sub = _arith.sub
S.__sub__ = _arith.sub
S.__rsub__ = _arith.rsub
S.mul = _arith.mul
S.__mul__ = _arith.mul
S.__rmul__ = _arith.mul
S.div = _arith.div
S.__truediv__ = _arith.div
S.neg = _arith.neg
S.__neg__ = _arith.neg
S.sum = lambda self, dim=None, keepdim=False, dtype=None: _reduce.sum(self, dim, dtype)
