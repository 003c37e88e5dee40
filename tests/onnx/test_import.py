"""ember.onnx.load (src/ember/onnx/_import.py): ONNX files as ember Modules with trainable
parameters; ember -> ONNX -> ember and torch.onnx -> ember give equal outputs."""

import io
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn

onnx = pytest.importorskip("onnx")

from .test_export import LSTMClassifier  # noqa: E402


def _round_trip(model, example, others=()):
    model.eval()
    buffer = io.BytesIO()
    ember.onnx.export(model, (example,), buffer, input_names=["x"], dynamic_axes={"x": [0]})
    loaded = ember.onnx.load(buffer.getvalue())
    for x in (example, *others):
        with ember.no_grad():
            expected, got = model(x), loaded(x)
        expected = expected[0] if isinstance(expected, tuple) else expected
        got = got[0] if isinstance(got, tuple) else got
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    return loaded


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_demo_models_round_trip_with_trainable_parameters(kind):
    from ember.cli.demo import build_model

    model = build_model(kind)
    loaded = _round_trip(model, ember.randn(3, 1, 8, 8), [ember.randn(5, 1, 8, 8)])
    params = list(loaded.parameters())
    assert len(params) == len(list(model.parameters()))
    assert all(isinstance(p, nn.Parameter) for p in params)
    loaded(ember.randn(2, 1, 8, 8)).logsumexp(1).sum().backward()
    assert all(p.grad is not None for p in params)
    optimizer = ember.optim.SGD(loaded.parameters(), lr=0.1)
    optimizer.step()  # fine-tunable like any ember module


def test_lstm_classifier_and_transformer_round_trip():
    _round_trip(LSTMClassifier(), ember.randn(2, 5, 6), [ember.randn(4, 5, 6)])
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    _round_trip(nn.TransformerEncoder(layer, 2), ember.randn(2, 4, 8), [ember.randn(3, 4, 8)])


def test_norm_and_pool_layers_round_trip():
    model = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1),
        nn.GroupNorm(2, 4),
        nn.BatchNorm2d(4),
        nn.GELU(),
        nn.AvgPool2d(2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.LayerNorm(4),
    )
    _round_trip(model, ember.randn(3, 2, 6, 6))


def test_unknown_onnx_op_raises_naming_it():
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Det", ["x"], ["y"], name="det")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )
    data = helper.make_model(graph).SerializeToString()
    with pytest.raises(ember.onnx.OnnxExporterError, match="ONNX op 'Det'"):
        ember.onnx.load(data)


def test_model_exported_by_torch_loads_and_matches_torch():
    torch = pytest.importorskip("torch")

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.features = torch.nn.Sequential(
                torch.nn.Conv2d(1, 4, 3, padding=1),
                torch.nn.BatchNorm2d(4),
                torch.nn.ReLU(),
                torch.nn.MaxPool2d(2),
            )
            self.lstm = torch.nn.LSTM(16, 8, batch_first=True)
            self.head = torch.nn.Linear(8, 3)

        def forward(self, x):
            f = self.features(x).flatten(2)  # (N, 4 channels as steps, 16)
            out, _ = self.lstm(f)
            return torch.softmax(self.head(out[:, -1]), -1)

    torch.manual_seed(0)
    model = Classifier().eval()
    x = torch.randn(2, 1, 8, 8)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (x,), buffer, dynamo=False, input_names=["x"], dynamic_axes={"x": [0]}
        )
    loaded = ember.onnx.load(buffer.getvalue())
    for batch in (2, 5):
        xb = torch.randn(batch, 1, 8, 8)
        with torch.no_grad():
            expected = model(xb).numpy()
        got = loaded(ember.from_numpy(xb.numpy())).detach().numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
