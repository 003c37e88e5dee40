"""TransformerEncoderLayer's one-call inference path (ember.ops.encoder_inference): equal to
the ordinary forward (which grad mode with parameters that require grad forces), with the
compiled kernels and without, to torch, and taken only where the ordinary forward would
compute the same thing."""

import numpy as np
import pytest

import ember
from ember._kernels import jit
from ember.nn.modules import transformer as transformer_module


@pytest.fixture
def calls(monkeypatch):
    """How many times the layer's forward took the one-call path."""
    seen = []
    original = transformer_module.encoder_layer_inference

    def counted(*args, **kwargs):
        out = original(*args, **kwargs)
        seen.append(out is not None)
        return out

    monkeypatch.setattr(transformer_module, "encoder_layer_inference", counted)
    return seen


def _layer(dtype=ember.float32, d_model=12, heads=3, ff=20, **options):
    ember.manual_seed(3)
    options.setdefault("dropout", 0.1)
    layer = ember.nn.TransformerEncoderLayer(d_model, heads, ff, **options).to(dtype)
    with ember.no_grad():  # biases away from their zero init, norms away from (1, 0)
        for p in layer.parameters():
            p.add_(ember.randn(*p.shape, dtype=dtype) * 0.1)
    return layer.eval()


def _ordinary(layer, x):
    with ember.enable_grad():  # parameters that require grad: the ordinary forward
        return layer(x).detach().numpy()


