"""ember.onnx.export: every exported model runs in ONNX Runtime and agrees with ember (1e-5
relative, float32) on the example input and, through dynamic axes, on inputs of other sizes."""

import io
import os

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _flat(out) -> list:
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [] if out is None else [out]


def _check_in_onnxruntime(tmp_path, model, examples, dynamic=None, opset=None, names=None):
    """Export ``model`` on ``examples[0]`` and compare ONNX Runtime with ember on each."""
    model.eval()
    first = examples[0] if isinstance(examples[0], tuple) else (examples[0],)
    names = names or [f"x{i}" for i in range(len(first))]
    dynamic_axes = {n: dynamic for n in names} if dynamic is not None else None
    path = tmp_path / "model.onnx"
    ember.onnx.export(
        model, first, path, input_names=names, dynamic_axes=dynamic_axes, opset_version=opset
    )
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for example in examples:
        example = example if isinstance(example, tuple) else (example,)
        with ember.no_grad():
            expected = _flat(model(*example))
        got = session.run(None, {n: t.numpy() for n, t in zip(names, example)})
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == tuple(e.shape)
            if np.issubdtype(g.dtype, np.floating):
                np.testing.assert_allclose(g, e.numpy(), rtol=1e-5, atol=1e-5)
            else:
                np.testing.assert_array_equal(g, e.numpy())
    return path


class Lambda(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def test_demo_mlp_with_dynamic_batch(tmp_path):
    from ember.cli.demo import build_model

    model = build_model("mlp")
    _check_in_onnxruntime(
        tmp_path,
        model,
        [ember.randn(4, 1, 8, 8), ember.randn(1, 1, 8, 8), ember.randn(9, 1, 8, 8)],
        [0],
    )


def test_demo_cnn_with_dynamic_batch(tmp_path):
    from ember.cli.demo import build_model

    model = build_model("cnn")
    _check_in_onnxruntime(tmp_path, model, [ember.randn(4, 1, 8, 8), ember.randn(7, 1, 8, 8)], [0])


def test_linear_exports_as_gemm_with_named_initializers(tmp_path):
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2, bias=False))
    path = _check_in_onnxruntime(tmp_path, model, [ember.randn(2, 3), ember.randn(6, 3)], [0])
    graph = onnx.load(str(path)).graph
    assert [n.op_type for n in graph.node].count("Gemm") == 2
    assert {"0.weight", "0.bias", "2.weight"} <= {i.name for i in graph.initializer}
    assert graph.input[0].type.tensor_type.shape.dim[0].dim_param  # symbolic batch dim


def test_linear_on_3d_input(tmp_path):
    _check_in_onnxruntime(
        tmp_path, nn.Linear(4, 3), [ember.randn(2, 5, 4), ember.randn(3, 2, 4)], [0, 1]
    )


def test_elementwise_ops(tmp_path):
    def fn(x, y):
        pos = x.abs() + 0.5
        return (
            x + y,
            x - 2.0,
            3.0 - x,
            x * y,
            x / (y.abs() + 1),
            1.0 / pos,
            x**2,
            pos**0.5,
            pos**y,
            -x,
            ember.exp(x),
            ember.log(pos),
            ember.sqrt(pos),
            ember.rsqrt(pos),
            ember.tanh(x),
            ember.sigmoid(x),
            F.relu(x),
            F.gelu(x),
            F.gelu(x, approximate="tanh"),
            F.silu(x),
            F.leaky_relu(x, 0.2),
            F.elu(x),
            F.softplus(x),
            F.softplus(x, beta=2.0),
            x.clamp(-0.5, 0.5),
            x.clamp(min=0.1),
            ember.where(x > y, x, y),
            F.hardtanh(x),
            F.relu6(x * 4),
            F.mish(x),
            F.hardswish(x),
            F.hardsigmoid(x),
            (x < y),
            (x <= 0.1),
            (x >= y),
            (x == x),
            (x != y),
            x.add(y, alpha=2),
            x.clone().add_(1.0),
            ember.sign(x),
            ember.sgn(x),
        )

    examples = [(ember.randn(3, 4), ember.randn(3, 4)), (ember.randn(5, 4), ember.randn(5, 4))]
    _check_in_onnxruntime(tmp_path, Lambda(fn), examples, [0])


def test_matmul_bmm_einsum(tmp_path):
    weight = ember.randn(4, 6)

    def fn(x, y):
        return x @ weight, ember.bmm(x, y), ember.matmul(x, y), ember.einsum("bij,bjk->bik", x, y)

    examples = [
        (ember.randn(2, 3, 4), ember.randn(2, 4, 5)),
        (ember.randn(6, 3, 4), ember.randn(6, 4, 5)),
    ]
    _check_in_onnxruntime(tmp_path, Lambda(fn), examples, [0])


