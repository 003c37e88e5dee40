"""Functional forms of the spatial layers (convolution, pooling, padding, resampling),
re-exported by ember.nn.functional.
"""

__all__: list[str] = []
