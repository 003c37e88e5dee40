"""``EmberBackend``: einops' operations (rearrange, reduce, repeat, einsum, pack, unpack,
parse_shape, asnumpy) on ember tensors, through ember's own torch-named functions, so autograd
records them as it records the same calls from a PyTorch program."""

from __future__ import annotations

from einops._backends import AbstractBackend

from .. import _op_namespace as ember

_FLOATS = (ember.float16, ember.bfloat16, ember.float32, ember.float64)


class EmberBackend(AbstractBackend):
    framework_name = "ember"

    def is_appropriate_type(self, tensor) -> bool:
        return isinstance(tensor, ember.Tensor)

    def from_numpy(self, x):
        variable = ember.from_numpy(x)
        if variable.dtype in _FLOATS:
            variable.requires_grad = True  # as einops' torch backend: its tests take gradients
        return variable

    def to_numpy(self, x):
        return x.detach().cpu().numpy()

    def arange(self, start, stop):
        return ember.arange(start, stop, dtype=ember.int64)

    def reduce(self, x, operation, reduced_axes):
        if operation in ("min", "max"):
            return getattr(x, "a" + operation)(dim=reduced_axes)
        if operation in ("sum", "mean"):
            return getattr(x, operation)(dim=reduced_axes)
        if operation in ("any", "all", "prod"):  # one dimension at a time, as in torch
            for axis in sorted(reduced_axes)[::-1]:
                x = getattr(x, operation)(dim=axis)
            return x
        raise NotImplementedError("Unknown reduction ", operation)

    def transpose(self, x, axes):
        return x.permute(axes)

    def stack_on_zeroth_dimension(self, tensors: list):
        return ember.stack(tensors)

    def add_axes(self, x, n_axes, pos2len):
        repeats = [-1] * n_axes
        for position, length in pos2len.items():
            x = ember.unsqueeze(x, position)
            repeats[position] = length
        return x.expand(repeats)  # a view, as torch's backend makes it

    def tile(self, x, repeats):
        return x.repeat(repeats)

    def concat(self, tensors, axis: int):
        return ember.cat(tensors, dim=axis)

    def add_axis(self, x, new_position):
        return ember.unsqueeze(x, new_position)

    def is_float_type(self, x) -> bool:
        return x.dtype in _FLOATS

    def layers(self):
        from . import layers

        return layers

    def einsum(self, pattern, *x):
        return ember.einsum(pattern, *x)
