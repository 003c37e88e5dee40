"""Functional forms of the spatial layers (convolution, pooling, padding, resampling),
re-exported by ember.nn.functional.
"""

from ..ops.conv import conv3d, conv_transpose1d, conv_transpose3d

__all__: list[str] = ["conv3d", "conv_transpose1d", "conv_transpose3d"]
