"""The sequence layers (recurrent cells, Transformer),
re-exported by ember.nn.
"""

from .rnn_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase
from .transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
)

__all__: list[str] = [
    "RNNCellBase",
    "RNNCell",
    "LSTMCell",
    "GRUCell",
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerDecoderLayer",
]
