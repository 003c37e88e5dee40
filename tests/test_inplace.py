import sys
import threading

import numpy as np
import pytest

import ember
from tests.helpers import compare_with_torch


def test_inplace_on_leaf_requiring_grad_raises():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="a leaf Variable that requires grad is being used in an in-place operation.",
    ):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x[0] = 3.0
    with ember.no_grad():
        x.add_(1)
    assert x.tolist() == [2.0, 2.0]


def test_inplace_on_view_of_leaf_raises():
    x = ember.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)


def test_modifying_saved_tensor_raises_with_versions():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    y = h * h
    h.add_(1)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    message = str(info.value)
    assert (
        "one of the variables needed for gradient computation has been modified by an "
        "inplace operation" in message
    )
    assert (
        "[ember.FloatTensor [2]], which is output 0 of AddBackward0, is at version 1; "
        "expected version 0 instead" in message
    )


def test_modifying_saved_output_raises():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_that_clobbers_nothing_saved_works_like_torch(torch_mod):
    def run(m):
        x = m.tensor([1.0, -2.0, 3.0], dtype=m.float64, requires_grad=True)
        w = m.tensor([0.5, 0.25, 2.0], dtype=m.float64, requires_grad=True)
        h = x * 2
        h.add_(w)  # add saves nothing
        h.mul_(w)  # saves the old h (a copy) and w
        h.sub_(1, alpha=2)
        h.clamp_(min=-1.0)
        h[0] = h[1] * 3
        h.relu_()  # saves its output; nothing writes h afterwards
        (h * h).sum().backward()
        return h.detach().numpy().copy(), x.grad.numpy(), w.grad.numpy()

    for e, t in zip(run(ember), run(torch_mod)):
        np.testing.assert_allclose(e, t)


def test_inplace_on_views_rewrites_base_graph_like_torch(torch_mod):
    def run(m):
        x = m.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=m.float64, requires_grad=True)
        w = m.tensor([2.0, -1.0], dtype=m.float64, requires_grad=True)
        base = x * 1
        col = base[:, 1]
        col.mul_(w)  # CopySlices on base
        base.t()[2].add_(10.0)  # view of a view
        row = base.view(-1)[:3]
        row.exp_()
        loss = (base * base).sum() + col.sum()
        loss.backward()
        return (
            base.detach().numpy().copy(),
            x.grad.numpy(),
            w.grad.numpy(),
            base.grad_fn.name(),
            col.grad_fn is not None,
        )

    e, t = run(ember), run(torch_mod)
    for a, b in zip(e[:3], t[:3]):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    assert e[3] == t[3] == "torch::autograd::CopySlices" and e[4]


def test_inplace_writes_into_leaf_without_grad_makes_it_non_leaf():
    w = ember.tensor([3.0], requires_grad=True)
    buf = ember.zeros(2)
    buf[1] = w * 2
    assert buf.requires_grad and not buf.is_leaf
    buf.sum().backward()
    assert w.grad.item() == 2.0


def test_inplace_dtype_rules_match_torch(torch_mod):
    for m in (ember, torch_mod):
        x = m.tensor([1, 2])
        with pytest.raises(
            RuntimeError, match="result type Float can't be cast to the desired output type Long"
        ):
            x.add_(1.5)
        x.add_(2)
        assert x.tolist() == [3, 4]
        f = m.tensor([1.0, 2.0])
        f.mul_(m.tensor([2, 3]))
        assert f.tolist() == [2.0, 6.0] and f.dtype == m.float32


