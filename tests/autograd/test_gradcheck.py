import pytest

import ember
from ember.autograd import Function
from ember.autograd.gradcheck import GradcheckError


class WrongGrad(Function):
    @staticmethod
    def forward(ctx, x):
        return x * x

    @staticmethod
    def backward(ctx, g):
        return g * 3  # wrong on purpose: d(x²) = 2x


def test_gradcheck_accepts_correct_and_rejects_wrong_gradients():
    x = ember.tensor([0.3, -1.2], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: (t * t).sum(), (x,))
    with pytest.raises(
        GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"
    ):
        ember.autograd.gradcheck(WrongGrad.apply, (x,))
    assert ember.autograd.gradcheck(WrongGrad.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_catches_a_wrong_second_derivative():
    class WrongSecond(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x.detach() ** 2  # right value, but cut from the graph

    x = ember.tensor([0.5, 1.5], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(WrongSecond.apply, (x,))
    assert not ember.autograd.gradgradcheck(WrongSecond.apply, (x,), raise_exception=False)


def test_gradcheck_with_several_inputs_and_outputs():
    a = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    b = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda x, y: (x * y, (x @ y).exp()), (a, b), eps=1e-6, atol=1e-5
    )
    assert ember.autograd.gradgradcheck(lambda x, y: (x * y).sin(), (a, b))
