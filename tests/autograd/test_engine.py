import threading
import warnings

import numpy as np
import pytest

import ember


def test_scalar_backward_accumulates_into_leaves():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5, 7, 9])


def test_diamond_graph_sums_both_paths():
    x = ember.tensor(2.0, requires_grad=True)
    a = x * 3
    b = x.exp()
    (a * b).backward()
    assert x.grad.item() == pytest.approx(3 * np.exp(2) + 6 * np.exp(2))


def test_shared_subexpression_used_many_times():
    x = ember.tensor([1.0, -2.0], requires_grad=True)
    s = x.sin()
    y = s * s + s * 2 + s
    y.sum().backward()
    expected = (2 * np.sin([1.0, -2.0]) + 3) * np.cos([1.0, -2.0])
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_chain_of_100000_ops_backpropagates():
    x = ember.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 1.0
    y.sum().backward()
    assert x.grad.item() == 1.0


def test_second_backward_without_retain_graph_raises():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4, 8])


def test_saved_tensors_are_released_after_backward():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    node = y.grad_fn
    y.sum().backward()
    assert node._saved is None


def test_non_scalar_backward_needs_gradient():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        (x * 2).backward()
    (x * 2).backward(ember.tensor([1.0, 0.5]))
    np.testing.assert_allclose(x.grad.numpy(), [2, 1])


def test_backward_of_tensor_without_grad_raises():
    with pytest.raises(
        RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"
    ):
        ember.tensor([1.0]).sum().backward()


def test_gradient_shape_mismatch_raises():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(ember.ones(3))


def test_autograd_grad_returns_without_touching_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (g,) = ember.autograd.grad((x**3).sum(), x)
    np.testing.assert_allclose(g.numpy(), [3, 12])
    assert x.grad is None
    assert not g.requires_grad


def test_autograd_grad_unused_input():
    x = ember.ones(2, requires_grad=True)
    z = ember.ones(2, requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ember.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = ember.autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    assert gz is None
    gx, gz = ember.autograd.grad(y, [x, z], materialize_grads=True)
    np.testing.assert_array_equal(gz.numpy(), [0, 0])


def test_autograd_grad_wrt_intermediate_tensor():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    y = (h * h).sum()
    (gh,) = ember.autograd.grad(y, h)
    np.testing.assert_allclose(gh.numpy(), [6, 12])


def test_create_graph_to_third_order():
    x = ember.tensor(2.0, requires_grad=True)
    y = x**4
    (d1,) = ember.autograd.grad(y, x, create_graph=True)
    (d2,) = ember.autograd.grad(d1, x, create_graph=True)
    (d3,) = ember.autograd.grad(d2, x)
    assert (d1.item(), d2.item(), d3.item()) == (32.0, 48.0, 48.0)


def test_backward_create_graph_then_grad_of_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x.sin() * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    g = x.grad
    (gg,) = ember.autograd.grad(g.sum(), x)
    xs = np.array([1.0, 2.0])
    np.testing.assert_allclose(gg.numpy(), 2 * np.cos(xs) - xs * np.sin(xs), rtol=1e-5)


def test_backward_inputs_restricts_accumulation():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    (a * b * 3).sum().backward(inputs=[a])
    np.testing.assert_array_equal(a.grad.numpy(), [3, 3])
    assert b.grad is None


def test_non_leaf_grad_warns_and_retain_grad_keeps_it():
    x = ember.ones(2, requires_grad=True)
    h = x * 2
    k = x * 3
    h.retain_grad()
    (h * k).sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), [3, 3])
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert k.grad is None


def test_hooks_run_in_order_and_can_replace_gradient():
    calls = []
    x = ember.ones(2, requires_grad=True)
    h = x * 2
    h.register_hook(lambda g: calls.append("first") or g * 10)
    handle = h.register_hook(lambda g: calls.append("second"))
    x.register_hook(lambda g: calls.append("leaf") or g + 1)
    h.sum().backward()
    assert calls == ["first", "second", "leaf"]
    np.testing.assert_array_equal(x.grad.numpy(), [21, 21])
    handle.remove()
    calls.clear()
    x.grad = None
    (x * 2).sum().backward()
    assert calls == ["leaf"]


def test_post_accumulate_grad_hook_sees_updated_grad():
    x = ember.ones(2, requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (x * 5).sum().backward()
    np.testing.assert_array_equal(seen[0], [5, 5])


def test_node_hooks_and_next_functions():
    x = ember.ones(2, requires_grad=True)
    y = (x * 2).exp()
    assert y.grad_fn.name() == "ExpBackward0"
    mul_node, nr = y.grad_fn.next_functions[0]
    assert mul_node.name() == "MulBackward0" and nr == 0
    acc = mul_node.next_functions[0][0]
    assert acc.name() == "torch::autograd::AccumulateGrad" and acc.variable is x
    seen = []
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(len(grad_inputs)))
    y.grad_fn.register_prehook(lambda grad_outputs: seen.append("pre"))
    y.sum().backward()
    assert seen == ["pre", 1]