def test_reductions(tmp_path):
    def fn(x):
        values, indices = x.max(dim=1)
        return (
            x.sum(),
            x.sum(1),
            x.sum((1, 2), keepdim=True),
            x.mean(-1),
            values,
            indices,
            x.min(dim=2, keepdim=True)[0],
            x.max(),
            x.amax(1),
            x.amin((0, 2)),
            x.argmax(-1),
            x.argmax(),
            x.var(1),
            x.std(2, keepdim=True),
            x.var(1, unbiased=False),
            ember.logsumexp(x, 1),
        )

    _check_in_onnxruntime(tmp_path, Lambda(fn), [ember.randn(2, 3, 4), ember.randn(5, 3, 4)], [0])


def test_softmax_and_log_softmax(tmp_path):
    def fn(x):
        return F.softmax(x, dim=-1), F.log_softmax(x, dim=1), x.softmax(0)

    _check_in_onnxruntime(tmp_path, Lambda(fn), [ember.randn(2, 3, 4), ember.randn(6, 3, 4)], [0])


def test_shape_ops(tmp_path):
    index = ember.tensor([2, 0, 1])

    def fn(x):
        b = x.shape[0]
        a, c = x.chunk(2, dim=2)
        parts = x.split([1, 3], dim=2)
        return (
            x.reshape(b, -1),
            x.view(b, 3, 2, 2),
            x.flatten(1),
            x.unsqueeze(1).squeeze(1),
            x.transpose(1, 2),
            x.permute(2, 0, 1),
            ember.cat([a, c], dim=2),
            ember.stack([a, c], 1),
            parts[0],
            parts[1],
            x[:, 0].unsqueeze(-1).expand(-1, 4, 5),
            x[:, 1:, ::2],
            x[..., -1],
            x[:, None, 1],
            x[:, index],
            x.gather(2, x.argmax(-1, keepdim=True)),
            x.index_select(2, index),
            x.narrow(2, 1, 2),
            ember.flatten(x),
        )

    _check_in_onnxruntime(tmp_path, Lambda(fn), [ember.randn(2, 3, 4), ember.randn(5, 3, 4)], [0])


def test_conv_and_pool_families(tmp_path):
    class Convs(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv1d(2, 3, 3, stride=2, padding=1)
            self.conv3 = nn.Conv3d(2, 3, 3, padding="same", bias=False)
            self.up = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1)
            self.grouped = nn.Conv2d(2, 4, 3, groups=2, dilation=2, padding=2)

        def forward(self, x1, x2, x3):
            return (
                self.conv1(x1),
                F.max_pool1d(x1, 2),
                F.avg_pool1d(x1, 3, 1, 1),
                self.up(x2),
                self.grouped(x2),
                F.avg_pool2d(x2, 2, ceil_mode=True),
                F.max_pool2d(x2, 3, 2, 1),
                F.adaptive_avg_pool2d(x2, 1),
                F.adaptive_avg_pool2d(x2, 2),
                F.adaptive_max_pool2d(x2, (1, 1)),
                self.conv3(x3),
            )

    def example(n):
        return (ember.randn(n, 2, 8), ember.randn(n, 2, 6, 6), ember.randn(n, 2, 4, 4, 4))

    _check_in_onnxruntime(tmp_path, Convs(), [example(2), example(3)], [0])


def test_norms_dropout_and_embedding(tmp_path):
    class Norms(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(4)
            self.ln = nn.LayerNorm([4, 3, 3])
            self.gn = nn.GroupNorm(2, 4)
            self.drop = nn.Dropout(0.5)
            self.embed = nn.Embedding(10, 3)

        def forward(self, x, ids):
            return self.drop(self.bn(x)), self.ln(x), self.gn(x), self.embed(ids)

    model = Norms()
    model.train()
    with ember.no_grad():
        for _ in range(3):  # running statistics that are not the defaults
            model.bn(ember.randn(8, 4, 3, 3) * 2 + 1)
    examples = [
        (ember.randn(2, 4, 3, 3), ember.tensor([[1, 2], [3, 9]])),
        (ember.randn(5, 4, 3, 3), ember.randint(0, 10, (5, 2))),
    ]
    _check_in_onnxruntime(tmp_path, model, examples, [0])


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 12, num_layers=2, batch_first=True)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return self.head(out[:, -1]), h


def test_lstm_classifier_with_dynamic_batch_and_sequence(tmp_path):
    examples = [ember.randn(2, 5, 6), ember.randn(3, 9, 6), ember.randn(1, 2, 6)]
    path = _check_in_onnxruntime(tmp_path, LSTMClassifier(), examples, [0, 1])
    assert "LSTM" in {n.op_type for n in onnx.load(str(path)).graph.node}


