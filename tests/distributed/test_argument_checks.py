"""Collectives with wrong arguments raise torch's exception (type and key phrase) before they
communicate, so no rank is left waiting: every case runs on both ranks of one world, one after
the other, and the last one still finds the group working.

The expected types and phrases are those torch 2.x's gloo process group raises for the same calls.
"""

from __future__ import annotations

import pytest

import ember
import ember.distributed as dist

from ._harness import WORLD_SIZE, assert_case, collect_cases, spawn_world


def _raises(kind, phrase: str, call) -> None:
    with pytest.raises(kind, match=phrase):
        call()


def _t(*shape, dtype=None):
    return ember.zeros(*shape, dtype=dtype or ember.float32)


def case_broadcast_from_a_rank_outside_the_world(rank):
    _raises(RuntimeError, "invalid root rank: 5", lambda: dist.broadcast(_t(4), src=5))
    _raises(RuntimeError, "invalid root rank: -1", lambda: dist.broadcast(_t(4), src=-1))
    _raises(RuntimeError, "invalid root rank: 5", lambda: dist.broadcast(_t(4), group_src=5))


def case_broadcast_needs_exactly_one_source(rank):
    _raises(ValueError, "Must specify global_rank or group_rank", lambda: dist.broadcast(_t(4)))
    _raises(
        ValueError,
        "Can't specify both group_rank and global_rank",
        lambda: dist.broadcast(_t(4), src=0, group_src=0),
    )


def case_reduce_into_a_rank_outside_the_world(rank):
    _raises(RuntimeError, "invalid root rank: 5", lambda: dist.reduce(_t(4), dst=5))


def case_a_subgroup_names_a_global_rank_outside_it(rank):
    pair = dist.new_group([0, 1])
    _raises(
        ValueError, "Global rank 5 is not part of group", lambda: dist.broadcast(_t(4), 5, pair)
    )


def case_all_gather_with_a_list_of_the_wrong_length(rank):
    for n in (1, 3):
        out = [_t(4) for _ in range(n)]
        _raises(
            RuntimeError,
            rf"invalid output tensor list at index 0 \(expected length 2, got {n}\)",
            lambda: dist.all_gather(out, _t(4)),  # noqa: B023
        )


def case_all_gather_with_wrong_shapes_or_dtypes(rank):
    _raises(
        RuntimeError,
        r"invalid tensor size at index 0 \(expected \(4\), got \(3\)\)",
        lambda: dist.all_gather([_t(3), _t(3)], _t(4)),
    )
    _raises(
        ValueError,
        "Invalid usage of tensors with different dtypes",
        lambda: dist.all_gather([_t(4, dtype=ember.float64)] * 2, _t(4)),
    )


def case_all_gather_into_tensor_of_the_wrong_size_or_dtype(rank):
    _raises(RuntimeError, "invalid tensor size", lambda: dist.all_gather_into_tensor(_t(7), _t(4)))
    _raises(
        RuntimeError,
        "invalid tensor type",
        lambda: dist.all_gather_into_tensor(_t(8, dtype=ember.float64), _t(4)),
    )


def case_gather_lists(rank):
    # every rank names itself the destination, so every rank checks its list
    _raises(
        RuntimeError,
        "Incorrect output list size 1. Output list size should be 2",
        lambda: dist.gather(_t(4), [_t(4)], dst=rank),
    )
    _raises(
        RuntimeError,
        r"invalid tensor size at index 0 \(expected \(4\), got \(3\)\)",
        lambda: dist.gather(_t(4), [_t(3), _t(3)], dst=rank),
    )
    _raises(
        ValueError,
        "must NOT be specified on non-destination ranks",
        lambda: dist.gather(_t(4), [_t(4), _t(4)], dst=5),
    )
    _raises(RuntimeError, "invalid root rank: 5", lambda: dist.gather(_t(4), dst=5))


