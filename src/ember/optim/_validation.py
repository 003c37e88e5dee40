"""Hyperparameter values: one-element tensors read as numbers, and the checks the optimizers'
constructors share, with PyTorch's messages."""

from __future__ import annotations

from .._tensor import Tensor


def as_scalar(value):
    """A one-element Tensor hyperparameter (PyTorch accepts ``lr=torch.tensor(0.01)``) as a
    Python number; anything else unchanged."""
    return value.item() if isinstance(value, Tensor) else value


def complex_fill_value(param: Tensor, value):
    """``value`` for each of a complex parameter's real and imaginary parts (``complex(v, v)``),
    as torch fills such state; ``value`` itself for a real parameter."""
    return complex(value, value) if param.is_complex() else value


def check_lr(lr) -> None:
    """PyTorch's learning-rate checks, with its messages."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= as_scalar(lr):
        raise ValueError(f"Invalid learning rate: {lr}")


def check_non_negative(**values) -> None:
    """Each hyperparameter must be >= 0, checked in the order given; PyTorch's message names
    it as its keyword here (``epsilon=eps`` gives ``Invalid epsilon value: -1``).

    Example::

        >>> check_non_negative(epsilon=1e-8, weight_decay=-0.1)
        Traceback (most recent call last):
            ...
        ValueError: Invalid weight_decay value: -0.1
    """
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {name} value: {value}")


def check_betas(betas) -> None:
    """Both running-average coefficients in [0, 1), as PyTorch's Adam family checks them."""
    for index in (0, 1):
        if not 0.0 <= betas[index] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {index}: {betas[index]}")


def check_adam_hyperparameters(lr, betas, eps, weight_decay) -> None:
    """The checks Adam, AdamW, Adamax, NAdam and RAdam open with, in PyTorch's order."""
    check_lr(lr)
    check_non_negative(epsilon=eps)
    check_betas(betas)
    check_non_negative(weight_decay=weight_decay)


def check_fused(fused, foreach, differentiable) -> None:
    """``fused`` is accepted as PyTorch does (ember runs the same update either way), with
    PyTorch's checks on the flags it cannot be combined with."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
