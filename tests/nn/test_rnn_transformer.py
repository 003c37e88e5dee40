import numpy as np
import pytest

import ember
from tests.helpers import check_gradients


def _copy(e_mod, t_mod):
    e_mod.load_state_dict(
        {k: ember.tensor(v.detach().numpy()) for k, v in t_mod.state_dict().items()}
    )


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize(
    "options",
    [
        dict(),
        dict(num_layers=2, bidirectional=True, batch_first=True),
        dict(bias=False),
        dict(num_layers=2, dropout=0.0),
    ],
    ids=["plain", "deep-bidir-batchfirst", "nobias", "two-layers"],
)
def test_recurrent_layers_match_torch(cls, options, torch_mod):
    t = getattr(torch_mod.nn, cls)(3, 4, **options).double()
    e = getattr(ember.nn, cls)(3, 4, **options).double()
    _copy(e, t)
    assert list(e.state_dict()) == list(t.state_dict()) and repr(e) == repr(t)
    rng = np.random.default_rng(0)
    shape = (2, 5, 3) if options.get("batch_first") else (5, 2, 3)
    x = rng.standard_normal(shape)
    xe = ember.tensor(x, requires_grad=True)
    xt = torch_mod.tensor(x, requires_grad=True)
    oe, he = e(xe)
    ot, ht = t(xt)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-10)
    he, ht = (he[0], ht[0]) if cls == "LSTM" else (he, ht)
    np.testing.assert_allclose(he.detach().numpy(), ht.detach().numpy(), rtol=1e-10)
    (oe.sum() + he.pow(2).sum()).backward()
    (ot.sum() + ht.pow(2).sum()).backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-9)
    for (name, pe), pt in zip(e.named_parameters(), t.parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), rtol=1e-8, err_msg=name)


def test_recurrent_unbatched_input_and_initial_state(torch_mod):
    t, e = torch_mod.nn.LSTM(2, 3), ember.nn.LSTM(2, 3)
    _copy(e, t)
    x = np.random.default_rng(1).standard_normal((4, 2)).astype(np.float32)
    h0 = np.ones((1, 3), np.float32)
    oe, (he, ce) = e(ember.tensor(x), (ember.tensor(h0), ember.tensor(h0)))
    ot, (ht, ct) = t(torch_mod.tensor(x), (torch_mod.tensor(h0), torch_mod.tensor(h0)))
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ce.detach().numpy(), ct.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_gru_gradcheck():
    gru = ember.nn.GRU(2, 2).double()
    x = np.random.default_rng(2).standard_normal((3, 1, 2))
    check_gradients(lambda m, t: gru(t)[0], [x])


@pytest.mark.parametrize("batch_first", [False, True])
def test_multihead_attention_matches_torch(batch_first, torch_mod):
    t = torch_mod.nn.MultiheadAttention(8, 2, batch_first=batch_first).double()
    e = ember.nn.MultiheadAttention(8, 2, batch_first=batch_first).double()
    _copy(e, t)
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((5, 3, 8)), rng.standard_normal((4, 3, 8))
    if batch_first:
        q, k = q.transpose(1, 0, 2).copy(), k.transpose(1, 0, 2).copy()
    mask = np.triu(np.ones((5, 4), bool), 1)
    pad = np.zeros((3, 4), bool)
    pad[0, -1] = True
    for kwargs in (
        dict(),
        dict(attn_mask=mask),
        dict(key_padding_mask=pad),
        dict(attn_mask=mask.astype(float) * -2.0, average_attn_weights=False),
    ):
        ke = {n: ember.tensor(v) for n, v in kwargs.items() if not isinstance(v, bool)}
        kt = {n: torch_mod.tensor(v) for n, v in kwargs.items() if not isinstance(v, bool)}
        ke.update({n: v for n, v in kwargs.items() if isinstance(v, bool)})
        kt.update({n: v for n, v in kwargs.items() if isinstance(v, bool)})
        oe, we = e(ember.tensor(q), ember.tensor(k), ember.tensor(k), **ke)
        ot, wt = t(torch_mod.tensor(q), torch_mod.tensor(k), torch_mod.tensor(k), **kt)
        np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-10)
        np.testing.assert_allclose(we.detach().numpy(), wt.detach().numpy(), rtol=1e-10)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_matches_torch(norm_first, torch_mod):
    t = torch_mod.nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, norm_first=norm_first, activation="gelu"
    ).double()
    e = ember.nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, norm_first=norm_first, activation="gelu"
    ).double()
    _copy(e, t)
    assert repr(e) == repr(t)
    x = np.random.default_rng(0).standard_normal((5, 3, 8))
    mask = np.triu(np.ones((5, 5), bool), 1)
    xe = ember.tensor(x, requires_grad=True)
    xt = torch_mod.tensor(x, requires_grad=True)
    ye = e(xe, src_mask=ember.tensor(mask))
    yt = t(xt, src_mask=torch_mod.tensor(mask))
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-8, atol=1e-10)
    ye.pow(2).sum().backward()
    yt.pow(2).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-7, atol=1e-9)
