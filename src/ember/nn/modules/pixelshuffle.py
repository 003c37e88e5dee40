"""PixelShuffle and PixelUnshuffle: trade channels for spatial resolution and back."""

from __future__ import annotations

from ...ops.resample import pixel_shuffle, pixel_unshuffle
from .module import Module


class PixelShuffle(Module):
    """(*, C·r², H, W) -> (*, C, H·r, W·r) (sub-pixel convolution upsampling)."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H·r, W·r) -> (*, C·r², H, W), the inverse of PixelShuffle."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
