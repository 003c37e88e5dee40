"""Basic indexing records one node named as torch's last op of its decomposition (Select,
Slice, Unsqueeze, Alias); slice_scatter honours step."""

from __future__ import annotations

import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

KEYS = [
    1,
    (slice(None), slice(1, 3)),
    (0, 1),
    [0, 1],
    (Ellipsis, None),
    (slice(1, None), 2),
    slice(None),
    Ellipsis,
    None,
    (1, None),
    (None, 1),
    (slice(None), slice(None)),
    slice(None, None, 2),
    (slice(0, 3),),
    (Ellipsis, 1),
    (slice(-2, None), slice(0, 4)),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_indexing_node_names_match_torch(torch_mod, key):
    x = ember.ones(3, 4, requires_grad=True)
    t = torch_mod.ones(3, 4, requires_grad=True)
    assert x[key].grad_fn.name() == t[key].grad_fn.name()


def test_named_view_nodes_keep_the_index_gradient():
    compare_with_torch(lambda m, x: x[1:, 2] * x[0, :1], arrays_for([(3, 4)]))
    check_gradients(lambda m, x: x[None, 1, ::2], arrays_for([(3, 4)]), noncontiguous=True)


@pytest.mark.parametrize(
    "dim,start,end,step,src_shape",
    [
        (0, 2, None, 3, (2, 3)),
        (1, 0, 3, 2, (8, 2)),
        (1, None, None, 1, (8, 3)),
        (0, -4, -1, 2, (2, 3)),
    ],
)
def test_slice_scatter_with_step_matches_torch(dim, start, end, step, src_shape):
    def fn(m, x, s):
        return m.slice_scatter(x, s, dim, start, end, step)

    arrays = arrays_for([(8, 3), src_shape], seed=4)
    compare_with_torch(fn, arrays)
    check_gradients(fn, arrays)


def test_slice_scatter_shape_error_matches_torch():
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice"):
        ember.slice_scatter(ember.zeros(8), ember.ones(3), start=2, step=3)
