"""What a tensor hook returns is checked as PyTorch checks it, and the error names the hook."""

import functools

import pytest

import ember


def _leaf_wrong_size(lib):
    x = lib.ones(3, requires_grad=True)

    def scale(grad):
        return lib.ones(4)

    x.register_hook(scale)
    (x * 2).sum().backward()


def _leaf_wrong_dtype(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_hook(lambda grad: grad.double())
    (x * 2).sum().backward()


def _leaf_integer_result(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_hook(lambda grad: grad.int())
    (x * 2).sum().backward()


def _leaf_not_a_tensor(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_hook(lambda grad: 3)
    (x * 2).sum().backward()


def _leaf_scalar_given_a_vector(lib):
    x = lib.ones((), requires_grad=True)
    x.register_hook(lambda grad: lib.ones(1))
    (x * 2).backward()


def _nonleaf_wrong_size(lib):
    x = lib.ones(3, requires_grad=True)
    y = x * 2

    def my_hook(grad):
        return lib.ones(5)

    y.register_hook(my_hook)
    y.sum().backward()


def _nonleaf_broadcastable_size(lib):
    x = lib.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda grad: lib.ones(1))
    y.sum().backward()


def _nonleaf_wrong_dtype(lib):
    x = lib.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda grad: grad.to(lib.int64))
    y.sum().backward()


def _nonleaf_returns_a_list(lib):
    x = lib.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda grad: [1.0, 2.0, 3.0])
    y.sum().backward()


def _second_output_of_split(lib):
    x = lib.ones(4, requires_grad=True)
    a, b = x.split(2)

    def on_b(grad):
        return lib.ones(3)

    b.register_hook(on_b)
    (a.sum() + b.sum()).backward()


class _CallableHook:
    def __init__(self, lib):
        self.lib = lib

    def __call__(self, grad):
        return self.lib.ones(4)


def _callable_object_hook(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_hook(_CallableHook(lib))
    (x * 2).sum().backward()


def _partial_hook(lib):
    def scaled(grad, factor):
        return lib.ones(4) * factor

    x = lib.ones(3, requires_grad=True)
    x.register_hook(functools.partial(scaled, factor=2))
    (x * 2).sum().backward()


def _through_autograd_grad(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_hook(lambda grad: lib.ones(4))
    lib.autograd.grad((x * 2).sum(), x)


def _post_accumulate_hook_returns_a_tensor(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda p: lib.ones(3))
    (x * 2).sum().backward()


def _post_accumulate_hook_returns_another_size(lib):
    x = lib.ones(3, requires_grad=True)

    def on_accumulated(p):
        return lib.ones(4)

    x.register_post_accumulate_grad_hook(on_accumulated)
    (x * 2).sum().backward()


def _post_accumulate_hook_returns_an_int(lib):
    x = lib.ones(3, requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda p: 3)
    (x * 2).sum().backward()


CASES = [
    _post_accumulate_hook_returns_a_tensor,
    _post_accumulate_hook_returns_another_size,
    _post_accumulate_hook_returns_an_int,
    _leaf_wrong_size,
    _leaf_wrong_dtype,
    _leaf_integer_result,
    _leaf_not_a_tensor,
    _leaf_scalar_given_a_vector,
    _nonleaf_wrong_size,
    _nonleaf_broadcastable_size,
    _nonleaf_wrong_dtype,
    _nonleaf_returns_a_list,
    _second_output_of_split,
    _callable_object_hook,
    _partial_hook,
    _through_autograd_grad,
]


def _error_of(case, lib):
    with pytest.raises(Exception) as info:
        case(lib)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.lstrip("_"))
def test_hook_result_error_matches_torch(case, torch_mod):
    torch_type, torch_message = _error_of(case, torch_mod)
    ember_type, ember_message = _error_of(case, ember)
    assert ember_type is torch_type
    assert ember_message == torch_message.replace("torch.", "ember.")


def test_wrong_size_from_a_leaf_hook_names_the_hook():
    x = ember.ones(3, requires_grad=True)

    def widen(grad):
        return ember.ones(4)

    x.register_hook(widen)
    with pytest.raises(RuntimeError, match=r"^hook 'widen' has changed the size of value$"):
        (x * 2).sum().backward()
    assert x.grad is None


def test_wrong_size_from_a_nonleaf_hook_blames_the_hook_not_the_node():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda grad: ember.ones(5))
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert str(info.value) == "hook '<lambda>' has changed the size of value"
    assert "MulBackward0" not in str(info.value)


def test_post_accumulate_hook_result_is_refused_after_the_gradient_landed():
    x = ember.ones(3, requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda p: p.grad)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks should return None"):
        (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_valid_replacement_and_none_results_are_used():
    x = ember.ones(3, requires_grad=True)
    x.register_hook(lambda grad: grad * 10)
    x.register_hook(lambda grad: None)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [20.0, 20.0, 20.0]


@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA device")
def test_hook_moving_the_gradient_to_another_device_is_a_type_change():
    x = ember.ones(3, requires_grad=True)
    x.register_hook(lambda grad: grad.cuda())
    with pytest.raises(RuntimeError, match="has changed the type of value"):
        (x * 2).sum().backward()
