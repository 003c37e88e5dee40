"""Attention and Transformer layers vs torch: values, gradients, masks, options, errors."""

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from tests.helpers import check_gradients


def _copy(e_mod, t_mod):
    e_mod.load_state_dict(
        {k: ember.tensor(v.detach().numpy()) for k, v in t_mod.state_dict().items()}
    )


def _pair(make, torch_mod, check_repr=True):
    t = make(torch_mod.nn).double()
    e = make(ember.nn).double()
    _copy(e, t)
    assert list(e.state_dict()) == list(t.state_dict())
    # ModuleList's "(0-1): 2 x Layer" grouping of repeats is not in ember's repr yet
    assert repr(e) == repr(t) or not check_repr
    return e, t


def _close(a, b, rtol=1e-9):
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=1e-11)


def _leaves(torch_mod, *arrays):
    return (
        [ember.tensor(a, requires_grad=True) for a in arrays],
        [torch_mod.tensor(a, requires_grad=True) for a in arrays],
    )


def _backward_and_compare(ye, yt, leaves_e, leaves_t, torch_mod):
    w = np.random.default_rng(9).standard_normal(tuple(yt.shape))
    (ye * ember.tensor(w)).sum().backward()
    (yt * torch_mod.tensor(w)).sum().backward()
    for a, b in zip(leaves_e, leaves_t):
        if b.grad is None:
            assert a.grad is None or not a.grad.abs().sum().item()
            continue
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-10)


SDPA_CASES = [
    dict(),
    dict(is_causal=True),
    dict(scale=0.3),
    dict(mask="bool"),
    dict(mask="float"),
    dict(enable_gqa=True),
]


@pytest.mark.parametrize(
    "case", SDPA_CASES, ids=lambda c: "-".join(map(str, c.values())) or "plain"
)
def test_scaled_dot_product_attention_matches_torch(case, torch_mod):
    case = dict(case)
    rng = np.random.default_rng(0)
    kv_heads = 1 if case.get("enable_gqa") else 3
    q = rng.standard_normal((2, 3, 4, 8))
    k, v = rng.standard_normal((2, kv_heads, 5, 8)), rng.standard_normal((2, kv_heads, 5, 6))
    (qe, ke, ve), (qt, kt, vt) = _leaves(torch_mod, q, k, v)
    kind = case.pop("mask", None)
    if kind == "bool":
        mask = rng.uniform(size=(4, 5)) > 0.3
        mask[1] = False  # a fully masked row gives zeros
        case["attn_mask"] = mask
    elif kind == "float":
        case["attn_mask"] = rng.standard_normal((3, 4, 5))
    ce = {n: ember.tensor(x) if isinstance(x, np.ndarray) else x for n, x in case.items()}
    ct = {n: torch_mod.tensor(x) if isinstance(x, np.ndarray) else x for n, x in case.items()}
    ye = EF.scaled_dot_product_attention(qe, ke, ve, **ce)
    yt = torch_mod.nn.functional.scaled_dot_product_attention(qt, kt, vt, **ct)
    _close(ye, yt)
    _backward_and_compare(ye, yt, [qe, ke, ve], [qt, kt, vt], torch_mod)


def test_scaled_dot_product_attention_double_backward_and_dropout():
    rng = np.random.default_rng(1)
    arrays = [
        rng.standard_normal((2, 3, 4)),
        rng.standard_normal((2, 5, 4)),
        rng.standard_normal((2, 5, 3)),
    ]
    check_gradients(
        lambda m, q, k, v: EF.scaled_dot_product_attention(q, k, v, is_causal=True), arrays
    )
    ones = ember.ones(1, 200, 4)
    out = EF.scaled_dot_product_attention(ones, ones, ember.ones(1, 200, 1), dropout_p=0.25)
    # each output is the kept fraction of the weights, scaled by 1/(1-p): mean 1 overall
    assert out.mean().item() == pytest.approx(1.0, abs=0.05)
    assert out.std().item() > 0.01


