"""The DataLoader's fast paths: batches taken with islice, index tensors built from ints."""

import numpy as np
import pytest

import ember
from ember.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset
from ember.utils.data._fetch import _index_tensor


@pytest.mark.parametrize("n", [0, 1, 6, 7, 9])
@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_groups_like_the_plain_loop(n, drop_last):
    expected, batch = [], []
    for i in range(n):
        batch.append(i)
        if len(batch) == 3:
            expected.append(batch)
            batch = []
    if batch and not drop_last:
        expected.append(batch)
    assert list(BatchSampler(range(n), 3, drop_last)) == expected


def test_index_tensor_from_ints_and_from_other_numbers():
    ints = _index_tensor([3, 0, 2])
    assert ints.dtype == ember.int64 and ints.tolist() == [3, 0, 2]
    mixed = _index_tensor([np.int64(1), 2, ember.tensor(0)])
    assert mixed.dtype == ember.int64 and mixed.tolist() == [1, 2, 0]
    assert _index_tensor([]).shape == (0,)


def test_tensor_dataset_batches_with_numpy_integer_indices():
    data = TensorDataset(ember.arange(10.0).reshape(5, 2), ember.arange(5))
    sampler = [[np.int64(4), np.int64(1)], [0]]
    batches = list(DataLoader(data, batch_sampler=sampler))
    assert batches[0][1].tolist() == [4, 1] and batches[1][0].tolist() == [[0.0, 1.0]]


def test_random_sampler_moves_a_callers_generator_as_torch(torch_mod):
    torch = torch_mod
    mine, theirs = ember.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    order = list(RandomSampler(range(6), generator=mine))
    expected = list(torch.utils.data.RandomSampler(range(6), generator=theirs))
    assert order == expected
    # torch drew a second (empty-remainder) permutation: the next draws agree too
    assert (
        ember.randperm(6, generator=mine).tolist() == torch.randperm(6, generator=theirs).tolist()
    )


def test_shuffled_epochs_follow_torch_after_manual_seed(torch_mod):
    torch = torch_mod
    ember.manual_seed(3)
    torch.manual_seed(3)
    for _ in range(2):
        assert list(RandomSampler(range(9))) == list(torch.utils.data.RandomSampler(range(9)))
