"""Every ember.nn layer with an ONNX equivalent exports, and ONNX Runtime agrees with ember on
the example and on another batch size."""

from __future__ import annotations

import pytest

import ember
import ember.nn as nn

from .test_export import _check_in_onnxruntime

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

ACTIVATIONS = [
    nn.ELU(),
    nn.SELU(),
    nn.CELU(),
    nn.GELU(),
    nn.GELU("tanh"),
    nn.SiLU(),
    nn.Mish(),
    nn.Hardswish(),
    nn.Hardsigmoid(),
    nn.Softplus(),
    nn.LeakyReLU(0.2),
    nn.PReLU(),
    nn.Hardtanh(),
    nn.ReLU6(),
    nn.Softsign(),
    nn.Tanhshrink(),
    nn.Softshrink(),
    nn.Hardshrink(),
    nn.Threshold(0.1, -1.0),
    nn.LogSigmoid(),
    nn.Sigmoid(),
    nn.Tanh(),
    nn.LogSoftmax(1),
    nn.Softmin(1),
    nn.GLU(1),
]


@pytest.mark.parametrize("layer", ACTIVATIONS, ids=lambda m: type(m).__name__)
def test_activations(tmp_path, layer):
    _check_in_onnxruntime(tmp_path, layer, [ember.randn(3, 8), ember.randn(5, 8)], dynamic={0: "n"})


SPATIAL = [
    (nn.ConvTranspose1d(2, 3, 3, stride=2), (2, 2, 9)),
    (nn.ConvTranspose3d(2, 3, 2), (2, 2, 4, 4, 4)),
    (nn.MaxPool1d(2), (2, 3, 8)),
    (nn.MaxPool2d(2), (2, 3, 8, 8)),
    (nn.MaxPool3d(2), (2, 3, 4, 4, 4)),
    (nn.AvgPool2d(2), (2, 3, 8, 8)),
    (nn.AdaptiveAvgPool2d(1), (2, 3, 8, 8)),
    (nn.BatchNorm1d(3), (2, 3, 8)),
    (nn.InstanceNorm2d(3, affine=True), (2, 3, 8, 8)),
    (nn.Flatten(), (2, 3, 4, 4)),
    (nn.Sequential(nn.Flatten(), nn.Unflatten(1, (3, 16))), (2, 3, 4, 4)),
]


@pytest.mark.parametrize("layer,shape", SPATIAL, ids=[type(m).__name__ for m, _ in SPATIAL])
def test_spatial_layers(tmp_path, layer, shape):
    other = (shape[0] + 2,) + shape[1:]
    _check_in_onnxruntime(tmp_path, layer, [ember.randn(*shape), ember.randn(*other)], {0: "n"})


@pytest.mark.parametrize("kind", ["GRU", "RNN"])
def test_recurrent_layers_with_dynamic_batch_and_length(tmp_path, kind):
    layer = getattr(nn, kind)(4, 6, num_layers=2, batch_first=True)
    model = nn.Sequential(layer)
    _check_in_onnxruntime(
        tmp_path,
        model,
        [ember.randn(2, 5, 4), ember.randn(3, 7, 4)],
        dynamic={0: "batch", 1: "time"},
    )


def test_transformer_decoder_layer(tmp_path):
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    _check_in_onnxruntime(
        tmp_path,
        layer,
        [
            (ember.randn(2, 4, 8), ember.randn(2, 5, 8)),
            (ember.randn(3, 4, 8), ember.randn(3, 5, 8)),
        ],
        dynamic={0: "batch"},
    )