def test_scaled_dot_product_attention_errors_match_torch(torch_mod):
    for lib in (ember, torch_mod):
        sdpa = lib.nn.functional.scaled_dot_product_attention
        q = lib.zeros(2, 4, 8, dtype=lib.float64)
        with pytest.raises(
            RuntimeError, match="Expected query, key, and value to have the same dtype"
        ):
            sdpa(q, q.float(), q)
        with pytest.raises(RuntimeError, match="Expected attn_mask dtype to be bool or float"):
            sdpa(q, q, q, attn_mask=lib.zeros(4, 4, dtype=lib.int64))
        with pytest.raises(
            RuntimeError, match="Explicit attn_mask should not be set when is_causal"
        ):
            sdpa(q.requires_grad_(), q, q, attn_mask=lib.ones(4, 4, dtype=lib.bool), is_causal=True)


MHA_CASES = [
    (dict(), dict()),
    (dict(batch_first=True), dict(key_padding_mask="bool")),
    (dict(kdim=3, vdim=5), dict(attn_mask="bool2d", need_weights=False)),
    (dict(add_bias_kv=True), dict(attn_mask="float3d", key_padding_mask="float")),
    (dict(add_zero_attn=True, bias=False), dict(attn_mask="bool2d", average_attn_weights=False)),
    (
        dict(add_bias_kv=True, add_zero_attn=True, kdim=3, vdim=5),
        dict(key_padding_mask="bool", need_weights=False),
    ),
    (dict(), dict(attn_mask="causal", is_causal=True, need_weights=False)),
]


@pytest.mark.parametrize("options,call", MHA_CASES, ids=[str(i) for i in range(len(MHA_CASES))])
def test_multihead_attention_options_match_torch(options, call, torch_mod):
    e, t = _pair(lambda nn: nn.MultiheadAttention(8, 2, **options), torch_mod)
    rng = np.random.default_rng(2)
    batch_first = options.get("batch_first", False)
    kd, vd = options.get("kdim", 8), options.get("vdim", 8)
    q, k, v = (
        rng.standard_normal((4, 3, 8)),
        rng.standard_normal((6, 3, kd)),
        rng.standard_normal((6, 3, vd)),
    )
    if batch_first:
        q, k, v = (np.ascontiguousarray(a.swapaxes(0, 1)) for a in (q, k, v))
    if call.get("attn_mask") == "causal":
        q = k = v = rng.standard_normal((6, 3, 8))
    masks = {
        "bool": lambda: rng.uniform(size=(3, 6)) > 0.7,
        "float": lambda: rng.standard_normal((3, 6)),
        "bool2d": lambda: np.triu(np.ones((4, 6), bool), 1),
        "float3d": lambda: rng.standard_normal((6, 4, 6)),
        "causal": lambda: np.triu(np.ones((6, 6), bool), 1),
    }
    call = {n: masks[x]() if isinstance(x, str) else x for n, x in call.items()}
    ce = {n: ember.tensor(x) if isinstance(x, np.ndarray) else x for n, x in call.items()}
    ct = {n: torch_mod.tensor(x) if isinstance(x, np.ndarray) else x for n, x in call.items()}
    (qe, ke, ve), (qt, kt, vt) = _leaves(torch_mod, q, k, v)
    oe, we = e(qe, ke, ve, **ce)
    ot, wt = t(qt, kt, vt, **ct)
    _close(oe, ot)
    if wt is None:
        assert we is None
    else:
        _close(we, wt)
    _backward_and_compare(
        oe, ot, [qe, ke, ve, *e.parameters()], [qt, kt, vt, *t.parameters()], torch_mod
    )


