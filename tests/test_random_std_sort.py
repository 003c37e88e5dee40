"""libstdc++'s std::sort replayed (ember/_random/std_sort.py): torch.sort's unstable CPU order."""

from __future__ import annotations

import numpy as np

from ember._random.std_sort import sort_positions, unstable_argsort

TIED = [0, 1, 1, 0, 1, 4, 2, 0, 0, 4, 3, 1, 4, 2, 3, 2, 1, 3, 2, 2]
# torch.sort(torch.tensor(TIED)) and (..., descending=True) on the CPU, stable=False
TORCH_ASCENDING = [3, 0, 7, 8, 1, 2, 4, 16, 11, 19, 18, 15, 13, 6, 14, 10, 17, 12, 9, 5]
TORCH_DESCENDING = [5, 12, 9, 17, 14, 10, 19, 18, 15, 13, 6, 11, 4, 16, 2, 1, 8, 7, 3, 0]


def test_sort_positions_give_torchs_order_of_ties():
    assert sort_positions(TIED) == TORCH_ASCENDING
    assert sort_positions(TIED, descending=True) == TORCH_DESCENDING


def test_unstable_argsort_replays_only_rows_with_ties():
    data = np.array([TIED, list(range(19, -1, -1))])
    stable = np.argsort(data, axis=-1, kind="stable")
    out = unstable_argsort(data, -1, False, stable)
    assert out[0].tolist() == TORCH_ASCENDING
    assert out[1].tolist() == stable[1].tolist()  # distinct keys: the one sorted order


def test_nans_sort_last_ascending_and_first_descending():
    nan = float("nan")
    assert sort_positions([nan, 1.0, nan, 0.0])[:2] == [3, 1]
    assert sorted(sort_positions([nan, 1.0, nan, 0.0], descending=True)[:2]) == [0, 2]
