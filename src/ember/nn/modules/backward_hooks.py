"""A module's full backward hooks, as torch.utils.hooks.BackwardHook runs them.

Identities before and after ``forward`` catch the gradients: the one on the outputs runs the
backward pre-hooks and keeps ``grad_output``; the one on the inputs runs the full backward hooks
with ``grad_input`` (``None`` for each argument that is not a tensor). What a hook returns
replaces the gradients after torch's checks: as many values as arguments, each a tensor of the
gradient's type and size or None.
"""

from __future__ import annotations

import warnings

from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd.function import Function
from ...autograd.node import check_hook_result


class _Identity(Function):
    """Identity in forward; its node is where a module's backward hooks attach."""

    @staticmethod
    def forward(ctx, *tensors):
        return tuple(t.view_as(t) if isinstance(t, Tensor) else t for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _pack_with_none(positions: list, values, size: int) -> tuple:
    """``values`` at ``positions`` of a tuple of ``size``, None elsewhere."""
    packed = [None] * size
    for position, value in zip(positions, values, strict=True):
        packed[position] = value
    return tuple(packed)


def _wrap_tensors(args: tuple, on_node):
    """``args`` with their tensors passed through one identity whose node ``on_node`` gets, and
    the positions of those tensors; ``args`` unchanged and None when no tensor needs a grad."""
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    if not grad_mode.is_grad_enabled() or not any(args[i].requires_grad for i in positions):
        return args, None
    wrapped = _Identity.apply(*[args[i] for i in positions])
    wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
    on_node(next(w.grad_fn for w in wrapped if isinstance(w, Tensor) and w.grad_fn))
    args = list(args)
    for i, w in zip(positions, wrapped):
        args[i] = w
    return tuple(args), positions


class BackwardHookState:
    """The backward hooks of one call of a module."""

    def __init__(self, module):
        self.module = module
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_positions = None
        self.n_outputs = 0
        self.output_positions = None

    @classmethod
    def wrap_inputs(cls, module, args: tuple):
        state = cls(module)

        def hook(grad_inputs, _grad_outputs):  # torch's name for it in its errors
            return state._on_input_grads(hook, grad_inputs)

        args, state.input_positions = _wrap_tensors(args, lambda node: node.register_hook(hook))
        state.n_inputs = len(args)
        return args, state

    def wrap_outputs(self, out):
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        outs, self.output_positions = _wrap_tensors(
            outs, lambda node: node.register_prehook(self._on_output_grads)
        )
        self.n_outputs = len(outs)
        return outs[0] if single else outs

    def _on_output_grads(self, grad_outputs):
        module = self.module
        self.grad_outputs = _pack_with_none(self.output_positions, grad_outputs, self.n_outputs)
        expected = len(self.grad_outputs)
        for pre_hook in list(module._backward_pre_hooks.values()):
            replaced = pre_hook(module, self.grad_outputs)
            if replaced is None:
                continue
            if len(replaced) != expected:
                raise RuntimeError(
                    "Backward pre hook returned an invalid number of grad_output, "
                    f"got {len(replaced)}, but expected {expected}"
                )
            self.grad_outputs = replaced
        kept = self.grad_outputs
        if self.input_positions is None:  # no input needs a gradient: report at once
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to "
                "module outputs since no inputs require gradients. See "
                "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.register_full_backward_hook for more details.",
                stacklevel=5,
            )
            grad_inputs = (None,) * self.n_inputs
            for user_hook in list(module._backward_hooks.values()):
                res = user_hook(module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(g is None for g in res)):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should "
                        "always return None or None for all gradients."
                    )
            self.grad_outputs = None
        return tuple(kept[i] for i in self.output_positions)

    def _on_input_grads(self, hook, grad_inputs):
        if self.grad_outputs is None:  # reached without passing through the outputs
            return None
        module = self.module
        res = _pack_with_none(self.input_positions, grad_inputs, self.n_inputs)
        for user_hook in list(module._backward_hooks.values()):
            out = user_hook(module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, "
                    f"got {len(out)}, but expected {len(res)}"
                )
            res = out
        self.grad_outputs = None
        replaced = tuple(res[i] for i in self.input_positions)
        for original, value in zip(grad_inputs, replaced):
            if value is not None and original is not None:
                check_hook_result(hook, original, value)
        return replaced
