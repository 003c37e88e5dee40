"""``FuzzedSparseTensor``: a Fuzzer tensor in COO layout, of a drawn density and coalescing."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import numpy as np

import ember

from .fuzzer import FuzzedTensor

__all__ = ["FuzzedSparseTensor"]


class FuzzedSparseTensor(FuzzedTensor):
    """A sparse COO tensor to generate from the drawn parameters.

    The params must hold ``density`` (nnz = ceil(sum(size) * density)) and ``coalesced``;
    ``sparse_dim`` names the parameter holding the number of sparse dims (all dims without
    it). An uncoalesced tensor repeats every index once, so it holds 2 * nnz entries.

    Example::
        >>> from ember.utils.benchmark import FuzzedParameter, Fuzzer
        >>> fuzzer = Fuzzer(
        ...     parameters=[FuzzedParameter("density", distribution={0.1: 1.0}),
        ...                 FuzzedParameter("coalesced", distribution={True: 1.0})],
        ...     tensors=[FuzzedSparseTensor("x", size=(8, 8))], seed=0)
        >>> tensors, properties, _ = next(fuzzer.take(1))
        >>> tensors["x"].is_sparse, properties["x"]["is_coalesced"]
        (True, True)
    """

    def __init__(
        self,
        name: str,
        size: tuple[str | int, ...],
        min_elements: int | None = None,
        max_elements: int | None = None,
        dim_parameter: str | None = None,
        sparse_dim: str | None = None,
        nnz: str | None = None,
        density: str | None = None,
        coalesced: str | None = None,
        dtype: ember.dtype = ember.float32,
        cuda: bool = False,
    ) -> None:
        super().__init__(
            name=name,
            size=size,
            min_elements=min_elements,
            max_elements=max_elements,
            dim_parameter=dim_parameter,
            dtype=dtype,
            cuda=cuda,
        )
        self._density = density
        self._coalesced = coalesced
        self._sparse_dim = sparse_dim

    @staticmethod
    def sparse_tensor_constructor(size, dtype, sparse_dim, nnz, is_coalesced) -> ember.Tensor:
        """A COO tensor of ``nnz`` random entries at random indices (duplicates possible)."""
        if isinstance(size, Number):
            size = [size] * sparse_dim
        if all(size[d] <= 0 for d in range(sparse_dim)) and nnz != 0:
            raise AssertionError(
                f"sparse_tensor_constructor: {nnz} entries cannot fit in size {tuple(size)}"
            )
        values_size = [nnz, *size[sparse_dim:]]
        if dtype.is_floating_point:
            values = ember.rand(values_size, dtype=dtype, device="cpu")
        else:
            values = ember.randint(1, 127, values_size, dtype=dtype, device="cpu")

        # uniform in [0, 1), scaled to each sparse dim's extent and truncated
        indices = ember.rand(sparse_dim, nnz, device="cpu")
        indices.mul_(ember.tensor(size[:sparse_dim]).unsqueeze(1).to(indices))
        indices = indices.to(ember.long)

        if not is_coalesced:
            values = ember.cat([values, ember.randn_like(values)], 0)
            indices = ember.cat([indices, indices], 1)

        x = ember.sparse_coo_tensor(indices, values, ember.Size(size))
        if is_coalesced:
            x = x.coalesce()
        return x

    def _make_tensor(self, params: dict[str, Any], state: np.random.RandomState):
        size, _, _ = self._get_size_and_steps(params)
        density = params["density"]
        nnz = math.ceil(sum(size) * density)
        if nnz > sum(size):
            raise AssertionError(f"{self._name}: nnz {nnz} exceeds sum(size) = {sum(size)}")

        is_coalesced = params["coalesced"]
        sparse_dim = params["sparse_dim"] if self._sparse_dim else len(size)
        sparse_dim = min(sparse_dim, len(size))
        tensor = self.sparse_tensor_constructor(size, self._dtype, sparse_dim, nnz, is_coalesced)
        if self._cuda:
            tensor = tensor.cuda()

        sparse_dim = tensor.sparse_dim()
        properties = {
            "numel": int(tensor.numel()),
            "shape": tensor.size(),
            "is_coalesced": tensor.is_coalesced(),
            "density": density,
            "sparsity": 1.0 - density,
            "sparse_dim": sparse_dim,
            "dense_dim": tensor.dense_dim(),
            "is_hybrid": len(size[sparse_dim:]) > 0,
            "dtype": str(self._dtype),
        }
        return tensor, properties
