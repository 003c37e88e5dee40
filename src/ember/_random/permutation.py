"""torch's Fisher-Yates shuffle (randperm below 2^32 / 20) without a Python loop over swaps."""

from __future__ import annotations

import numpy as np


def fisher_yates(offsets: np.ndarray) -> np.ndarray:
    """The permutation left by swapping p[i] and p[i + offsets[i]] for i = 0, 1, ...,
    starting from the identity.

    Follow one value instead of one position. Step i sends the value then at position i to
    its target j_i = i + offsets[i], where it waits until either a later step s < j_i with
    the same target swaps it back to s (final: position s is not touched again), or step j_i
    itself sends it on to j_{j_i} (and so on). So if F(i) is where the value sent by step i
    ends, F(i) is the next step with target j_i when there is one, else i when j_i = i, else
    F(j_i): chains resolved by pointer doubling. Value v waits at v until the first step that
    targets v; if that step comes before v it is v's final position, else v leaves at step v
    and ends at F(v). Grouping steps by target is one sort of unique keys (target, step).
    """
    n = offsets.size + 1
    index = np.int32 if n < 2**31 else np.int64  # half the memory traffic of the gathers
    steps = np.arange(n, dtype=index)
    target = steps.copy()
    target[:-1] += offsets.astype(index, copy=False)  # the last step is a no-op: j = n - 1
    shift = max(n - 1, 1).bit_length()
    keys = target.astype(np.int64)
    keys <<= shift
    keys |= steps
    keys.sort()
    by_target_step = (keys & ((1 << shift) - 1)).astype(index)
    keys >>= shift
    by_target = keys.astype(index)
    same = by_target[1:] == by_target[:-1]
    grouped = np.flatnonzero(same)
    # where the value sent by each step ends: the next step of its group, else resolved below
    ends = steps.copy()
    has_next = by_target_step[grouped]
    ends[has_next] = by_target_step[grouped + 1]
    resolved = target == steps
    resolved[has_next] = True
    pointer = target
    pointer[resolved] = steps[resolved]
    active = np.flatnonzero(~resolved).astype(index, copy=False)
    while active.size:  # pointer doubling, only on chains not yet at a resolved step
        hop = pointer[pointer[active]]
        pointer[active] = hop
        active = active[~resolved[hop]]
    ends = ends[pointer]
    # the first step targeting each value, when it comes before the value's own step
    first = np.full(n, n, dtype=index)
    starts = np.ones(n, dtype=bool)
    starts[1:] = ~same
    first[by_target[starts]] = by_target_step[starts]
    early = first < steps
    ends[early] = first[early]
    perm = np.empty(n, dtype=np.int64)
    perm[ends] = steps
    return perm
