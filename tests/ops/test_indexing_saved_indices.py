"""Index and mask tensors that indexing ops save for backward carry their version: an in-place
change between forward and backward raises PyTorch's error instead of moving the gradient."""

import numpy as np
import pytest

import ember

MODIFIED = "modified by an inplace operation"
SECOND_TIME = "backward through the graph a second time"


def _change(t) -> None:
    t.logical_not_() if str(t.dtype).endswith("bool") else t.add_(1)


# name -> (fn(lib) -> (output, the index or mask tensor, the leaves), node name in ember)
def _getitem(lib):
    x = lib.arange(5.0, requires_grad=True)
    idx = lib.tensor([0, 1, 2])
    return x[idx], idx, (x,)


def _getitem_mask(lib):
    x = lib.arange(5.0, requires_grad=True)
    mask = lib.tensor([True, False, True, False, True])
    return x[mask], mask, (x,)


def _getitem_two_indices(lib):
    x = lib.arange(15.0).reshape(5, 3).requires_grad_()
    idx = lib.tensor([0, 1, 2])
    return x[idx, 1], idx, (x,)


def _gather(lib):
    x = lib.arange(12.0).reshape(3, 4).requires_grad_()
    idx = lib.tensor([[0, 1], [1, 2], [0, 0]])
    return lib.gather(x, 1, idx), idx, (x,)


def _masked_fill(lib):
    x = lib.arange(5.0, requires_grad=True)
    mask = lib.tensor([True, False, True, False, True])
    return x.masked_fill(mask, 0.0), mask, (x,)


def _masked_fill_inplace(lib):
    x = lib.arange(5.0, requires_grad=True)
    mask = lib.tensor([True, False, True, False, True])
    return (x * 1).masked_fill_(mask, 0.0), mask, (x,)


def _masked_select(lib):
    x = lib.arange(5.0, requires_grad=True)
    mask = lib.tensor([True, False, True, False, True])
    return lib.masked_select(x, mask), mask, (x,)


def _masked_scatter(lib):
    x = lib.arange(5.0, requires_grad=True)
    src = lib.ones(5, requires_grad=True)
    mask = lib.tensor([True, False, True, False, True])
    return lib.masked_scatter(x, mask, src), mask, (x, src)


def _index_select(lib):
    x = lib.arange(5.0, requires_grad=True)
    idx = lib.tensor([0, 1, 2])
    return lib.index_select(x, 0, idx), idx, (x,)


def _index_add(lib):
    x = lib.arange(5.0, requires_grad=True)
    src = lib.ones(3, requires_grad=True)
    idx = lib.tensor([0, 1, 2])
    return lib.index_add(x, 0, idx, src), idx, (x, src)


def _index_fill(lib):
    x = lib.arange(5.0, requires_grad=True)
    idx = lib.tensor([0, 1, 2])
    return x.index_fill(0, idx, -1.0), idx, (x,)


def _scatter(lib):
    x = lib.arange(12.0).reshape(3, 4).requires_grad_()
    src = lib.ones(3, 2, requires_grad=True)
    idx = lib.tensor([[0, 1], [1, 2], [2, 1]])
    return lib.scatter(x, 1, idx, src), idx, (x, src)


def _scatter_value(lib):
    x = lib.arange(12.0).reshape(3, 4).requires_grad_()
    idx = lib.tensor([[0, 1], [1, 2], [2, 1]])
    return lib.scatter(x, 1, idx, 5.0), idx, (x,)


def _scatter_add(lib):
    x = lib.arange(12.0).reshape(3, 4).requires_grad_()
    src = lib.ones(3, 2, requires_grad=True)
    idx = lib.tensor([[0, 1], [1, 2], [2, 1]])
    return lib.scatter_add(x, 1, idx, src), idx, (x, src)


def _scatter_reduce(lib):
    x = lib.arange(12.0).reshape(3, 4).requires_grad_()
    src = lib.ones(3, 2, requires_grad=True)
    idx = lib.tensor([[0, 1], [1, 2], [2, 1]])
    return x.scatter_reduce(1, idx, src, "sum"), idx, (x, src)


def _take(lib):
    x = lib.arange(5.0, requires_grad=True)
    idx = lib.tensor([0, 1, 2])
    return lib.take(x, idx), idx, (x,)


def _take_along_dim_flat(lib):
    x = lib.arange(5.0, requires_grad=True)
    idx = lib.tensor([0, 1, 2])
    return lib.take_along_dim(x, idx), idx, (x,)


def _embedding(lib):
    w = lib.arange(15.0).reshape(5, 3).requires_grad_()
    idx = lib.tensor([0, 1, 2])
    return lib.nn.functional.embedding(idx, w), idx, (w,)


def _nll_loss(lib):
    x = lib.arange(12.0).reshape(3, 4).requires_grad_()
    target = lib.tensor([0, 1, 2])
    return lib.nn.functional.nll_loss(x, target, reduction="none"), target, (x,)


def _cross_entropy(lib):
    x = lib.arange(12.0).reshape(3, 4).requires_grad_()
    target = lib.tensor([0, 1, 2])
    return lib.nn.functional.cross_entropy(x, target), target, (x,)


