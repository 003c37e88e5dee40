"""index_add_, index_copy_, index_fill_, scatter_, scatter_add_, masked_fill_ and put_ outside
the graph write only the elements they change, into the tensor's own memory, as PyTorch's
kernels: writers of other elements of one shared tensor (threads; processes over shared
memory, as Hogwild training) keep their writes. Values, views, overlapping sources and errors
stay those of the copying path."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import ember

I = ember.tensor  # noqa: E741

# (name, call writing row ``r`` of a (rows, 8) float tensor to ``v``, read back)
WRITES = {
    "index_add_": lambda t, r, v: t.index_add_(0, I([r]), ember.full((1, 8), 1.0)),
    "index_copy_": lambda t, r, v: t.index_copy_(0, I([r]), ember.full((1, 8), float(v))),
    "index_fill_": lambda t, r, v: t.index_fill_(0, I([r]), float(v)),
    "scatter_": lambda t, r, v: t.scatter_(0, ember.full((1, 8), r), float(v)),
    "scatter_src": lambda t, r, v: t.scatter_(
        0, ember.full((1, 8), r), ember.full((1, 8), v * 1.0)
    ),
    "scatter_add_": lambda t, r, v: t.scatter_add_(0, ember.full((1, 8), r), ember.ones(1, 8)),
    "masked_fill_": lambda t, r, v: t.masked_fill_(ROW_MASKS[r], float(v)),
    "put_": lambda t, r, v: t.put_(ember.arange(8) + 8 * r, ember.full((8,), float(v))),
}
ROW_MASKS = [ember.arange(4).reshape(4, 1).eq(r).expand(4, 8).contiguous() for r in range(4)]


@pytest.mark.parametrize("name", sorted(WRITES))
def test_writers_of_other_rows_keep_their_writes(name):
    write = WRITES[name]
    t = ember.zeros(4, 8)
    lost = []
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def writer(row):
        for i in range(1, 400):
            write(t, row, i)
            if t[row, 3].item() != i:
                lost.append((row, i, t[row, 3].item()))
                return

    try:
        threads = [threading.Thread(target=writer, args=(row,)) for row in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(previous)
    assert lost == []
    assert t.numpy().tolist() == [[399.0] * 8] * 4


def test_written_in_place_into_the_same_memory():
    t = ember.zeros(5, 3)
    before = t.data_ptr()
    version = t._version
    t.index_add_(0, I([1, 1, 4]), ember.ones(3, 3), alpha=2)
    t.index_fill_(1, I([0]), -1.0)
    t.scatter_(1, I([[2], [2], [2], [2], [2]]), 7.0)
    t.masked_fill_(t > 3, 5.0)
    assert t.data_ptr() == before and t._version == version + 4
    assert t.tolist() == [
        [-1.0, 0.0, 5.0], [-1.0, 5.0, 5.0], [-1.0, 0.0, 5.0], [-1.0, 0.0, 5.0], [-1.0, 2.0, 5.0]
    ]  # fmt: skip


def test_a_view_writes_through_to_its_base():
    base = ember.zeros(4, 6)
    view = base[:, ::2]  # not contiguous
    view.index_add_(0, I([0, 3]), ember.ones(2, 3))
    view.scatter_add_(1, I([[0, 0]]), ember.ones(1, 2))
    view.put_(I([5]), I([9.0]))  # (the copying path for a strided view)
    view.index_copy_(1, I([1]), ember.full((4, 1), 3.0))
    want = np.zeros((4, 6), np.float32)
    want[[0, 3], ::2] += 1
    want[0, 0] += 2
    want[1, 4] = 9
    want[:, 2] = 3
    np.testing.assert_array_equal(base.numpy(), want)


def test_a_source_sharing_the_memory_is_read_before_the_write():
    t = ember.arange(6.0).reshape(3, 2)
    t.index_add_(0, I([0, 1, 2]), t)  # every row doubled, none twice
    assert t.tolist() == [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]
    u = ember.arange(4.0)
    u.scatter_(0, I([1, 2, 3]), u)  # u[1:] = old u[:3]
    assert u.tolist() == [0.0, 0.0, 1.0, 2.0]


def test_in_place_equals_out_of_place_for_every_op():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 5)).astype(np.float32)
    idx = I([4, 0, 4, 2])
    src = ember.tensor(rng.standard_normal((4, 5)).astype(np.float32))
    sidx = I(rng.integers(0, 6, (3, 5)))
    ssrc = ember.tensor(rng.standard_normal((3, 5)).astype(np.float32))
    mask = ember.tensor(rng.random((6, 5)) > 0.5)
    cases = [
        ("index_add", (0, idx, src), {"alpha": 0.5}),
        ("index_copy", (0, I([5, 1, 3, 0]), src), {}),
        ("index_fill", (1, I([1, 3]), 2.5), {}),
        ("scatter", (0, sidx, ssrc), {}),
        ("scatter", (0, sidx, 1.5), {"reduce": "add"}),
        ("scatter", (0, sidx, ssrc), {"reduce": "multiply"}),
        ("scatter_add", (0, sidx, ssrc), {}),
        ("masked_fill", (mask, -4.0), {}),
        ("masked_fill", (mask, ember.tensor(3.0)), {}),
        ("put", (I([0, 29, -1]), I([1.0, 2.0, 3.0])), {"accumulate": True}),
    ]
    for name, args, kwargs in cases:
        want = getattr(ember.tensor(a), name)(*args, **kwargs)
        got = ember.tensor(a)
        getattr(got, name + "_")(*args, **kwargs)
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=name)


def test_integer_and_zero_dim_tensors():
    t = ember.zeros(4, dtype=ember.int64)
    t.index_add_(0, I([1, 1]), I([3, 4]), alpha=2)
    t.index_fill_(0, I([3]), -2)
    assert t.tolist() == [0, 14, 0, -2]
    z = ember.tensor(1.0)
    z.index_fill_(0, I([0]), 4.0)
    z.index_add_(0, I([0]), ember.tensor(1.0))
    z.index_copy_(0, I([0]), ember.tensor(8.0))
    assert z.item() == 8.0 and z.dim() == 0


def test_errors_are_those_of_the_copying_path():
    t = ember.zeros(3, 2)
    with pytest.raises(RuntimeError, match="index 3 is out of bounds"):
        t.index_add_(0, I([3]), ember.ones(1, 2))
    with pytest.raises(RuntimeError, match="must have the same scalar type"):
        t.index_add_(0, I([0]), ember.ones(1, 2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        t.masked_fill_(ember.ones(3, 2, dtype=ember.uint8), 1.0)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ember.zeros(2).masked_fill_(ember.ones(3, 2, dtype=ember.bool), 1.0)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds|out of bounds"):
        t.scatter_(0, I([[5, 0]]), 1.0)
    with pytest.raises(IndexError, match="index_copy_"):
        t.index_copy_(0, I([7]), ember.ones(1, 2))
    with pytest.raises(RuntimeError, match="cannot be converted to type int64_t"):
        ember.zeros(2, dtype=ember.int64).index_fill_(0, I([0]), 2.0**70)
    assert t.abs().sum().item() == 0  # nothing written by a refused call


def test_read_only_memory_raises_as_before():
    t = ember.zeros(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element"):
        t.index_fill_(1, I([0]), 1.0)


def test_matches_torch(torch_mod):
    for torch_like in (ember, torch_mod):
        t = torch_like.zeros(4, 3)
        t.index_add_(0, torch_like.tensor([2, 2]), torch_like.ones(2, 3), alpha=3)
        t[1:].scatter_(1, torch_like.tensor([[0], [1], [2]]), 5.0)
        t[:, 0].masked_fill_(torch_like.tensor([True, False, False, True]), -1.0)
        t.t().index_fill_(0, torch_like.tensor([2]), 0.5)
        if torch_like is ember:
            mine = t.numpy().copy()
        else:
            np.testing.assert_array_equal(mine, t.numpy())
