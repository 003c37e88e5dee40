from collections import namedtuple

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)


def _dataset(n=10):
    return TensorDataset(ember.arange(float(n)).reshape(n, 1), ember.arange(n))


def test_batches_cover_dataset_in_order_and_drop_last():
    batches = list(DataLoader(_dataset(), batch_size=4))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][0].shape == (4, 1)
    assert len(DataLoader(_dataset(), batch_size=4)) == 3
    dropped = list(DataLoader(_dataset(), batch_size=4, drop_last=True))
    assert len(dropped) == 2 and len(DataLoader(_dataset(), batch_size=4, drop_last=True)) == 2


def test_shuffle_with_generator_is_reproducible_and_a_permutation():
    def order(seed):
        g = ember.Generator().manual_seed(seed)
        loader = DataLoader(_dataset(), batch_size=3, shuffle=True, generator=g)
        return [i for _, y in loader for i in y.tolist()]

    assert order(1) == order(1)
    assert sorted(order(1)) == list(range(10)) and order(1) != list(range(10))


def test_default_collate_structures():
    Point = namedtuple("Point", "x y")
    out = default_collate(
        [{"a": 1, "b": [1.5, ember.ones(2)]}, {"a": 2, "b": [2.5, ember.zeros(2)]}]
    )
    assert out["a"].tolist() == [1, 2] and out["a"].dtype == ember.int64
    assert out["b"][0].dtype == ember.float64 and out["b"][1].shape == (2, 2)
    pts = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(pts, Point) and pts.x.tolist() == [1, 3]
    assert default_collate([np.ones(2), np.zeros(2)]).shape == (2, 2)
    assert default_collate(["a", "b"]) == ["a", "b"]


def test_custom_collate_sampler_and_batch_sampler():
    ds = _dataset()
    loader = DataLoader(ds, batch_size=2, collate_fn=lambda items: len(items))
    assert list(loader) == [2] * 5
    bs = BatchSampler(SequentialSampler(range(5)), 2, drop_last=False)
    assert list(bs) == [[0, 1], [2, 3], [4]]
    loader = DataLoader(ds, batch_sampler=bs)
    assert [b[1].tolist() for b in loader] == [[0, 1], [2, 3], [4]]
    loader = DataLoader(ds, sampler=[9, 8], batch_size=None)
    assert [y.item() for _, y in loader] == [9, 8]
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(ds, batch_sampler=bs, batch_size=3)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=[0], shuffle=True)


def test_iterable_dataset():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(), shuffle=True)


def test_subset_concat_and_random_split():
    ds = _dataset()
    sub = Subset(ds, [3, 1])
    assert len(sub) == 2 and sub[0][1].item() == 3
    cat = ConcatDataset([ds, _dataset(3)])
    assert len(cat) == 13 and cat[11][1].item() == 1 and cat[-1][1].item() == 2
    a, b = random_split(ds, [7, 3], generator=ember.Generator().manual_seed(0))
    assert len(a) == 7 and len(b) == 3
    assert sorted(a.indices + b.indices) == list(range(10))
    c, d = random_split(ds, [0.5, 0.5])
    assert len(c) == len(d) == 5
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [3, 3])


def test_map_dataset_subclass():
    class Squares(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return i * i, float(i)

    xs, ys = next(iter(DataLoader(Squares(), batch_size=4)))
    assert xs.tolist() == [0, 1, 4, 9] and ys.dtype == ember.float64


def test_batches_equal_collated_rows_and_match_torch(torch_mod):
    x = np.arange(20.0).reshape(10, 2)
    y = np.arange(10)
    e = list(DataLoader(TensorDataset(ember.tensor(x), ember.tensor(y)), batch_size=4))
    t = list(
        torch_mod.utils.data.DataLoader(
            torch_mod.utils.data.TensorDataset(torch_mod.tensor(x), torch_mod.tensor(y)),
            batch_size=4,
        )
    )
    assert type(e[0]) is type(t[0]) is list
    for be, bt in zip(e, t):
        for ae, at in zip(be, bt):
            np.testing.assert_array_equal(ae.numpy(), at.numpy())
            assert ae.dtype.name == str(at.dtype).split(".")[-1]
    collated = default_collate([ds_row for ds_row in TensorDataset(ember.tensor(x))][:4])
    np.testing.assert_array_equal(collated[0].numpy(), e[0][0].numpy())
