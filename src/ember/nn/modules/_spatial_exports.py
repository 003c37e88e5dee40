"""The spatial layers (convolution, pooling, padding, resampling, normalisation),
re-exported by ember.nn.
"""

from .conv import Conv3d, ConvTranspose1d, ConvTranspose3d

__all__: list[str] = ["Conv3d", "ConvTranspose1d", "ConvTranspose3d"]
