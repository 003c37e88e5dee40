"""The fused attention: its compiled softmax passes against the NumPy fallback, and the fused
node (scaled_dot_product_attention, packed self-attention) against the composition of ember
ops and torch, with kernels on and off."""

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._kernels import jit
from ember.ops import attention

pytest.importorskip("numba")
from ember._kernels import attention_jit as kernels  # noqa: E402

DTYPES = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-14)}


def _scores(shape, dtype, seed=0):
    s = (np.random.default_rng(seed).standard_normal(shape) * 4).astype(dtype)
    if s.size and s.shape[-1] > 2:
        s[..., 0, 1] = -np.inf  # a masked position
        s[..., 1 % s.shape[-2], :] = -np.inf  # a fully masked row
    return s


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 5, 7), (1, 1, 1), (2, 9, 130), (4, 0, 6), (2, 3, 0)])
def test_softmax_kernel_matches_numpy_fallback(dtype, shape):
    s = _scores(shape, dtype)
    fast, slow = s.copy(), s.copy()
    attention._softmax_scores(np, fast, 0.37, None)
    with jit.disabled():
        attention._softmax_scores(np, slow, 0.37, None)
    np.testing.assert_allclose(fast, slow, **TOL[dtype])
    if s.size and s.shape[-1] > 2:
        assert (fast[..., 1, :] == 0).all() and (fast[..., 0, 1] == 0).all()
    serial = s.copy()  # on this thread only (a caller on ember's pool): the same values
    kernels.softmax_(serial, 0.37, parallel=False)
    np.testing.assert_array_equal(serial, fast)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_kernel_with_mask_large_scores_and_nan(dtype):
    s = np.random.default_rng(1).standard_normal((2, 4, 33)).astype(dtype) * 300
    s[0, 2, 5] = np.nan
    mask = np.where(np.random.default_rng(2).random((4, 33)) < 0.3, -np.inf, 0).astype(dtype)
    fast, slow = s.copy(), s.copy()
    with np.errstate(invalid="ignore"):
        attention._softmax_scores(np, fast, 0.5, mask)
        with jit.disabled():
            attention._softmax_scores(np, slow, 0.5, mask)
    assert np.isnan(fast[0, 2]).all() and np.isnan(slow[0, 2]).all()
    np.testing.assert_allclose(fast, slow, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dropout", [False, True])
@pytest.mark.parametrize("shape", [(3, 5, 7), (2, 9, 130), (0, 4, 3)])
def test_softmax_backward_kernel_matches_numpy_fallback(dtype, dropout, shape):
    rng = np.random.default_rng(3)
    probs = _scores(shape, dtype)
    attention._softmax_scores(np, probs, 1.0, None)
    g = rng.standard_normal(shape).astype(dtype)
    noise = (rng.random(shape) < 0.7).astype(dtype) / dtype(0.7) if dropout else None
    fast, slow = g.copy(), g.copy()
    attention._softmax_scores_backward(np, fast, probs, 0.25, noise)
    with jit.disabled():
        attention._softmax_scores_backward(np, slow, probs, 0.25, noise)
    np.testing.assert_allclose(fast, slow, **TOL[dtype])


def test_kernels_refuse_strided_or_mismatched_arrays():
    a = np.zeros((4, 6), np.float32)
    with pytest.raises(ValueError, match="C-contiguous"):
        kernels.softmax_(a[:, ::2], 1.0)
    with pytest.raises(ValueError, match="C-contiguous"):
        kernels.softmax_backward_(a, np.zeros((4, 5), np.float32), 1.0)
    with pytest.raises(ValueError, match="dtypes"):
        kernels.softmax_backward_(a, a.astype(np.float64), 1.0)


def _reference(q, k, v, mask=None, p=0.0, scale=None):
    """The composition the fused node replaces (dropout drawn by F.dropout)."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        scores = scores + mask
    return F.dropout(attention._safe_softmax(scores), p) @ v


def _qkv(shape_q, shape_kv, dtype, strided=False):
    rng = np.random.default_rng(4)
    make = lambda s: rng.standard_normal(s).astype(dtype)  # noqa: E731
    arrays = [make(shape_q), make(shape_kv), make(shape_kv[:-1] + (shape_kv[-1] + 1,))]
    if strided:  # non-contiguous views: swapped leading dims
        arrays = [np.ascontiguousarray(a.swapaxes(0, 1)).swapaxes(0, 1) for a in arrays]
    return [ember.tensor(a, requires_grad=True) for a in arrays]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernels_on", [True, False])
@pytest.mark.parametrize(
    "shape_q,shape_kv,strided",
    [
        ((2, 3, 5, 4), (2, 3, 7, 4), False),
        ((3, 2, 6, 8), (3, 2, 6, 8), True),
        ((2, 0, 4), (2, 3, 4), False),
    ],
)
def test_fused_sdpa_matches_composition(dtype, kernels_on, shape_q, shape_kv, strided):
    q, k, v = _qkv(shape_q, shape_kv, dtype, strided)
    mask = ember.tensor(np.triu(np.full((shape_q[-2], shape_kv[-2]), -np.inf), 1).astype(dtype))
    g = ember.tensor(np.random.default_rng(5).standard_normal(shape_q[:-1] + (v.shape[-1],)))
    g = g.to(q.dtype)
    results = []
    for fused in (True, False):
        with jit.disabled() if not kernels_on else _nothing():
            if fused:
                out = F.scaled_dot_product_attention(q, k, v, mask)
                # torch's CPU flash kernel records 4-D attention; ember's own node the rest
                assert out.grad_fn.name() == (
                    "ScaledDotProductFlashAttentionForCpuBackward0"
                    if q.dim() == 4
                    else "ScaledDotProductAttentionBackward0"
                )
            else:
                out = _reference(q, k, v, mask)
            grads = ember.autograd.grad(out, (q, k, v), g)
        results.append([out, *grads])
    for a, b in zip(*results):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **TOL[dtype])


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("kernels_on", [True, False])
def test_fused_sdpa_dropout_keeps_the_random_stream(kernels_on):
    q, k, v = _qkv((2, 2, 6, 4), (2, 2, 6, 4), np.float64)
    with jit.disabled() if not kernels_on else _nothing():
        ember.manual_seed(7)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
        after = ember.rand(3)
        ember.manual_seed(7)
        ref = _reference(q, k, v, p=0.4)
        assert ember.equal(after, ember.rand(3))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    g = ember.randn(*out.shape, dtype=out.dtype)
    for a, b in zip(ember.autograd.grad(out, (q, k, v), g), ember.autograd.grad(ref, (q, k, v), g)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


def test_fused_sdpa_gradcheck_first_and_second_order():
    q, k, v = _qkv((2, 3, 4), (2, 5, 4), np.float64)
    mask = ember.tensor(np.random.default_rng(6).random((3, 5)) < 0.8)
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, mask, scale=0.7)  # noqa: E731
    assert ember.autograd.gradcheck(fn, (q, k, v))
    assert ember.autograd.gradgradcheck(fn, (q, k, v))


def _mha_pair(batch_first, dropout=0.0):
    ember.manual_seed(0)
    mha = ember.nn.MultiheadAttention(12, 3, dropout=dropout, batch_first=batch_first).double()
    return mha


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("kernels_on", [True, False])
def test_packed_self_attention_matches_unpacked_path(batch_first, kernels_on):
    mha = _mha_pair(batch_first)
    rng = np.random.default_rng(8)
    x = ember.tensor(rng.standard_normal((5, 7, 12)), requires_grad=True)
    kpm = rng.random((5 if batch_first else 7, 7 if batch_first else 5)) < 0.2
    kpm[:, 0] = False  # no fully masked row: need_weights=True gives NaN there, as torch
    kpm = ember.tensor(kpm)
    length = 7 if batch_first else 5
    attn = ember.tensor(np.triu(np.full((length, length), -np.inf), 1))
    with jit.disabled() if not kernels_on else _nothing():
        packed, _ = mha(x, x, x, key_padding_mask=kpm, attn_mask=attn, need_weights=False)
        # need_weights=True takes the unpacked composition
        plain, _ = mha(x, x, x, key_padding_mask=kpm, attn_mask=attn, need_weights=True)
        assert packed.grad_fn is not plain.grad_fn
        g = ember.tensor(rng.standard_normal(tuple(packed.shape)))
        params = [x, *mha.parameters()]
        ga = ember.autograd.grad(packed, params, g)
        gb = ember.autograd.grad(plain, params, g)
    np.testing.assert_allclose(packed.detach().numpy(), plain.detach().numpy(), rtol=1e-10)
    for a, b in zip(ga, gb):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12)


def test_packed_self_attention_gradcheck_first_and_second_order():
    mha = _mha_pair(True)
    x = ember.tensor(np.random.default_rng(9).standard_normal((2, 3, 12)), requires_grad=True)
    fn = lambda x: mha(x, x, x, need_weights=False)[0]  # noqa: E731
    assert ember.autograd.gradcheck(fn, (x,))
    assert ember.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_encoder_layer_matches_torch_train_and_eval(dtype, torch_mod):
    make = lambda nn: nn.TransformerEncoderLayer(16, 4, 24, dropout=0.0, batch_first=True)  # noqa: E731
    torch_mod.manual_seed(0)  # the same weights whatever ran before
    t = make(torch_mod.nn).to(getattr(torch_mod, dtype))
    e = make(ember.nn).to(getattr(ember, dtype))
    e.load_state_dict({n: ember.tensor(p.detach().numpy()) for n, p in t.state_dict().items()})
    x = np.random.default_rng(10).standard_normal((3, 9, 16)).astype(dtype)
    xe = ember.tensor(x, requires_grad=True)
    xt = torch_mod.tensor(x, requires_grad=True)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-9, atol=1e-11)
    ye, yt = e(xe), t(xt)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), **tol)
    ye.square().sum().backward()
    yt.square().sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), **tol)
    exact = None
    if dtype == "float32":  # float32 parameter gradients: as close to float64's as torch's are
        t64 = make(torch_mod.nn).double()
        t64.load_state_dict({n: p.double() for n, p in t.state_dict().items()})
        x64 = torch_mod.tensor(x.astype(np.float64), requires_grad=True)
        t64(x64).square().sum().backward()
        exact = [p.grad.numpy() for p in t64.parameters()]
    for i, ((name, pe), pt) in enumerate(zip(e.named_parameters(), t.parameters())):
        if exact is None:
            np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), err_msg=name, **tol)
            continue
        # (norm1's weight gradient is a sum that cancels: float32 loses 1 % of it in both;
        # over 20 seeds ember's error was at most 3.8x torch's, and 1.6e-5 against gradients
        # up to ~100)
        error, torch_error = (np.abs(p.grad.numpy() - exact[i]).max() for p in (pe, pt))
        assert error <= 4 * torch_error + 5e-6, (name, error, torch_error)
    e.eval(), t.eval()
    with ember.no_grad(), torch_mod.no_grad():
        np.testing.assert_allclose(e(xe).numpy(), t(xt).numpy(), **tol)


@pytest.mark.parametrize("batch_first", [True, False])
def test_packed_self_attention_keeps_dropout_streams_and_output_layout(batch_first):
    # the attention's dropout and a dropout after it (drawn in the output's memory order, as
    # the encoder layer's dropout1) take the numbers they take in the unpacked composition
    mha = _mha_pair(batch_first, dropout=0.3)
    x = ember.tensor(np.random.default_rng(11).standard_normal((4, 6, 12)))
    outs = []
    for need_weights in (False, True):
        ember.manual_seed(5)
        out = mha(x, x, x, need_weights=need_weights)[0]
        outs.append(F.dropout(out, 0.5).detach().numpy())
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-10)