def case_scatter_lists(rank):
    _raises(
        RuntimeError,
        "Incorrect input list size 1. Input list size should be 2",
        lambda: dist.scatter(_t(4), [_t(4)], src=rank),
    )
    _raises(
        RuntimeError,
        r"invalid tensor size at index 0 \(expected \(4\), got \(3\)\)",
        lambda: dist.scatter(_t(4), [_t(3), _t(3)], src=rank),
    )
    _raises(
        ValueError,
        "Invalid usage of tensors with different dtypes",
        lambda: dist.scatter(_t(4), [_t(4, dtype=ember.float64)] * 2, src=rank),
    )
    _raises(
        ValueError,
        "must NOT be specified on non-source ranks",
        lambda: dist.scatter(_t(4), [_t(4), _t(4)], src=5),
    )
    _raises(
        ValueError,
        "must be specified on source rank",
        lambda: dist.scatter(_t(4), None, src=rank),
    )


def case_reduce_scatter_sizes(rank):
    _raises(
        RuntimeError,
        "invalid input tensor list size, must be world size",
        lambda: dist.reduce_scatter(_t(4), [_t(4)]),
    )
    _raises(RuntimeError, "invalid tensor size", lambda: dist.reduce_scatter_tensor(_t(4), _t(7)))
    _raises(
        RuntimeError,
        "invalid tensor type",
        lambda: dist.reduce_scatter_tensor(_t(4), _t(8, dtype=ember.float64)),
    )


def case_all_to_all_sizes(rank):
    _raises(
        RuntimeError,
        "input tensor list size 1 does not match world size 2",
        lambda: dist.all_to_all([_t(4)], [_t(4)]),
    )
    _raises(RuntimeError, "same size", lambda: dist.all_to_all_single(_t(4), _t(6)))
    _raises(
        RuntimeError,
        "Split sizes doesn't match total dim 0 size",
        lambda: dist.all_to_all_single(_t(4), _t(4), [1, 1], [3, 3]),
    )


def case_point_to_point_peers(rank):
    _raises(RuntimeError, "invalid destination rank: 5", lambda: dist.send(_t(4), dst=5))
    _raises(RuntimeError, "invalid destination rank: 5", lambda: dist.isend(_t(4), dst=5))
    _raises(RuntimeError, "invalid source rank: 5", lambda: dist.recv(_t(4), src=5))
    _raises(
        ValueError,
        "Invalid destination rank: destination rank should not be the same as the rank of the "
        "current process",
        lambda: dist.send(_t(4), dst=rank),
    )


def case_arguments_that_are_not_tensors_or_reduce_ops(rank):
    _raises(TypeError, "Invalid function argument", lambda: dist.all_reduce([_t(4)]))
    _raises(TypeError, "Invalid function argument", lambda: dist.broadcast(3, src=0))
    _raises(TypeError, "Invalid function argument", lambda: dist.all_gather(_t(4), _t(4)))
    _raises(TypeError, "ReduceOp", lambda: dist.all_reduce(_t(4), op="sum"))


def case_object_collectives(rank):
    _raises(RuntimeError, "invalid root rank: 5", lambda: dist.broadcast_object_list([1], src=5))
    _raises(
        IndexError, "list assignment index out of range", lambda: dist.all_gather_object([None], 1)
    )
    _raises(
        ValueError,
        "must NOT be specified on non-destination ranks",
        lambda: dist.gather_object(1, [None, None], dst=5),
    )
    _raises(
        RuntimeError,
        "invalid root rank: 5",
        lambda: dist.scatter_object_list([None], [1, 2], src=5),
    )
    _raises(
        RuntimeError,
        "Incorrect input list size 1",
        lambda: dist.scatter_object_list([None], [1], src=rank),
    )
    _raises(
        ValueError,
        "scatter_object_output_list to be a list of size at least 1",
        lambda: dist.scatter_object_list([], [1, 2], src=0),
    )
    _raises(RuntimeError, "invalid destination rank: 5", lambda: dist.send_object_list([1], 5))


def case_z_the_group_still_works_after_every_refused_call(rank):
    t = ember.ones(3) * (rank + 1)
    dist.all_reduce(t)
    assert t.tolist() == [3.0] * 3
    gathered = [None] * WORLD_SIZE
    dist.all_gather_object(gathered, rank)
    assert gathered == [0, 1]


CASES = collect_cases(globals())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return spawn_world(tmp_path_factory, __name__)


@pytest.mark.parametrize("name", list(CASES))
def test_invalid_arguments_raise_torchs_error_before_communicating(outcomes, name):
    assert_case(outcomes, name)