def _tolerance(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == ember.float32 else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post", "pre"])
@pytest.mark.parametrize("batch_first", [True, False], ids=["NLE", "LNE"])
@pytest.mark.parametrize("kernels", [True, False], ids=["jit", "numpy"])
def test_inference_path_equals_the_ordinary_forward(dtype, norm_first, batch_first, kernels, calls):
    layer = _layer(dtype, norm_first=norm_first, batch_first=batch_first)
    shape = (5, 7, 12) if batch_first else (7, 5, 12)
    x = ember.randn(*shape, dtype=dtype)
    expected = _ordinary(layer, x)
    with ember.no_grad():
        if kernels:
            got = layer(x)
        else:
            with jit.disabled():
                got = layer(x)
    assert calls == [True] and not got.requires_grad
    np.testing.assert_allclose(got.numpy(), expected, **_tolerance(dtype))


@pytest.mark.parametrize("batch_first", [True, False], ids=["NLE", "LNE"])
def test_spans_over_threads_equal_one_span(batch_first, calls):
    layer = _layer(ember.float32, d_model=64, heads=4, ff=96, batch_first=batch_first)
    shape = (6, 48, 64) if batch_first else (48, 6, 64)
    x = ember.randn(*shape)
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        with ember.no_grad():
            one = layer(x).numpy()
        ember.set_num_threads(2)
        with ember.no_grad():
            two = layer(x).numpy()
    finally:
        ember.set_num_threads(before)
    assert calls == [True, True]
    np.testing.assert_allclose(two, one, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(two, _ordinary(layer, x), rtol=1e-5, atol=1e-5)


def test_non_contiguous_input_and_stack(calls):
    layer = _layer(ember.float64, batch_first=True)
    encoder = ember.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    x = ember.randn(7, 4, 12, dtype=ember.float64).transpose(0, 1)  # (4, 7, 12), strided
    expected = _ordinary(encoder, x)
    with ember.inference_mode():
        got = encoder(x)
    assert calls == [True, True]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("masks", ["causal", "float", "per-head", "padding", "both", "dead-row"])
@pytest.mark.parametrize("threads", [1, 2])
def test_masks_equal_the_ordinary_forward(dtype, masks, threads, calls):
    layer = _layer(dtype, d_model=16, heads=2, ff=24, batch_first=True)
    n, length = 4, 130  # 2 spans on 2 threads
    x = ember.randn(n, length, 16, dtype=dtype)
    kwargs = {}
    if masks in ("causal", "both"):
        kwargs["src_mask"] = ember.nn.Transformer.generate_square_subsequent_mask(
            length, dtype=dtype
        )
        kwargs["is_causal"] = True
    if masks == "float":
        kwargs["src_mask"] = ember.randn(length, length, dtype=dtype)
    if masks == "per-head":
        kwargs["src_mask"] = ember.randn(n * 2, length, length) > 1.0
    if masks in ("padding", "both", "dead-row"):
        padding = ember.zeros(n, length, dtype=ember.bool)
        padding[1, -7:] = True
        if masks == "dead-row":
            padding[2] = True  # every key of a sequence masked: rows of zeros, as torch's sdpa
        kwargs["src_key_padding_mask"] = padding
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(threads)
        with ember.enable_grad():
            expected = layer(x, **kwargs).detach().numpy()
        with ember.no_grad():
            got = layer(x, **kwargs).numpy()
    finally:
        ember.set_num_threads(before)
    assert calls == [True]
    np.testing.assert_allclose(got, expected, **_tolerance(dtype))


def test_causal_hint_without_a_mask_raises_as_the_ordinary_forward(calls):
    layer = _layer(batch_first=True)
    with ember.no_grad(), pytest.raises(RuntimeError, match="Need attn_mask"):
        layer(ember.randn(2, 5, 12), is_causal=True)
    with ember.no_grad(), pytest.raises(RuntimeError, match="2D attn_mask"):
        layer(ember.randn(2, 5, 12), src_mask=ember.zeros(4, 5))
    assert not any(calls)


def test_zero_size_batch_takes_the_ordinary_forward(calls):
    layer = _layer(batch_first=True)
    with ember.no_grad():
        out = layer(ember.randn(0, 5, 12))
    assert tuple(out.shape) == (0, 5, 12) and calls == [False]


@pytest.mark.parametrize(
    "case",
    ["training", "grad", "hook", "gelu", "odd-norm", "subclass", "no-bias", "int-mask"],
)
def test_ordinary_forward_where_the_one_call_would_differ(case, calls):
    options = {"gelu": dict(activation="gelu"), "no-bias": dict(bias=False)}.get(case, {})
    layer = _layer(batch_first=True, **options)
    x = ember.randn(3, 5, 12)
    kwargs = {}
    seen = []
    if case == "training":
        layer.train()
    elif case == "int-mask":  # the ordinary forward raises its error
        kwargs["src_mask"] = ember.zeros(5, 5, dtype=ember.int64)
    elif case == "hook":
        layer.linear2.register_forward_hook(lambda module, args, out: seen.append(1))
    elif case == "odd-norm":
        layer.norm2 = ember.nn.RMSNorm(12)
    elif case == "subclass":

        class Scaled(ember.nn.TransformerEncoderLayer):
            def _ff_block(self, x):
                return super()._ff_block(x) * 2

        scaled = Scaled(12, 3, 20, batch_first=True)
        scaled.load_state_dict(layer.state_dict())
        layer = scaled.eval()
    if case == "grad":
        out = layer(x)  # grad mode on, parameters require grad
        assert out.requires_grad
    elif case == "int-mask":
        with ember.no_grad(), pytest.raises(AssertionError, match="only bool and floating"):
            layer(x, **kwargs)
    else:
        with ember.no_grad():
            layer(x, **kwargs)
    assert not any(calls)
    assert seen == ([1] if case == "hook" else [])


def test_the_profiler_sees_the_ops_of_the_layer(calls):
    layer = _layer(batch_first=True)
    with ember.no_grad(), ember.profiler.profile() as prof:
        layer(ember.randn(2, 5, 12))
    assert not any(calls)
    assert any("linear" in event.key for event in prof.key_averages())


@pytest.mark.filterwarnings("ignore:ember.compile")
def test_compiled_inference_equals_eager(calls):
    layer = _layer(ember.float32, batch_first=True)
    x = ember.randn(3, 6, 12)
    with ember.no_grad():
        eager = layer(x).numpy()
        fn = ember.compile(lambda t: layer(t))
        outs = [fn(x).numpy() for _ in range(3)]
    for out in outs:
        np.testing.assert_allclose(out, eager, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post", "pre"])
def test_inference_path_matches_torch(dtype, norm_first, torch_mod, calls):
    torch = torch_mod
    t = torch.nn.TransformerEncoderLayer(
        16, 4, 40, dropout=0.1, batch_first=True, norm_first=norm_first
    ).to(getattr(torch, dtype))
    e = ember.nn.TransformerEncoderLayer(
        16, 4, 40, dropout=0.1, batch_first=True, norm_first=norm_first
    ).to(getattr(ember, dtype))
    with torch.no_grad():
        for p in t.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    t.eval(), e.eval()
    x = np.random.default_rng(0).standard_normal((3, 9, 16)).astype(dtype)
    with torch.no_grad():
        expected = t(torch.tensor(x)).numpy()
    with ember.no_grad():
        got = e(ember.tensor(x)).numpy()
    assert calls == [True]
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got, expected, **tol)
