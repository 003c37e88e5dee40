"""Lazy modules: layers whose input size is read from the first input they see.

Until then their parameters are ``UninitializedParameter`` placeholders (no shape); the first
forward call materialises them in place (the same objects, so an optimizer built earlier still
holds them, though as in PyTorch it is clearer to build it after a dry run), initialises them
as the eager layer would, and turns the module into that eager layer (LazyLinear -> Linear).
"""

from __future__ import annotations

from ... import _creation
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear

__all__ = [
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
    "LazyLinear",
    "LazyModuleMixin",
    "UninitializedBuffer",
    "UninitializedParameter",
    "is_lazy",
]


class LazyModuleMixin:
    """Adds the first-call shape inference to a layer class (put it first in the bases)."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lazy_buffers = ()
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters)

    def has_uninitialized_params(self) -> bool:
        """Whether any parameter or buffer still waits for its shape."""
        params = any(is_lazy(p) for p in self._parameters.values())
        return params or bool(getattr(self, "_lazy_buffers", ()))

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}"
        )

    def _load_lazy_state(self, state_dict, prefix: str) -> None:
        """Give placeholders the shapes a checkpoint holds for them (before it is copied in),
        so that a lazy model loads a state dict without a dry run."""
        for name, param in self._parameters.items():
            value = state_dict.get(prefix + name)
            if is_lazy(param) and value is not None:
                param.materialize(tuple(value.shape))
        for name in getattr(self, "_lazy_buffers", ()):
            value = state_dict.get(prefix + name)
            if value is not None:
                like = getattr(self, name)
                setattr(
                    self, name, _creation.zeros(*value.shape, dtype=like.dtype, device=like.device)
                )
        if all(prefix + n in state_dict for n in getattr(self, "_lazy_buffers", ())):
            self._lazy_buffers = ()


def _infer_parameters(module, args):
    from ...autograd.grad_mode import no_grad

    if module.has_uninitialized_params():  # not already shaped by a loaded state dict
        with no_grad():
            module.initialize_parameters(*args)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    del module._lazy_buffers
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become
    return None


# --- linear and convolution -------------------------------------------------------------------
class LazyLinear(LazyModuleMixin, Linear):
    """A Linear layer whose ``in_features`` is the last dim of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, 0, False)
        self.out_features = out_features
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        self.in_features = input.shape[-1]
        self.weight.materialize((self.out_features, self.in_features))
        if self.bias is not None:
            self.bias.materialize((self.out_features,))
        self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _lazy_setup(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.out_channels = out_channels
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        else:
            self.register_parameter("bias", None)

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        unbatched = input.dim() == self._dims + 1
        self.in_channels = input.shape[0] if unbatched else input.shape[1]
        if self.in_channels % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        self.weight.materialize(self._weight_shape())
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


def _named_lazy(lazy: type, eager: type, inferred: str) -> type:
    """``lazy`` named and documented as the lazy form of ``eager`` (``LazyConv2d``)."""
    lazy.__name__ = lazy.__qualname__ = f"Lazy{eager.__name__}"
    lazy.__doc__ = f"A {eager.__name__} whose {inferred} is read from its first input."
    return lazy


def _lazy_conv(eager):
    class LazyConv(_LazyConvMixin, eager):
        cls_to_become = eager

        def __init__(
            self,
            out_channels: int,
            kernel_size,
            stride=1,
            padding=0,
            dilation=1,
            groups: int = 1,
            bias: bool = True,
            padding_mode: str = "zeros",
            device=None,
            dtype=None,
        ) -> None:
            super().__init__(
                0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode
            )
            self._lazy_setup(out_channels, bias, device, dtype)

    return _named_lazy(LazyConv, eager, "in_channels")


def _lazy_conv_transpose(eager):
    class LazyConvTranspose(_LazyConvMixin, eager):
        cls_to_become = eager

        def __init__(
            self,
            out_channels: int,
            kernel_size,
            stride=1,
            padding=0,
            output_padding=0,
            groups: int = 1,
            bias: bool = True,
            dilation=1,
            padding_mode: str = "zeros",
            device=None,
            dtype=None,
        ) -> None:
            super().__init__(
                0,
                0,
                kernel_size,
                stride,
                padding,
                output_padding,
                groups,
                False,
                dilation,
                padding_mode,
            )
            self._lazy_setup(out_channels, bias, device, dtype)

    return _named_lazy(LazyConvTranspose, eager, "in_channels")


LazyConv1d = _lazy_conv(Conv1d)
LazyConv2d = _lazy_conv(Conv2d)
LazyConv3d = _lazy_conv(Conv3d)
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d)


# --- normalisation ----------------------------------------------------------------------------
class _LazyNormMixin(LazyModuleMixin):
    def _lazy_setup(self, affine: bool, bias: bool, track_running_stats: bool, device, dtype):
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self._lazy_buffers = ("running_mean", "running_var")

    def _features_of(self, input) -> int:
        return input.shape[1]  # dim 1 even for unbatched input, as PyTorch reads it

    def initialize_parameters(self, input) -> None:
        self.num_features = self._features_of(input)
        if self.affine:
            self.weight.materialize((self.num_features,))
            self.weight.fill_(1.0)
            if self.bias is not None:
                self.bias.materialize((self.num_features,))
                self.bias.zero_()
        if self.track_running_stats:
            like = self.running_mean
            self.running_mean = _creation.zeros(
                self.num_features, device=like.device, dtype=like.dtype
            )
            self.running_var = _creation.ones(
                self.num_features, device=like.device, dtype=like.dtype
            )
            self.num_batches_tracked.zero_()
        self._lazy_buffers = ()


def _lazy_norm(eager):
    class LazyNorm(_LazyNormMixin, eager):
        cls_to_become = eager

        def __init__(
            self,
            eps: float = 1e-5,
            momentum: float | None = 0.1,
            affine: bool = True,  # torch's lazy instance norms too default to True
            track_running_stats: bool = True,
            device=None,
            dtype=None,
            *,
            bias: bool = True,
        ) -> None:
            super().__init__(0, eps, momentum, False, False)
            self.affine, self.track_running_stats = affine, track_running_stats
            self.use_bias = affine and bias
            if track_running_stats:
                self.register_buffer("num_batches_tracked", _creation.tensor(0))
            self._lazy_setup(affine, self.use_bias, track_running_stats, device, dtype)

    return _named_lazy(LazyNorm, eager, "num_features")


LazyBatchNorm1d = _lazy_norm(BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm(InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm(InstanceNorm3d)
