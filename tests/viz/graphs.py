"""The backward graphs the viz tests draw: the demo's MLP and CNN as ``ember demo`` draws them
(a cross-entropy step, modules tracked), an LSTM and a transformer layer (deeper module trees)."""

import ember
from ember import nn
from ember.cli.demo import build_model
from ember.viz import make_dot, track_modules


def _graph(model, x, loss_fn, show_saved: bool):
    with track_modules(model):
        out = model(x)
        out = out[0] if isinstance(out, tuple) else out
        loss = loss_fn(out)
    loss.backward(retain_graph=True)  # gradient norms on the leaves, saved tensors kept
    return make_dot(loss, params=dict(model.named_parameters()), show_saved=show_saved)


def demo_graph(kind: str, show_saved: bool = False):
    ember.manual_seed(0)
    labels = ember.tensor([1, 2, 3, 4])
    return _graph(
        build_model(kind),
        ember.randn(4, 1, 8, 8),
        lambda logits: nn.functional.cross_entropy(logits, labels),
        show_saved,
    )


def lstm_graph(show_saved: bool = False):
    ember.manual_seed(0)
    model = nn.Sequential(nn.LSTM(3, 4, num_layers=2, batch_first=True))
    return _graph(model, ember.randn(2, 3, 3), lambda out: out.square().mean(), show_saved)


def transformer_graph(show_saved: bool = False):
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
    model, x = nn.Sequential(layer), ember.randn(2, 3, 8)
    return _graph(model, x, lambda out: out.square().mean(), show_saved)


GRAPHS = {
    "mlp": lambda show_saved: demo_graph("mlp", show_saved),
    "cnn": lambda show_saved: demo_graph("cnn", show_saved),
    "lstm": lstm_graph,
    "transformer": transformer_graph,
}
