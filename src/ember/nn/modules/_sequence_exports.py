"""The sequence layers (recurrent cells, Transformer),
re-exported by ember.nn.
"""

__all__: list[str] = []