def test_multihead_attention_unbatched_and_errors(torch_mod):
    e, t = _pair(lambda nn: nn.MultiheadAttention(8, 2, kdim=3, vdim=5), torch_mod)
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((4, 8)), rng.standard_normal((6, 3)), rng.standard_normal((6, 5))
    pad = np.array([False, True, False, False, False, True])
    oe, we = e(
        ember.tensor(q), ember.tensor(k), ember.tensor(v), key_padding_mask=ember.tensor(pad)
    )
    ot, wt = t(
        torch_mod.tensor(q),
        torch_mod.tensor(k),
        torch_mod.tensor(v),
        key_padding_mask=torch_mod.tensor(pad),
    )
    _close(oe, ot)
    _close(we, wt)
    for lib in (ember, torch_mod):
        m = lib.nn.MultiheadAttention(8, 2)
        x = lib.zeros(4, 2, 8)
        cases = [
            (
                lambda: m(x, x, x, is_causal=True),
                RuntimeError,
                "Need attn_mask if specifying the is_causal hint",
            ),
            (
                lambda: m(x, x, x, attn_mask=lib.zeros(3, 3)),
                RuntimeError,
                r"The shape of the 2D attn_mask is .*\[3, 3\]\), but should be \(4, 4\)",
            ),
            (
                lambda: m(x, x, x, attn_mask=lib.zeros(3, 4, 4)),
                RuntimeError,
                r"The shape of the 3D attn_mask is .*but should be \(4, 4, 4\)",
            ),
            (
                lambda: m(x, x, x, attn_mask=lib.zeros(4)),
                AssertionError,
                "expected `attn_mask` to be `None`, 2-D or 3-D but found 1-D",
            ),
            (
                lambda: m(x, x, x, attn_mask=lib.zeros(4, 4, dtype=lib.int64)),
                AssertionError,
                "only bool and floating types of attn_mask",
            ),
            (
                lambda: m(x[:, 0], x, x),
                AssertionError,
                "expected `key` and `value` to be 2-D but found 3-D and 3-D",
            ),
            (
                lambda: lib.nn.MultiheadAttention(8, 3),
                AssertionError,
                "embed_dim must be divisible by num_heads",
            ),
            (
                lambda: lib.nn.MultiheadAttention(0, 3),
                ValueError,
                "embed_dim and num_heads must be greater than 0",
            ),
        ]
        for call, err, phrase in cases:
            with pytest.raises(err, match=phrase):
                call()


def _stack_makers():
    def encoder(nn):
        layer = nn.TransformerEncoderLayer(
            8, 2, 16, dropout=0.0, activation="gelu", norm_first=True
        )
        return nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8), enable_nested_tensor=False)

    def decoder(nn):
        layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True, bias=False)
        return nn.TransformerDecoder(layer, 2)

    def transformer(nn):
        return nn.Transformer(8, 2, 1, 2, 16, dropout=0.0, activation=nn.functional.silu)

    return [encoder, decoder, transformer]


@pytest.mark.parametrize("make", _stack_makers(), ids=["encoder", "decoder", "transformer"])
def test_transformer_stacks_match_torch(make, torch_mod):
    e, t = _pair(make, torch_mod, check_repr=False)
    rng = np.random.default_rng(4)
    src, tgt = rng.standard_normal((5, 3, 8)), rng.standard_normal((4, 3, 8))
    (se, te), (st, tt) = _leaves(torch_mod, src, tgt)
    src_pad = np.zeros((3, 5), bool)
    src_pad[1, -2:] = True
    if isinstance(e, ember.nn.TransformerEncoder):
        mask = ember.nn.Transformer.generate_square_subsequent_mask(5).double()
        ye = e(se, mask=mask, src_key_padding_mask=ember.tensor(src_pad))
        yt = t(
            st, mask=torch_mod.tensor(mask.numpy()), src_key_padding_mask=torch_mod.tensor(src_pad)
        )
        leaves = ([se], [st])
    elif isinstance(e, ember.nn.TransformerDecoder):  # batch_first
        mem_e, mem_t = se.transpose(0, 1), st.transpose(0, 1)
        ye = e(
            te.transpose(0, 1),
            mem_e,
            tgt_mask=ember.tensor(np.triu(np.ones((4, 4), bool), 1)),
            memory_key_padding_mask=ember.tensor(src_pad),
        )
        yt = t(
            tt.transpose(0, 1),
            mem_t,
            tgt_mask=torch_mod.tensor(np.triu(np.ones((4, 4), bool), 1)),
            memory_key_padding_mask=torch_mod.tensor(src_pad),
        )
        leaves = ([se, te], [st, tt])
    else:
        tgt_mask = t.generate_square_subsequent_mask(4, dtype=torch_mod.float64)
        ye = e(
            se,
            te,
            tgt_mask=ember.tensor(tgt_mask.numpy()),
            src_key_padding_mask=ember.tensor(src_pad),
            memory_key_padding_mask=ember.tensor(src_pad),
        )
        yt = t(
            st,
            tt,
            tgt_mask=tgt_mask,
            src_key_padding_mask=torch_mod.tensor(src_pad),
            memory_key_padding_mask=torch_mod.tensor(src_pad),
        )
        leaves = ([se, te], [st, tt])
    _close(ye, yt, rtol=1e-8)
    _backward_and_compare(
        ye, yt, leaves[0] + list(e.parameters()), leaves[1] + list(t.parameters()), torch_mod
    )