def test_inplace_shape_error_like_torch():
    x = ember.ones(3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x.add_(ember.ones(2, 3))


def test_fill_zero_copy_and_random_fills():
    x = ember.empty(2, 3)
    x.fill_(2.5)
    assert x.tolist() == [[2.5] * 3] * 2
    x.zero_()
    assert x.sum().item() == 0
    x.copy_(ember.tensor([1, 2, 3]))
    assert x.tolist() == [[1.0, 2.0, 3.0]] * 2
    x.normal_(0, 1)
    assert x.std().item() > 0
    src = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = ember.zeros(2, 3)
    y.copy_(src)
    (y * 2).sum().backward()
    assert src.grad.tolist() == [4.0, 4.0, 4.0]


def test_version_counter_bumps_and_detach_shares_it():
    x = ember.ones(3)
    d = x.detach()
    x.add_(1)
    assert x._version == d._version == 1
    assert x.data._version == 0  # .data is a fresh counter, as in PyTorch


def test_writing_into_expanded_tensor_is_an_error():
    x = ember.ones(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.add_(1)


def test_iadd_operators_are_in_place():
    x = ember.ones(2)
    y = x
    y += 1
    y *= 3
    y -= 1
    y /= 5
    assert y is x and x.tolist() == [1.0, 1.0]


def test_unary_inplace_variants_match_torch():
    a = np.array([[0.5, 1.5], [2.0, 0.25]])
    for name in (
        "exp_",
        "log_",
        "sqrt_",
        "sigmoid_",
        "tanh_",
        "neg_",
        "abs_",
        "sin_",
        "reciprocal_",
        "floor_",
    ):
        compare_with_torch(lambda m, t: getattr(t * 1, name)(), [a])


@pytest.mark.parametrize("overwrite", [lambda t: t.fill_(2.0), lambda t: t.zero_()])
def test_overwritten_tensor_gets_a_zero_gradient_as_torch(overwrite):
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    overwrite(x.clone()).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


def test_fill_forward_tangent_is_zero_or_the_values():
    import ember.autograd.forward_ad as fwad

    x, v = ember.tensor([1.0, 2.0]), ember.tensor(5.0)
    with fwad.dual_level():
        dx = fwad.make_dual(x, ember.ones(2))
        assert fwad.unpack_dual(ember.fill(dx, 2.0)).tangent.tolist() == [0.0, 0.0]
        dv = fwad.make_dual(v, ember.tensor(3.0))
        assert fwad.unpack_dual(x.clone().fill_(dv)).tangent.tolist() == [3.0, 3.0]


def test_addbmm_inplace_resizes_self_to_the_result_as_torch():
    # torch's addbmm_ writes through addbmm.out: self (broadcast into β·self) takes the shape
    base = ember.full((1,), 7.0, requires_grad=True)
    s = base.clone()
    out = s.addbmm_(ember.ones(2, 3, 4), ember.ones(2, 4, 5))
    assert out is s and tuple(s.shape) == (3, 5) and s[0, 0].item() == 15.0
    out.sum().backward()
    assert base.grad.tolist() == [15.0]
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ember.zeros(1).addmm_(ember.ones(3, 4), ember.ones(4, 5))  # addmm_ does not resize


def test_setitem_writes_only_the_elements_its_key_selects():
    # two writers of disjoint elements of one tensor (threads here, processes over shared
    # memory in tests/multiprocessing) keep each other's writes, as in PyTorch
    t = ember.zeros(2, 1000)
    lost = []
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)

    def writer(row):
        for i in range(1, 3000):
            t[row, 0] = float(i)
            if t[row, 0].item() != i:
                lost.append((row, i))
                return

    try:
        threads = [threading.Thread(target=writer, args=(row,)) for row in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(previous)
    assert lost == []
    assert t[:, 0].tolist() == [2999.0, 2999.0] and t[:, 1:].abs().sum().item() == 0


def test_setitem_reads_its_value_before_writing_and_counts_a_version():
    t = ember.arange(5.0)
    view = t[2:]
    t[1:] = t[:-1]  # the value overlaps the written elements
    assert t.tolist() == [0.0, 0.0, 1.0, 2.0, 3.0] and view.tolist() == [1.0, 2.0, 3.0]
    assert t._version == 1
    t.index_put_((ember.tensor([0, 0, 4]),), ember.tensor([1.0, 2.0, 3.0]), accumulate=True)
    assert t.tolist() == [3.0, 0.0, 1.0, 2.0, 6.0] and t._version == 2
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.zeros(3).expand(2, 3)[0] = 1.0
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 5"):
        t[ember.tensor([5])] = 1.0
    assert t.tolist() == [3.0, 0.0, 1.0, 2.0, 6.0] and t._version == 2
