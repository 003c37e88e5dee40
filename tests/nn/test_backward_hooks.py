"""Full backward hooks of a module (ember.nn.modules.backward_hooks), run as torch runs them."""

import warnings

import numpy as np
import pytest

import ember

WRONG_COUNT = "Backward hook returned an invalid number of grad_input"


def _product(m):
    class Product(m.nn.Module):
        def forward(self, a, b):
            return a * b

    return Product()


def _scaled(m):
    class Scaled(m.nn.Module):
        def forward(self, x, factor):
            return x * factor

    return Scaled()


def _linear_backward(m, hook_result):
    m.manual_seed(0)
    layer = m.nn.Linear(2, 2)
    layer.register_full_backward_hook(lambda module, grad_in, grad_out: hook_result(grad_in))
    x = m.randn(3, 2, requires_grad=True)
    layer(x).sum().backward()
    return x.grad


# (id, what the hook returns from grad_input, exception type, ember's message)
BAD = [
    ("two gradients for one input", lambda g: (g[0], g[0]), RuntimeError,
     f"{WRONG_COUNT}, got 2, but expected 1"),
    ("no gradient", lambda g: (), RuntimeError, f"{WRONG_COUNT}, got 0, but expected 1"),
    ("a bare tensor (its length counts)", lambda g: g[0], RuntimeError,
     f"{WRONG_COUNT}, got 3, but expected 1"),
    ("a number", lambda g: 3, TypeError, "object of type 'int' has no len()"),
    ("a number in the tuple", lambda g: (3,), TypeError,
     "expected Variable, but hook returned 'int'"),
    ("a gradient of another size", lambda g: (g[0][:1],), RuntimeError,
     "hook 'hook' has changed the size of value"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("result", "error", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_a_hook_returning_the_wrong_gradients_raises(result, error, message):
    with pytest.raises(error) as info:
        _linear_backward(ember, result)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("result", "error", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_a_hook_returning_the_wrong_gradients_raises_as_torch(result, error, message, torch_mod):
    with pytest.raises(error) as info:
        _linear_backward(torch_mod, result)
    assert message in str(info.value)


def test_a_hook_returning_one_gradient_for_two_inputs_raises(torch_mod):
    for m in (ember, torch_mod):
        module = _product(m)
        module.register_full_backward_hook(lambda mod, grad_in, grad_out: (grad_in[0],))
        a = m.ones(2, requires_grad=True)
        b = m.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match=f"{WRONG_COUNT}, got 1, but expected 2"):
            module(a, b).sum().backward()


def test_a_hook_replacing_the_gradient_with_a_list_is_used(torch_mod):
    grads = [_linear_backward(m, lambda g: [g[0] * 2]).numpy() for m in (ember, torch_mod)]
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_arguments_that_are_not_tensors_get_none(torch_mod):
    """grad_input has one entry per argument, None for a number, as torch's."""
    seen = {}
    for m in (ember, torch_mod):
        module = _scaled(m)

        def hook(mod, grad_in, grad_out, name=m.__name__):
            seen[name] = [None if g is None else g.tolist() for g in grad_in]
            return (grad_in[0] * 10, None)

        module.register_full_backward_hook(hook)
        x = m.ones(2, requires_grad=True)
        module(x, 3.0).sum().backward()
        assert x.grad.tolist() == [30.0, 30.0]
    assert seen["ember"] == seen["torch"] == [[3.0, 3.0], None]


def test_a_pre_hook_returning_the_wrong_number_of_gradients_raises(torch_mod):
    for m in (ember, torch_mod):
        layer = m.nn.Linear(2, 2)
        layer.register_full_backward_pre_hook(lambda mod, grad_out: (grad_out[0], grad_out[0]))
        with pytest.raises(RuntimeError) as info:
            layer(m.ones(1, 2, requires_grad=True)).sum().backward()
        assert "Backward pre hook returned an invalid number of grad_output, got 2, but " in str(
            info.value
        )


def test_without_inputs_needing_grad_a_hook_must_return_none(torch_mod):
    for m in (ember, torch_mod):
        layer = m.nn.Linear(2, 2)
        layer.register_full_backward_hook(lambda mod, grad_in, grad_out: (m.ones(1, 2),))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="should always return None or None for all"):
                layer(m.ones(1, 2)).sum().backward()


def test_without_inputs_needing_grad_the_hook_runs_with_a_warning(torch_mod):
    for m in (ember, torch_mod):
        calls = []
        layer = m.nn.Linear(2, 2)
        layer.register_full_backward_hook(lambda mod, gi, go: calls.append((gi, len(go))))
        with pytest.warns(UserWarning, match="Full backward hook is firing when gradients"):
            layer(m.ones(1, 2)).sum().backward()
        assert calls == [((None,), 1)]