@pytest.mark.parametrize("kind", ["GRU", "RNN"])
def test_bidirectional_gru_and_rnn_with_initial_state(tmp_path, kind):
    rnn = getattr(nn, kind)(4, 5, num_layers=2, bidirectional=True)
    examples = [
        (ember.randn(5, 2, 4), ember.randn(4, 2, 5)),
        (ember.randn(7, 2, 4), ember.randn(4, 2, 5)),
    ]
    _check_in_onnxruntime(tmp_path, rnn, examples, {0: "seq"}, names=["x", "h0"])


def test_two_layer_transformer_encoder_with_dynamic_batch_and_sequence(tmp_path):
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True)
    model = nn.TransformerEncoder(layer, 2)
    examples = [ember.randn(2, 5, 16), ember.randn(3, 8, 16)]
    _check_in_onnxruntime(tmp_path, model, examples, [0, 1])


def test_transformer_with_padding_mask_norm_first_and_decoder(tmp_path):
    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = nn.Transformer(8, 2, 1, 1, 16, batch_first=True, norm_first=True)

        def forward(self, src, tgt, src_padding):
            return self.model(src, tgt, src_key_padding_mask=src_padding)

    def example(batch, source, target):
        padding = ember.zeros(batch, source, dtype=ember.bool)
        padding[0, -1] = True
        return ember.randn(batch, source, 8), ember.randn(batch, target, 8), padding

    examples = [example(2, 4, 3), example(3, 6, 5)]
    _check_in_onnxruntime(tmp_path, Seq2Seq(), examples, [0, 1])


def test_multihead_attention_with_weights_and_mask(tmp_path):
    attention = nn.MultiheadAttention(8, 2)
    mask = ember.triu(ember.ones(4, 4, dtype=ember.bool), diagonal=1)
    model = Lambda(lambda q, kv: attention(q, kv, kv, attn_mask=mask))
    examples = [
        (ember.randn(4, 2, 8), ember.randn(4, 2, 8)),
        (ember.randn(4, 5, 8), ember.randn(4, 5, 8)),
    ]
    _check_in_onnxruntime(tmp_path, model, examples, {1: "batch"})


def test_remaining_activations(tmp_path):
    def fn(x):
        return (
            F.prelu(x, ember.tensor([0.1, 0.2, 0.3])),
            F.softmin(x, 1),
            F.logsigmoid(x),
            F.hardshrink(x),
            F.softshrink(x),
            F.tanhshrink(x),
            F.glu(x.repeat(1, 2, 1), 1),
            F.rrelu(x),
            F.threshold(x, 0.1, 2.0),
            F.selu(x),
            F.celu(x),
            F.softsign(x),
        )

    _check_in_onnxruntime(tmp_path, Lambda(fn), [ember.randn(2, 3, 4), ember.randn(5, 3, 4)], [0])


def test_resampling_and_attention_functions(tmp_path):
    def fn(x, q):
        return (
            F.interpolate(x, scale_factor=2),
            F.interpolate(x, size=(6, 7), mode="nearest-exact"),
            F.interpolate(x, scale_factor=2, mode="bilinear"),
            F.interpolate(x, size=(7, 5), mode="bilinear", align_corners=True),
            F.pixel_shuffle(x, 2),
            F.pixel_unshuffle(x, 2),
            F.scaled_dot_product_attention(q, q, q, is_causal=True),
            F.normalize(q, dim=-1),
            F.cosine_similarity(q, q.flip(1), dim=-1),
            F.local_response_norm(x, 3),
        )

    examples = [
        (ember.randn(2, 4, 4, 4), ember.randn(2, 2, 3, 8)),
        (ember.randn(3, 4, 4, 4), ember.randn(3, 2, 3, 8)),
    ]
    _check_in_onnxruntime(tmp_path, Lambda(fn), examples, [0])


def test_cumulative_sorting_masking_and_triangular_ops(tmp_path):
    def fn(x):
        values, indices = x.topk(2, dim=-1)
        return (
            x.cumsum(1),
            values,
            indices,
            *x.sort(-1, descending=True),
            x.flip(1, 2),
            x.roll(1, 2),
            x.tril(),
            x.triu(1),
            x.masked_fill(x > 0, 0.5),
            ember.zeros_like(x),
            ember.full_like(x, 3.0),
            ember.remainder(x, 0.7),
            (x > 0) & (x < 1),
            ember.log1p(x.abs()),
            F.one_hot(indices, 4),
        )

    _check_in_onnxruntime(tmp_path, Lambda(fn), [ember.randn(2, 3, 4), ember.randn(5, 3, 4)], [0])


