"""``PackedSequence`` and ``invert_permutation``, exported by ``ember.nn.utils.rnn`` (their
``__module__`` says so, as in PyTorch, for pickles and reprs).

Defined outside ``nn.utils`` so that ``nn.modules.rnn`` reaches them without running
``nn/utils/__init__``, which imports the utilities written on ``nn.modules`` (fusion, pruning,
parametrizations): that import would tie nn's modules and utilities into one import knot.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import _creation
from .._tensor import Tensor


def _long(values) -> Tensor:
    return _creation.tensor(np.asarray(values, dtype=np.int64))


class _PackedSequenceFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceFields):
    """Data and bookkeeping of a packed batch of sequences (see ``pack_padded_sequence``).

    Built by the packing functions; constructing one directly takes ``batch_sizes`` as a
    tensor and derives ``unsorted_indices`` from ``sorted_indices`` when not given.
    """

    def __new__(
        cls,
        data: Tensor,
        batch_sizes: Tensor | None = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:
        if batch_sizes is None:  # the old form PackedSequence((data, batch_sizes))
            data, batch_sizes = data
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """Move or cast ``data`` (and the indices to its device); batch_sizes stay on the CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = lambda t: None if t is None else t.to(data.device)  # noqa: E731
        return self._replace(
            data=data,
            sorted_indices=move(self.sorted_indices),
            unsorted_indices=move(self.unsorted_indices),
        )

    def cuda(self, *args, **kwargs) -> PackedSequence:
        return self.to("cuda")

    def cpu(self, *args, **kwargs) -> PackedSequence:
        return self.to("cpu")

    def double(self) -> PackedSequence:
        return self.to(dtype="float64")

    def float(self) -> PackedSequence:
        return self.to(dtype="float32")

    def half(self) -> PackedSequence:
        return self.to(dtype="float16")

    def long(self) -> PackedSequence:
        return self.to(dtype="int64")

    def int(self) -> PackedSequence:
        return self.to(dtype="int32")

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation``."""
    if permutation is None:
        return None
    perm = permutation.cpu().numpy().astype(np.int64)
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size)
    return _long(inverse).to(permutation.device)


for _exported in (PackedSequence, invert_permutation):
    _exported.__module__ = "ember.nn.utils.rnn"
