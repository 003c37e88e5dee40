"""index_put saves its index tensors: an in-place change after the op raises in backward."""

import numpy as np
import pytest

import ember

MODIFIED = "modified by an inplace operation"


def _put(lib, mode: str):
    x = lib.zeros(5, requires_grad=True)
    v = lib.tensor([1.0, 2.0], requires_grad=True)
    idx = lib.tensor([1, 3])
    if mode == "setitem":
        y = x.clone()
        y[idx] = v
    elif mode == "index_put_":
        y = x.clone().index_put_((idx,), v)
    elif mode == "accumulate":
        y = lib.index_put(x, (idx,), v, accumulate=True)
    elif mode == "mask":
        idx = lib.tensor([False, True, False, True, False])
        y = lib.index_put(x, (idx,), v)
    else:
        y = lib.index_put(x, (idx,), v)
    return x, v, idx, y


MODES = ["setitem", "index_put", "index_put_", "accumulate", "mask"]


@pytest.mark.parametrize("mode", MODES)
def test_index_modified_in_place_after_index_put_raises(mode):
    x, v, idx, y = _put(ember, mode)
    idx.logical_not_() if mode == "mask" else idx.zero_()
    with pytest.raises(RuntimeError, match=MODIFIED) as info:
        (y * ember.arange(5.0)).sum().backward()
    assert "IndexPutBackward0" in str(info.value)
    assert "is at version 1; expected version 0" in str(info.value)


@pytest.mark.parametrize("mode", MODES)
def test_index_modified_in_place_matches_torch(mode):
    torch = pytest.importorskip("torch")
    _, _, idx, y = _put(torch, mode)
    idx.logical_not_() if mode == "mask" else idx.zero_()
    with pytest.raises(RuntimeError, match=MODIFIED):
        (y * torch.arange(5.0)).sum().backward()


@pytest.mark.parametrize("mode", MODES)
def test_unmodified_index_gives_torch_gradients(mode):
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (ember, torch):
        x, v, _, y = _put(lib, mode)
        (y * lib.arange(5.0)).sum().backward()
        grads.append((x.grad.numpy(), v.grad.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0])
    np.testing.assert_allclose(grads[0][1], grads[1][1])


def test_index_modified_before_the_op_is_fine():
    x = ember.zeros(4, requires_grad=True)
    idx = ember.tensor([0, 1])
    idx.add_(1)  # version 1 when saved: only later changes count
    y = ember.index_put(x, (idx,), ember.tensor([5.0, 6.0]))
    (y * ember.arange(4.0)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 0.0, 3.0])


def test_second_backward_without_retain_graph_raises_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (ember, torch):
        x, _, _, y = _put(lib, "index_put")
        loss = y.sum()
        loss.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            loss.backward()


def test_retain_graph_allows_a_second_backward():
    x, v, _, y = _put(ember, "index_put")
    loss = (y * ember.arange(5.0)).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 4.0, 0.0, 8.0])
    np.testing.assert_allclose(v.grad.numpy(), [2.0, 6.0])


def test_slice_key_saves_no_index():
    x = ember.zeros(4, requires_grad=True)
    y = x.clone()
    y[1:3] = ember.tensor([1.0, 2.0])
    loss = (y * ember.arange(4.0)).sum()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 0.0, 3.0])
