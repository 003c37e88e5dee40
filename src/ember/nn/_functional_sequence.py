"""Functional forms of the sequence layers (attention, recurrent helpers),
re-exported by ember.nn.functional.
"""

__all__: list[str] = []
