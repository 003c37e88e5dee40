import numpy as np
import pytest

import ember
from ember.autograd import Function, once_differentiable


class MyReLU(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x > 0)


class Scale(Function):
    @staticmethod
    def forward(ctx, x, factor: float):
        ctx.factor = factor
        return x * factor

    @staticmethod
    def backward(ctx, g):
        return g * ctx.factor, None


class SplitTwo(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        return g1 * 2 + g2 * 3


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x**2


def test_custom_relu_forward_backward_and_name():
    x = ember.tensor([-1.0, 2.0], requires_grad=True)
    y = MyReLU.apply(x)
    assert y.grad_fn.name() == "MyReLUBackward"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1])


def test_gradcheck_and_gradgradcheck_on_user_function():
    x = ember.tensor([0.5, -1.5, 2.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(Cube.apply, (x,))
    assert ember.autograd.gradgradcheck(Cube.apply, (x,))


def test_non_tensor_arguments_get_none_gradient():
    x = ember.ones(2, requires_grad=True)
    Scale.apply(x, 4.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4, 4])


def test_multiple_outputs():
    x = ember.ones(2, requires_grad=True)
    a, b = SplitTwo.apply(x)
    (a + b).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5, 5])


def test_only_one_output_used_materializes_zero_for_the_other():
    x = ember.ones(2, requires_grad=True)
    a, _ = SplitTwo.apply(x)
    a.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2])


def test_needs_input_grad_and_set_materialize_grads():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b):
            seen["needs"] = ctx.needs_input_grad
            ctx.set_materialize_grads(False)
            return a * b, a + b

        @staticmethod
        def backward(ctx, g1, g2):
            seen["g2"] = g2
            return g1, None

    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2)
    out, _ = Probe.apply(a, b)
    out.sum().backward()
    assert seen["needs"] == (True, False)
    assert seen["g2"] is None


def test_wrong_number_of_gradients_is_a_clear_error():
    class Bad(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    a, b = ember.ones(2, requires_grad=True), ember.ones(2, requires_grad=True)
    with pytest.raises(
        RuntimeError, match="returned an incorrect number of gradients \\(expected 2, got 1\\)"
    ):
        Bad.apply(a, b).sum().backward()


def test_wrong_shape_of_gradient_is_a_clear_error():
    class BadShape(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return ember.ones(5)

    a = ember.ones(2, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="returned an invalid gradient at index 0 - got \\[5\\] "
        "but expected shape compatible with \\[2\\]",
    ):
        BadShape.apply(a).sum().backward()


def test_wrong_dtype_of_gradient_is_a_clear_error():
    class BadDtype(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return ember.ones(2, dtype=ember.int64)

    a = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="expected dtype ember.float32 but got ember.int64"):
        BadDtype.apply(a).sum().backward()


def test_gradient_for_non_tensor_input_is_an_error():
    class BadNone(Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2"):
        BadNone.apply(ember.ones(2, requires_grad=True), 3.0).sum().backward()


def test_mark_dirty_in_place_function():
    class AddOneInPlace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    base = ember.ones(2, requires_grad=True)
    x = base * 1
    y = AddOneInPlace.apply(x)
    assert y is x and x.grad_fn.name() == "AddOneInPlaceBackward"
    (y * 3).sum().backward()
    np.testing.assert_array_equal(base.grad.numpy(), [3, 3])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        AddOneInPlace.apply(ember.ones(2, requires_grad=True))


def test_mark_non_differentiable_output():
    class ArgMaxToo(Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax()
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            return g * 2

    x = ember.tensor([1.0, 3.0], requires_grad=True)
    y, idx = ArgMaxToo.apply(x)
    assert y.requires_grad and not idx.requires_grad


def test_once_differentiable_blocks_double_backward():
    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2 * x

    x = ember.tensor([3.0], requires_grad=True)
    # the incoming gradient (x) requires grad, so the result must refuse a second backward
    (g,) = ember.autograd.grad((Square.apply(x) * x).sum(), x, create_graph=True)
    assert g.item() == 27.0
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        g.sum().backward()


def test_modifying_saved_input_is_detected():
    x = ember.ones(2, requires_grad=True)
    h = x * 1
    y = MyReLU.apply(h)
    h.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_setup_context_style():
    class Mul(Function):
        @staticmethod
        def forward(a, b):
            return a * b

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    a = ember.tensor([2.0], requires_grad=True)
    b = ember.tensor([5.0], requires_grad=True)
    Mul.apply(a, b).backward()
    assert (a.grad.item(), b.grad.item()) == (5.0, 2.0)


def test_same_function_in_torch_gives_same_gradients(torch_mod):
    def run(m):
        class Fn(m.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.save_for_backward(x, y)
                return x * y.exp()

            @staticmethod
            def backward(ctx, g):
                x, y = ctx.saved_tensors
                return g * y.exp(), g * x * y.exp()

        x = m.tensor([1.0, -2.0], dtype=m.float64, requires_grad=True)
        y = m.tensor([0.5, 0.25], dtype=m.float64, requires_grad=True)
        Fn.apply(x, y).pow(2).sum().backward()
        return x.grad.numpy(), y.grad.numpy()

    for e, t in zip(run(ember), run(torch_mod)):
        np.testing.assert_allclose(e, t)


def test_function_outputs_in_bfloat16_are_differentiable():
    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = ember.ones(2, dtype=ember.bfloat16, requires_grad=True)
    y = Square.apply(x)
    assert y.requires_grad
    y.sum().backward()
    assert x.grad.dtype == ember.bfloat16 and x.grad.tolist() == [2.0, 2.0]
    s = ember.ones((), dtype=ember.bfloat16, requires_grad=True)
    (s * 3).backward()
    assert s.grad.item() == 3.0
