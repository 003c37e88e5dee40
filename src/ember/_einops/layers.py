"""einops' layers as ember modules: ``Rearrange``, ``Reduce`` and ``EinMix``, what
``einops.layers.torch`` holds for PyTorch (served under that name where PyTorch itself is not
installed, and always as ``einops.layers.ember``)."""

from __future__ import annotations

from einops.layers import RearrangeMixin, ReduceMixin
from einops.layers._einmix import _EinmixMixin

from ember import nn

from .. import _op_namespace as ember

__all__ = ["EinMix", "Rearrange", "Reduce"]


class Rearrange(RearrangeMixin, nn.Module):
    """``einops.rearrange`` as a layer: ``Rearrange("b c h w -> b (c h w)")``."""

    def forward(self, input):
        return self._apply_recipe(input)


class Reduce(ReduceMixin, nn.Module):
    """``einops.reduce`` as a layer: ``Reduce("b c (h 2) (w 2) -> b c h w", "max")``."""

    def forward(self, input):
        return self._apply_recipe(input)


class EinMix(_EinmixMixin, nn.Module):
    """A linear map written as an einsum pattern, with its weight (and bias) as parameters."""

    def _create_parameters(self, weight_shape, weight_bound, bias_shape, bias_bound):
        self.weight = nn.Parameter(ember.zeros(weight_shape).uniform_(-weight_bound, weight_bound))
        if bias_shape is not None:
            self.bias = nn.Parameter(ember.zeros(bias_shape).uniform_(-bias_bound, bias_bound))
        else:
            self.bias = None

    def _create_rearrange_layers(
        self, pre_reshape_pattern, pre_reshape_lengths, post_reshape_pattern, post_reshape_lengths
    ):
        self.pre_rearrange = None
        if pre_reshape_pattern is not None:
            self.pre_rearrange = Rearrange(pre_reshape_pattern, **pre_reshape_lengths)
        self.post_rearrange = None
        if post_reshape_pattern is not None:
            self.post_rearrange = Rearrange(post_reshape_pattern, **post_reshape_lengths)

    def forward(self, input):
        if self.pre_rearrange is not None:
            input = self.pre_rearrange(input)
        result = ember.einsum(self.einsum_pattern, input, self.weight)
        if self.bias is not None:
            result = result + self.bias
        if self.post_rearrange is not None:
            result = self.post_rearrange(result)
        return result
