"""Pooling layers."""

from __future__ import annotations

from .. import functional as F
from .conv import _tuple
from .module import Module


class _MaxPoolNd(Module):
    _fn = None  # F.max_pool{1,2,3}d, set by each subclass

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )

    def forward(self, input):
        return self._fn(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            self.ceil_mode,
            self.return_indices,
        )


class MaxPool2d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool2d)


class MaxPool1d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool1d)


class _AvgPoolNd(Module):
    _fn = None  # F.avg_pool{2,3}d, set by each subclass

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override=None,
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return self._fn(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    _fn = staticmethod(F.avg_pool2d)


class AvgPool1d(_AvgPoolNd):
    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ):
        stride = _tuple(stride, 1) if stride is not None else None
        # kept as 1-tuples, as PyTorch keeps them
        super().__init__(
            _tuple(kernel_size, 1), stride, _tuple(padding, 1), ceil_mode, count_include_pad
        )

    def forward(self, input):
        return F.avg_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )


class MaxPool3d(_MaxPoolNd):
    """Max over 3-d windows of (N, C, D, H, W) or (C, D, H, W) input."""

    _fn = staticmethod(F.max_pool3d)


class AvgPool3d(_AvgPoolNd):
    """Mean over 3-d windows of (N, C, D, H, W) or (C, D, H, W) input."""

    _fn = staticmethod(F.avg_pool3d)


class _AdaptivePoolNd(Module):
    _fn = None  # F.adaptive_{avg,max}_pool{1,2,3}d, set by each subclass

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptivePoolNd):
    def __init__(self, output_size):
        super().__init__(output_size)

    def forward(self, input):
        return self._fn(input, self.output_size)


class _AdaptiveMaxPoolNd(_AdaptivePoolNd):
    def forward(self, input):
        return self._fn(input, self.output_size, self.return_indices)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Mean over PyTorch's adaptive windows of (N, C, L) input."""

    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Mean over PyTorch's adaptive windows of (N, C, H, W) input."""

    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Mean over PyTorch's adaptive windows of (N, C, D, H, W) input."""

    _fn = staticmethod(F.adaptive_avg_pool3d)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max over PyTorch's adaptive windows of (N, C, L) input."""

    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max over PyTorch's adaptive windows of (N, C, H, W) input."""

    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max over PyTorch's adaptive windows of (N, C, D, H, W) input."""

    _fn = staticmethod(F.adaptive_max_pool3d)


class _LPPoolNd(Module):
    _fn = None  # F.lp_pool{1,2,3}d, set by each subclass

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input):
        return self._fn(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Power-average pooling, (Σ x^p)^(1/p) over each window, of (N, C, L) input."""

    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """Power-average pooling over 2-d windows."""

    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """Power-average pooling over 3-d windows."""

    _fn = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    _dims = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n = self._dims
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride if stride is not None else kernel_size, n)
        self.padding = _tuple(padding, n)

    def forward(self, input, indices, output_size=None):
        fn = getattr(F, f"max_unpool{self._dims}d")
        return fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of MaxPool1d: values back at their indices, zeros elsewhere."""

    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d."""

    _dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of MaxPool3d."""

    _dims = 3


class _FractionalMaxPoolNd(Module):
    _dims = 2

    def __init__(
        self,
        kernel_size,
        output_size=None,
        output_ratio=None,
        return_indices: bool = False,
        _random_samples=None,
    ):
        super().__init__()
        n = self._dims
        self.kernel_size = kernel_size
        self.output_size, self.output_ratio = output_size, output_ratio
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        if output_size is None and output_ratio is None:
            raise ValueError(
                f"FractionalMaxPool{n}d requires specifying either an output size, or a "
                "pooling ratio"
            )
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if output_ratio is not None:
            ratios = output_ratio if isinstance(output_ratio, (tuple, list)) else (output_ratio,)
            if any(not 0 < r < 1 for r in ratios):
                raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = getattr(F, f"fractional_max_pool{self._dims}d")
        return fn(
            input,
            self.kernel_size,
            self.output_size,
            self.output_ratio,
            self.return_indices,
            _random_samples=self._random_samples,
        )


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Max over pseudo-random 2-d windows that shrink the input by a fractional ratio."""

    _dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Max over pseudo-random 3-d windows."""

    _dims = 3
