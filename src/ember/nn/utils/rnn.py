"""Variable-length sequences: padding, packing (PackedSequence) and back.

A packed batch stores time step 0 of every sequence, then time step 1 of those still running,
and so on (sequences sorted by decreasing length); ``batch_sizes[t]`` counts the rows of step t.
Packing and unpacking are gathers (``index_select``), so gradients flow through them.
"""

from __future__ import annotations

import numpy as np

from ... import _creation
from ..._tensor import Tensor
from ...ops.indexing import index_select
from ...ops.shape import cat, stack
from .._packed_sequence import PackedSequence, _long, invert_permutation

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]


def _lengths_array(lengths) -> np.ndarray:
    if isinstance(lengths, Tensor):
        if lengths.is_floating_point() or lengths.dim() != 1:
            raise RuntimeError(
                "'lengths' argument should be a 1D CPU int64 tensor, but got "
                f"{lengths.dim()}D {lengths.device.type} {lengths.dtype.name} tensor"
            )
        return lengths.cpu().numpy().astype(np.int64)
    return np.asarray(list(lengths), dtype=np.int64)


def pack_padded_sequence(
    input: Tensor, lengths, batch_first: bool = False, enforce_sorted: bool = True
) -> PackedSequence:
    """Pack a padded (T, B, *) batch (or (B, T, *) with ``batch_first``) of given lengths.

    Example::
        >>> x = ember.randn(3, 2, 4)  # lengths 3 and 2
        >>> packed = pack_padded_sequence(x, [3, 2])
        >>> packed.batch_sizes
        tensor([2, 2, 1])
    """
    lens = _lengths_array(lengths)
    if enforce_sorted:
        if np.any(lens[:-1] < lens[1:]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                "exportability."
            )
        sorted_indices = None
        order = np.arange(lens.size)
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = _long(order).to(input.device)
    x = input.transpose(0, 1) if batch_first else input
    steps, batch = x.shape[0], x.shape[1]
    if lens.size != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} "
            f"(batch_size={batch})"
        )
    if lens.size and lens.min() <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    if lens.size and lens.max() > steps:
        raise RuntimeError(
            f"a sequence length {int(lens.max())} exceeds the padded length {steps} of input"
        )
    sorted_lens = lens[order]
    batch_sizes = (sorted_lens[None, :] > np.arange(int(sorted_lens[0]))[:, None]).sum(1)
    # row t*B + order[j] of the (T*B, *) view holds step t of the j-th longest sequence
    rows = np.concatenate([t * batch + order[: int(n)] for t, n in enumerate(batch_sizes)])
    flat = x.reshape(steps * batch, *x.shape[2:])
    data = index_select(flat, 0, _long(rows).to(input.device))
    return PackedSequence(
        data, _long(batch_sizes), sorted_indices, invert_permutation(sorted_indices)
    )


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Undo ``pack_padded_sequence``: the padded batch and the lengths (original order)."""
    data, batch_sizes = sequence.data, sequence.batch_sizes.cpu().numpy().astype(np.int64)
    steps, batch = batch_sizes.size, int(batch_sizes[0])
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{steps}"
            )
    else:
        total_length = steps
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]])
    filler = data.shape[0]  # index of the padding row appended below
    rows = np.full((total_length, batch), filler, dtype=np.int64)
    for t in range(steps):
        rows[t, : batch_sizes[t]] = offsets[t] + np.arange(batch_sizes[t])
    lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(1)
    unsorted = sequence.unsorted_indices
    if unsorted is not None:
        order = unsorted.cpu().numpy().astype(np.int64)
        rows, lengths = rows[:, order], lengths[order]
    pad_row = _creation.full(
        (1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device
    )
    padded = index_select(cat([data, pad_row], 0), 0, _long(rows.reshape(-1)).to(data.device))
    padded = padded.reshape(total_length, batch, *data.shape[1:])
    return (padded.transpose(0, 1) if batch_first else padded), _long(lengths)


def pad_sequence(
    sequences,
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack (L_i, *) tensors into (T, B, *) (or (B, T, *)), padding to the longest.

    Example::
        >>> pad_sequence([ember.ones(3), ember.ones(1)], batch_first=True)
        tensor([[1., 1., 1.],
                [1., 0., 0.]])
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            fill = _creation.full(
                (missing, *s.shape[1:]), padding_value, dtype=s.dtype, device=s.device
            )
            s = cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """Split a padded batch back into its sequences (inverse of ``pad_sequence``)."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, : int(n)] for i, n in enumerate(_lengths_array(lengths))]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) tensors (sorted by decreasing length unless told otherwise)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a PackedSequence holds (inverse of ``pack_sequence``)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