def test_grads_of_leaves_are_independent_objects():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    (a + b).sum().backward()
    assert a.grad is not b.grad
    a.grad.mul_(5)
    np.testing.assert_array_equal(b.grad.numpy(), [1, 1])


def test_user_gradient_is_not_aliased_into_grad():
    x = ember.ones(2, requires_grad=True)
    g = ember.tensor([1.0, 2.0])
    (x + 0).backward(g)
    x.grad.mul_(10)
    np.testing.assert_array_equal(g.numpy(), [1, 2])


def test_grad_mode_is_thread_local():
    results = {}

    def worker():
        results["worker"] = ember.is_grad_enabled()

    with ember.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        results["main"] = ember.is_grad_enabled()
    assert results == {"worker": True, "main": False}


def test_no_grad_enable_grad_set_grad_enabled_and_decorators():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ember.is_grad_enabled()

    @ember.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    ember.set_grad_enabled(False)
    assert not ember.is_grad_enabled()
    ember.set_grad_enabled(True)
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled()
        assert not (x * 2).requires_grad
    assert not ember.is_inference_mode_enabled()


def test_anomaly_mode_names_op_that_produced_nan():
    x = ember.tensor([0.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = x.sqrt() * 0.0
        with pytest.raises(RuntimeError, match="SqrtBackward0.*returned nan"):
            y.sum().backward()


def test_dtype_of_gradient_matches_input():
    x = ember.ones(2, requires_grad=True)
    w = ember.ones(2, dtype=ember.float64, requires_grad=True)
    (x * w).sum().backward()
    assert x.grad.dtype == ember.float32 and w.grad.dtype == ember.float64


def test_broadcast_gradient_is_reduced_by_engine():
    a = ember.ones(3, 1, requires_grad=True)
    b = ember.ones(4, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,)
    np.testing.assert_array_equal(a.grad.numpy(), [[4], [4], [4]])
    np.testing.assert_array_equal(b.grad.numpy(), [3, 3, 3, 3])


def test_leaf_grad_setter_validates():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = ember.ones(3)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
        x.grad = ember.ones(2, dtype=ember.float64)
    x.grad = ember.zeros(2)


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        ember.tensor([1, 2]).requires_grad_()
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad = False
    assert x.is_leaf and not y.is_leaf
    d = y.detach()
    assert d.is_leaf and not d.requires_grad


def test_grad_from_nothing_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = ember.ones(2, requires_grad=True)
        assert x.grad is None


def test_grad_mode_decorators_without_parentheses():
    x = ember.ones(2, requires_grad=True)

    @ember.no_grad
    def doubled(t):
        return t * 2

    @ember.enable_grad
    def tripled(t):
        return t * 3

    assert not doubled(x).requires_grad
    with ember.no_grad():
        assert tripled(x).requires_grad


def test_engine_switches_report_what_programs_set(torch_mod):
    assert (
        ember.autograd.is_multithreading_enabled() is torch_mod.autograd.is_multithreading_enabled()
    )
    assert ember.autograd.is_view_replay_enabled() is torch_mod.autograd.is_view_replay_enabled()
    with ember.autograd.set_multithreading_enabled(False):
        assert ember.autograd.is_multithreading_enabled() is False
    assert ember.autograd.is_multithreading_enabled() is True
    assert ember.autograd.profiler.record_function is ember.profiler.record_function
    assert ember.autograd.anomaly_mode.detect_anomaly is ember.autograd.detect_anomaly


def _accumulation_order(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(
        lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 4), lib.nn.ReLU(), lib.nn.Linear(4, 2)
    )
    order = []
    for name, p in model.named_parameters():
        p.register_post_accumulate_grad_hook(lambda p, name=name: order.append(name))
    model(lib.randn(5, 3)).square().sum().backward()
    return order


def test_leaf_gradients_are_accumulated_as_soon_as_they_are_complete():
    # torch's engine runs AccumulateGrad first: the last layer's parameters come first, each
    # layer's bias before its weight (AddmmBackward0's edges: bias, input, TBackward0(weight))
    assert _accumulation_order(ember) == [
        "4.bias",
        "4.weight",
        "2.bias",
        "2.weight",
        "0.bias",
        "0.weight",
    ]


def test_leaf_accumulation_order_is_torchs(torch_mod):
    assert _accumulation_order(ember) == _accumulation_order(torch_mod)
