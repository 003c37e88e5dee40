"""ChainDataset, StackDataset, WeightedRandomSampler and DistributedSampler, against torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.utils import data


class Stream(data.IterableDataset):
    def __init__(self, values):
        self.values = values

    def __iter__(self):
        return iter(self.values)

    def __len__(self):
        return len(self.values)


def test_chain_and_stack_datasets():
    chained = data.ChainDataset([Stream([1, 2]), Stream([3])])
    assert list(chained) == [1, 2, 3] and len(chained) == 3
    a, b = data.TensorDataset(ember.arange(3)), [10, 11, 12]
    pairs = data.StackDataset(a, b)
    assert len(pairs) == 3 and pairs[1][1] == 11 and pairs[1][0][0].item() == 1
    named = data.StackDataset(x=a, y=b)
    assert named[2]["y"] == 12
    with pytest.raises(ValueError, match="Size mismatch"):
        data.StackDataset(a, [1])
    loader = data.DataLoader(
        data.StackDataset(x=ember.arange(4.0), y=ember.arange(4)), batch_size=2
    )
    batch = next(iter(loader))
    assert batch["x"].tolist() == [0.0, 1.0] and batch["y"].tolist() == [0, 1]


def test_weighted_random_sampler_follows_the_weights():
    ember.manual_seed(0)
    sampler = data.WeightedRandomSampler([0.0, 1.0, 3.0], num_samples=4000)
    counts = np.bincount(list(sampler), minlength=3)
    assert counts[0] == 0 and 0.70 < counts[2] / 4000 < 0.80 and len(sampler) == 4000
    no_repeat = list(data.WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False))
    assert sorted(no_repeat) == [0, 1, 2]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        data.WeightedRandomSampler([1.0], 0)


@pytest.mark.parametrize("n,replicas,drop_last", [(10, 3, False), (10, 3, True), (4, 4, False)])
def test_distributed_sampler_partition_matches_torch(torch_mod, n, replicas, drop_last):
    from torch.utils.data import DistributedSampler as TorchSampler

    dataset = list(range(n))
    for rank in range(replicas):
        e = data.DistributedSampler(dataset, replicas, rank, shuffle=False, drop_last=drop_last)
        t = TorchSampler(dataset, replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(e) == list(t) and len(e) == len(t)


def test_distributed_sampler_shuffles_per_epoch_and_covers_the_data():
    dataset = list(range(12))
    shares = [data.DistributedSampler(dataset, 3, r, seed=1) for r in range(3)]
    first = [list(s) for s in shares]
    assert sorted(sum(first, [])) == dataset
    for s in shares:
        s.set_epoch(1)
    assert [list(s) for s in shares] != first
    with pytest.raises(ValueError, match="Invalid rank 3"):
        data.DistributedSampler(dataset, 3, 3)
    assert data.get_worker_info() is None


def test_shuffling_without_a_generator_gives_torchs_order(torch_mod):
    orders = []
    for m in (ember, torch_mod):
        m.manual_seed(3)
        plain = list(m.utils.data.RandomSampler(range(10)))
        drawn = list(m.utils.data.RandomSampler(range(10), replacement=True, num_samples=40))
        m.manual_seed(3)
        loader = m.utils.data.DataLoader(
            m.utils.data.TensorDataset(m.arange(8)), batch_size=4, shuffle=True
        )
        orders.append((plain, drawn, [batch[0].tolist() for batch in loader]))
    assert orders[0] == orders[1]