def test_every_table_entry_names_an_ember_op():
    from ember.onnx._symbolics import SYMBOLICS
    from ember.profiler._ops import op_functions

    op_names = {name for _, name in op_functions()}
    recurrent_modes = {"LSTM", "GRU", "RNN_TANH", "RNN_RELU"}  # recorded as whole modules
    like_factories = {"zeros_like", "ones_like"}  # one closure the profiler names "make"
    assert set(SYMBOLICS) - op_names == recurrent_modes | like_factories


def test_newest_opset_exports(tmp_path):
    newest = onnx.defs.onnx_opset_version()
    model = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.Softmax(-1))
    path = _check_in_onnxruntime(
        tmp_path, Lambda(lambda x: model(x).mean(-1)), [ember.randn(2, 4)], opset=newest
    )
    assert onnx.load(str(path)).opset_import[0].version == newest
    with pytest.raises(ValueError, match="opset_version 16 is not supported"):
        ember.onnx.export(model, (ember.randn(2, 4),), tmp_path / "old.onnx", opset_version=16)


def test_unsupported_op_names_the_op_and_the_source_line(tmp_path):
    model = Lambda(lambda x: ember.linalg.det(x) + 1)
    with pytest.raises(ember.onnx.OnnxExporterError, match=r"op 'det'.*test_export\.py:\d+"):
        ember.onnx.export(model, (ember.randn(3, 3),), tmp_path / "m.onnx")


def test_in_place_change_through_a_view_raises_instead_of_exporting_a_wrong_graph(tmp_path):
    def through_view(x):
        out = x.clone()
        out[:, 0].add_(1.0)  # changes out, whose ONNX value cannot change
        return out

    with pytest.raises(ember.onnx.OnnxExporterError, match="changed it in place through a view"):
        ember.onnx.export(Lambda(through_view), (ember.randn(2, 3),), tmp_path / "m.onnx")

    def in_place_on_own_value(x):
        y = F.relu(x.view(3, 2), inplace=True)  # x itself is not read again: fine
        return y * 2

    _check_in_onnxruntime(tmp_path, Lambda(in_place_on_own_value), [ember.randn(2, 3)])


def test_data_dependent_branch_warns_and_is_traced_as_taken(tmp_path):
    def fn(x):
        if x.sum() > 0:
            return x * 2
        return x - 1

    with pytest.warns(ember.onnx.TracerWarning, match="Python value"):
        ember.onnx.export(Lambda(fn), (ember.ones(3),), tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"input": -np.ones(3, np.float32)})[0], -2.0)


def test_is_in_onnx_export_only_during_export(tmp_path):
    seen = []

    def fn(x):
        seen.append(ember.onnx.is_in_onnx_export())
        return x + 1

    ember.onnx.export(Lambda(fn), (ember.ones(2),), tmp_path / "m.onnx")
    assert seen == [True] and not ember.onnx.is_in_onnx_export()


def test_export_restores_training_mode_and_ops(tmp_path):
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout())
    model.train()
    ember.onnx.export(model, (ember.ones(1, 2),), tmp_path / "m.onnx")
    assert model.training and model[1].training
    assert ember.add(ember.ones(1), 1).item() == 2.0  # ops run unrecorded again


def test_export_inside_an_open_profile(tmp_path):
    import ember.profiler

    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    with ember.profiler.profile() as prof:
        path = _check_in_onnxruntime(tmp_path, model, [ember.randn(2, 3)])
    assert "linear" in {event.key for event in prof.key_averages()}
    assert path.exists()


def test_file_is_written_atomically_and_failed_export_keeps_the_old_file(tmp_path):
    path = tmp_path / "model.onnx"
    path.write_bytes(b"old")
    with pytest.raises(ember.onnx.OnnxExporterError):
        ember.onnx.export(Lambda(lambda x: ember.linalg.det(x)), (ember.ones(2, 2),), path)
    assert path.read_bytes() == b"old"
    ember.onnx.export(nn.Linear(2, 3), (ember.ones(1, 2),), path)
    assert os.listdir(tmp_path) == ["model.onnx"]  # no temporary file left behind
    onnx.checker.check_model(onnx.load(str(path)))


def test_export_to_a_binary_file_object_without_params(tmp_path):
    buffer = io.BytesIO()
    model = nn.Linear(2, 3)
    ember.onnx.export(model, (ember.ones(1, 2),), buffer, export_params=False, output_names=["y"])
    loaded = onnx.load_from_string(buffer.getvalue())
    assert {i.name for i in loaded.graph.input} == {"input", "weight", "bias"}
    assert not loaded.graph.initializer and loaded.graph.output[0].name == "y"
