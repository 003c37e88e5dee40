"""Activation checkpointing: keep only a segment's inputs, recompute it during backward."""

from __future__ import annotations

import warnings

from .._creation import empty
from .._random import default_generator
from .._tensor import Tensor
from ..autograd import backward as autograd_backward
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad


class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        ctx.run_function = run_function
        ctx.rng_state = default_generator.get_state() if preserve_rng_state else None
        ctx.is_tensor = [isinstance(a, Tensor) for a in args]
        ctx.plain = [None if t else a for t, a in zip(ctx.is_tensor, args)]
        ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        saved = iter(ctx.saved_tensors)
        inputs = []
        for is_tensor, plain in zip(ctx.is_tensor, ctx.plain):
            if is_tensor:
                t = next(saved)
                inputs.append(t._detach().requires_grad_(t.requires_grad))
            else:
                inputs.append(plain)
        current = default_generator.get_state() if ctx.rng_state is not None else None
        try:
            if ctx.rng_state is not None:  # the same random draws (dropout) as in forward
                default_generator.set_state(ctx.rng_state)
            with enable_grad():
                outputs = ctx.run_function(*inputs)
        finally:
            if current is not None:
                default_generator.set_state(current)
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [
            (o, g)
            for o, g in zip(outs, grads)
            if isinstance(o, Tensor) and o.requires_grad and g is not None
        ]
        if pairs:
            autograd_backward([o for o, _ in pairs], [g for _, g in pairs])
        input_grads = tuple(
            x.grad if isinstance(x, Tensor) and x.requires_grad else None for x in inputs
        )
        return (None, None) + input_grads


def checkpoint(
    function,
    *args,
    use_reentrant: bool | None = None,
    context_fn=None,
    determinism_check: str = "default",
    debug: bool = False,
    preserve_rng_state: bool = True,
    **kwargs,
):
    """Run ``function(*args)`` without keeping its intermediate tensors; recompute them
    (with the same random state) when the backward pass reaches this segment.

    Example::
        >>> y = ember.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn(
            "ember.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "use_reentrant=False is recommended (it also gives gradients to the parameters "
            "used inside when no input requires grad); without it, the reentrant form runs.",
            UserWarning,
            stacklevel=2,
        )
    if kwargs:
        run = lambda *a: function(*a, **kwargs)  # noqa: E731
    else:
        run = function
    if use_reentrant is False and is_grad_enabled():
        # The non-reentrant form records the segment even when no input requires grad, so
        # that the parameters used inside get their gradients: a dummy input carries the edge.
        inner = run
        run = lambda _dummy, *a: inner(*a)  # noqa: E731
        args = (_dummy_input(),) + args
    return CheckpointFunction.apply(run, preserve_rng_state, *args)


def _dummy_input() -> Tensor:
    return empty(0, requires_grad=True)


def checkpoint_sequential(
    functions, segments: int, input, use_reentrant: bool | None = None, **kwargs
):
    """Split a Sequential (or list of modules) into ``segments`` checkpointed chunks; the last
    chunk runs normally, as in PyTorch."""
    modules = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(modules) // segments

    def run(start: int, stop: int):
        def forward(x):
            for m in modules[start:stop]:
                x = m(x)
            return x

        return forward

    stop = 0
    for start in range(0, size * (segments - 1), size):
        stop = start + size
        input = checkpoint(run(start, stop), input, use_reentrant=use_reentrant, **kwargs)
    return run(stop, len(modules))(input)