def test_transformer_helpers_and_errors(torch_mod):
    np.testing.assert_array_equal(
        ember.nn.Transformer.generate_square_subsequent_mask(4).numpy(),
        torch_mod.nn.Transformer.generate_square_subsequent_mask(4).numpy(),
    )
    assert ember.nn.Transformer.generate_square_subsequent_mask(3).dtype == ember.float32
    for lib in (ember, torch_mod):
        model = lib.nn.Transformer(8, 2, 1, 1, 16)
        with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
            model(lib.zeros(5, 3, 8), lib.zeros(4, 2, 8))
        with pytest.raises(
            RuntimeError, match="the feature number of src and tgt must be equal to d_model"
        ):
            model(lib.zeros(5, 3, 6), lib.zeros(4, 3, 6))
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
            lib.nn.TransformerEncoderLayer(8, 2, activation="tanh")
    # Transformer initialises every matrix with xavier_uniform_: |w| <= sqrt(6 / (fan_in + fan_out))
    w = ember.nn.Transformer(8, 2, 1, 1, 16).encoder.layers[0].linear1.weight
    assert w.abs().max().item() <= (6 / 24) ** 0.5


def test_multihead_attention_double_backward_and_empty_keys(torch_mod):
    mha = ember.nn.MultiheadAttention(4, 2, add_bias_kv=True).double()
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((3, 2, 4)), rng.standard_normal((2, 2, 4))]
    check_gradients(lambda m, q, k: mha(q, k, k)[0], arrays, noncontiguous=True)
    for lib in (ember, torch_mod):
        sdpa = lib.nn.functional.scaled_dot_product_attention
        out = sdpa(lib.ones(2, 1, 4), lib.zeros(2, 0, 4), lib.zeros(2, 0, 5))
        assert out.tolist() == [[[0.0] * 5]] * 2  # nothing to attend to: zeros


def test_encoder_layer_with_an_activation_module_matches_torch(torch_mod):
    e, t = _pair(
        lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=nn.GELU()),
        torch_mod,
    )
    assert e.activation_relu_or_gelu == t.activation_relu_or_gelu == 2
    x = np.random.default_rng(6).standard_normal((4, 2, 8))
    _close(e(ember.tensor(x)), t(torch_mod.tensor(x)))


def test_encoder_is_causal_hint_matches_torch(torch_mod):
    def make(nn):
        layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
        return nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

    e, t = _pair(make, torch_mod, check_repr=False)
    x = np.random.default_rng(7).standard_normal((2, 5, 8))
    mask = np.triu(np.full((5, 5), -np.inf), 1)
    for hint in (True, None):
        _close(
            e(ember.tensor(x), mask=ember.tensor(mask), is_causal=hint),
            t(torch_mod.tensor(x), mask=torch_mod.tensor(mask), is_causal=hint),
        )
    for lib, m in ((ember, e), (torch_mod, t)):
        with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
            m(lib.tensor(x), is_causal=True)
