"""Functional forms of the sequence layers (attention, recurrent helpers),
re-exported by ember.nn.functional.
"""

from ..ops.attention import multi_head_attention_forward, scaled_dot_product_attention

__all__: list[str] = ["scaled_dot_product_attention", "multi_head_attention_forward"]
