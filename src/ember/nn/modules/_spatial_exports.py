"""The spatial layers (convolution, pooling, padding, resampling, normalisation),
re-exported by ember.nn.
"""

__all__: list[str] = []
