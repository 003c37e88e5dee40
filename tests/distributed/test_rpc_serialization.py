"""``ember.distributed.rpc.serialization``: how tensors, ember's functions and autograd records
travel in an RPC message (no workers needed)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.distributed.rpc import serialization


def _round_trip(obj, recording=False):
    message, sent_grad = serialization.dumps(obj, destination=1)
    # what the other side reads: bytes, not the sender's memory
    received = serialization.Pickled(bytes(message.data), [bytes(b) for b in message.buffers])
    value, received_grad = serialization.loads(received, source=0, recording=recording)
    return value, sent_grad, received_grad


@pytest.mark.parametrize(
    "dtype",
    [
        ember.float32,
        ember.float64,
        ember.float16,
        ember.bfloat16,
        ember.int64,
        ember.uint8,
        ember.bool,
        ember.complex64,
    ],
)
def test_tensors_travel_by_value_with_their_dtype(dtype):
    t = ember.arange(6).reshape(2, 3).to(dtype)
    out, _, _ = _round_trip({"t": t, "other": [1, "two"]})
    assert out["other"] == [1, "two"]
    assert out["t"].dtype == dtype and out["t"].shape == (2, 3)
    assert out["t"].tolist() == t.tolist()
    assert out["t"].numpy().flags.writeable


def test_views_and_scalars_arrive_as_their_values():
    base = ember.arange(12.0).reshape(3, 4)
    out, _, _ = _round_trip((base.t(), base[:, 1], ember.tensor(2.5)))
    np.testing.assert_array_equal(out[0].numpy(), base.t().numpy())
    assert out[1].tolist() == [1.0, 5.0, 9.0]
    assert out[2].item() == 2.5 and out[2].shape == ()


def test_one_tensor_twice_arrives_as_one():
    t = ember.ones(3)
    (a, b), _, _ = _round_trip((t, t))
    assert a is b


def test_requires_grad_and_parameters_are_kept_outside_a_context():
    x = ember.ones(2, requires_grad=True)
    p = nn.Parameter(ember.zeros(2))
    (x2, p2), sent, received = _round_trip((x * 2, p))
    assert sent[1] is p and len(sent) == 2
    assert x2.requires_grad and x2.is_leaf and x2.tolist() == [2.0, 2.0]
    assert isinstance(p2, nn.Parameter) and p2.requires_grad
    assert received[0] is x2 and received[1] is p2


def test_in_a_context_received_tensors_sit_behind_recv_nodes():
    x = ember.ones(2, requires_grad=True)
    (x2,), _, (leaf,) = _round_trip((x,), recording=True)
    assert not x2.is_leaf and type(x2.grad_fn).__name__ == "RecvRpcBackward"
    assert leaf.is_leaf and leaf.requires_grad
    (x2 * 3).sum().backward()
    assert leaf.grad.tolist() == [3.0, 3.0]


def test_ember_functions_travel_by_name_even_when_ember_rebinds_them():
    import ember.nested  # noqa: F401  (wraps some of ember's functions when first used)

    for function in (ember.add, ember.nn.functional.relu, ember.linalg.norm):
        out, _, _ = _round_trip(function)
        assert out is function