CASES = {
    "getitem": (_getitem, "IndexBackward0"),
    "getitem_mask": (_getitem_mask, "IndexBackward0"),
    "getitem_two_indices": (_getitem_two_indices, "IndexBackward0"),
    "gather": (_gather, "GatherBackward0"),
    "masked_fill": (_masked_fill, "MaskedFillBackward0"),
    "masked_fill_": (_masked_fill_inplace, "MaskedFillBackward0"),
    "masked_select": (_masked_select, "IndexBackward0"),
    "masked_scatter": (_masked_scatter, "MaskedScatterBackward0"),
    "index_select": (_index_select, "IndexSelectBackward0"),
    "index_add": (_index_add, "IndexAddBackward0"),
    "index_fill": (_index_fill, "IndexFillBackward0"),
    "scatter": (_scatter, "ScatterBackward0"),
    "scatter_value": (_scatter_value, "ScatterBackward1"),
    "scatter_add": (_scatter_add, "ScatterAddBackward0"),
    "scatter_reduce": (_scatter_reduce, "ScatterReduceBackward0"),
    "take": (_take, "IndexBackward0"),
    "take_along_dim_flat": (_take_along_dim_flat, "GatherBackward0"),
    "embedding": (_embedding, "EmbeddingBackward0"),
    "nll_loss": (_nll_loss, "NllLossBackward0"),
    "cross_entropy": (_cross_entropy, "NllLossBackward0"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_index_changed_in_place_before_backward_raises(case):
    make, node_name = CASES[case]
    out, index, _ = make(ember)
    _change(index)
    with pytest.raises(RuntimeError, match=MODIFIED) as info:
        out.sum().backward()
    message = str(info.value)
    assert f"is at version 1; expected version 0 instead (saved by {node_name})" in message
    kind = "Bool" if index.dtype == ember.bool else "Long"
    assert f"[ember.{kind}Tensor {list(index.shape)}]" in message


@pytest.mark.parametrize("case", list(CASES))
def test_index_changed_in_place_raises_as_torch(case, torch_mod):
    make, _ = CASES[case]
    out, index, _ = make(torch_mod)
    _change(index)
    with pytest.raises(RuntimeError, match=MODIFIED):
        out.sum().backward()


@pytest.mark.parametrize("case", list(CASES))
def test_unchanged_index_gives_torch_gradients(case, torch_mod):
    grads = []
    for lib in (ember, torch_mod):
        out, _, leaves = CASES[case][0](lib)
        (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
        grads.append([leaf.grad.numpy() for leaf in leaves])
    assert len(grads[0]) == len(grads[1])
    for ours, theirs in zip(grads[0], grads[1]):
        np.testing.assert_allclose(ours, theirs)


@pytest.mark.parametrize("case", ["getitem", "gather", "masked_fill", "index_select"])
def test_second_backward_without_retain_graph_raises(case, torch_mod):
    for lib in (ember, torch_mod):
        out, _, _ = CASES[case][0](lib)
        loss = out.sum()
        loss.backward()
        with pytest.raises(RuntimeError, match=SECOND_TIME):
            loss.backward()


def test_index_changed_before_the_op_is_fine():
    x = ember.arange(5.0, requires_grad=True)
    idx = ember.tensor([0, 1])
    idx.add_(1)  # version 1 when saved: only later changes count
    x[idx].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 1.0, 1.0, 0.0, 0.0])


def test_index_changed_after_backward_is_fine():
    x = ember.arange(5.0, requires_grad=True)
    idx = ember.tensor([0, 1])
    x.gather(0, idx).sum().backward()
    idx.add_(1)
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0, 0.0, 0.0, 0.0])


def test_index_changed_without_grad_is_fine():
    x = ember.arange(5.0)
    idx = ember.tensor([0, 1])
    y = x[idx]
    idx.add_(1)
    assert y.tolist() == [0.0, 1.0]


def test_take_along_dim_saves_its_own_wrapped_indices(torch_mod):
    """take_along_dim along a dim wraps negative indices into a new tensor (as torch): a later
    change of the caller's indices neither raises nor moves the gradient."""
    grads = []
    for lib in (ember, torch_mod):
        x = lib.arange(12.0).reshape(3, 4).requires_grad_()
        idx = lib.tensor([[0], [1], [-1]])
        y = (lib.take_along_dim(x, idx, 1) * lib.tensor([[1.0], [2.0], [3.0]])).sum()
        idx.add_(1)
        y.backward()
        grads.append(x.grad.numpy())
    expected = [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 0, 3]]
    np.testing.assert_allclose(grads[0], expected)
    np.testing.assert_allclose(grads[1], expected)


def test_double_backward_sees_an_index_changed_in_place():
    x = ember.arange(5.0, requires_grad=True)
    idx = ember.tensor([0, 1])
    (g,) = ember.autograd.grad((x[idx] ** 2).sum(), x, create_graph=True)
    idx.add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED):
        g.sum().backward()
