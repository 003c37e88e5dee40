"""Recurrent cells and layers vs torch: values, gradients, states, packed sequences, errors."""

import numpy as np
import pytest

import ember
from ember.nn.utils import rnn as e_rnn
from tests.helpers import check_gradients


def _copy(e_mod, t_mod):
    e_mod.load_state_dict(
        {k: ember.tensor(v.detach().numpy()) for k, v in t_mod.state_dict().items()}
    )


def _pair(make, torch_mod):
    t = make(torch_mod.nn).double()
    e = make(ember.nn).double()
    _copy(e, t)
    assert list(e.state_dict()) == list(t.state_dict())
    assert repr(e) == repr(t)
    return e, t


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [y for x in out for y in _flat(x)]
    if hasattr(out, "batch_sizes") and out.batch_sizes is not None:
        return [out.data]
    return [] if out is None else [out]


def _assert_same(e_out, t_out, e_leaves, t_leaves, rtol=1e-9):
    eo, to = _flat(e_out), _flat(t_out)
    assert len(eo) == len(to)
    for a, b in zip(eo, to):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=1e-12)
    rng = np.random.default_rng(5)
    weights = [rng.standard_normal(tuple(b.shape)) for b in to]
    sum((a * ember.tensor(w)).sum() for a, w in zip(eo, weights) if a.requires_grad).backward()
    sum(
        (b * torch_grad_tensor(b, w)).sum() for b, w in zip(to, weights) if b.requires_grad
    ).backward()
    for a, b in zip(e_leaves, t_leaves):
        if b.grad is None:
            assert a.grad is None
            continue
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-7, atol=1e-10)


def torch_grad_tensor(like, w):
    import torch

    return torch.tensor(w, dtype=like.dtype)


def _inputs(torch_mod, *arrays):
    e = [ember.tensor(a, requires_grad=True) for a in arrays]
    t = [torch_mod.tensor(a, requires_grad=True) for a in arrays]
    return e, t


CELLS = [
    lambda nn: nn.RNNCell(3, 4),
    lambda nn: nn.RNNCell(3, 4, bias=False, nonlinearity="relu"),
    lambda nn: nn.LSTMCell(3, 4),
    lambda nn: nn.GRUCell(3, 4),
    lambda nn: nn.GRUCell(3, 4, bias=False),
]


@pytest.mark.parametrize("make", CELLS, ids=["rnn", "rnn-relu-nobias", "lstm", "gru", "gru-nb"])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(make, batched, torch_mod):
    e, t = _pair(make, torch_mod)
    rng = np.random.default_rng(0)
    lead = (2,) if batched else ()
    x, h = rng.standard_normal(lead + (3,)), rng.standard_normal(lead + (4,))
    is_lstm = isinstance(e, ember.nn.LSTMCell)
    (xe, he), (xt, ht) = _inputs(torch_mod, x, h)
    state_e, state_t = ((he, he * 2), (ht, ht * 2)) if is_lstm else (he, ht)
    leaves_e = [xe, he, *e.parameters()]
    leaves_t = [xt, ht, *t.parameters()]
    _assert_same(e(xe, state_e), t(xt, state_t), leaves_e, leaves_t)
    # without a state: zeros
    np.testing.assert_allclose(
        _flat(e(ember.tensor(x)))[0].detach().numpy(),
        _flat(t(torch_mod.tensor(x)))[0].detach().numpy(),
        rtol=1e-10,
    )


def test_lstm_cell_double_backward():
    cell = ember.nn.LSTMCell(2, 2).double()
    x = np.random.default_rng(1).standard_normal((3, 2))
    check_gradients(lambda m, t: cell(t)[1], [x])


def test_cell_errors_match_torch(torch_mod):
    for nn in (ember.nn, torch_mod.nn):
        cell = nn.RNNCell(3, 4)
        lib = ember if nn is ember.nn else torch_mod
        cases = [
            ((lib.zeros(2, 5),), RuntimeError, "inconsistent input_size: got 5 expected 3"),
            ((lib.zeros(2, 2, 3),), ValueError, "Expected input to be 1D or 2D, got 3D"),
            ((lib.zeros(2, 3), lib.zeros(3, 4)), RuntimeError, "doesn't match hidden0 batch"),
        ]
        for args, err, phrase in cases:
            with pytest.raises(err, match=phrase):
                cell(*args)
        with pytest.raises(RuntimeError, match="lstm_cell expects two hidden states"):
            nn.LSTMCell(3, 4)(lib.zeros(2, 3), (lib.zeros(2, 4),))
        with pytest.raises(RuntimeError, match="Unknown nonlinearity: gelu"):
            nn.RNNCell(3, 4, nonlinearity="gelu")(lib.zeros(2, 3))


@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.LSTM(3, 4, proj_size=2),
        lambda nn: nn.LSTM(3, 4, proj_size=2, num_layers=2, bidirectional=True, batch_first=True),
        lambda nn: nn.RNN(3, 4, nonlinearity="relu", bidirectional=True),
        lambda nn: nn.GRU(3, 4, num_layers=2, dropout=0.3).eval(),
    ],
    ids=["lstm-proj", "lstm-proj-deep-bidir", "rnn-relu-bidir", "gru-dropout-eval"],
)
def test_layers_with_states_match_torch(make, torch_mod):
    e, t = _pair(make, torch_mod)
    rng = np.random.default_rng(2)
    states = e.num_layers * (2 if e.bidirectional else 1)
    x = rng.standard_normal((2, 5, 3) if e.batch_first else (5, 2, 3))
    h = rng.standard_normal((states, 2, e.proj_size or 4))
    c = rng.standard_normal((states, 2, 4))
    (xe, he, ce), (xt, ht, ct) = _inputs(torch_mod, x, h, c)
    lstm = e.mode == "LSTM"
    out_e = e(xe, (he, ce) if lstm else he)
    out_t = t(xt, (ht, ct) if lstm else ht)
    leaves = lambda a, m: [*a, *m.parameters()]
    _assert_same(out_e, out_t, leaves([xe, he, ce], e), leaves([xt, ht, ct], t))
    # unbatched input gives the same as a batch of one
    o1, _ = e(ember.tensor(x[0] if e.batch_first else x[:, 0]))
    o2, _ = t(torch_mod.tensor(x[0] if e.batch_first else x[:, 0]))
    np.testing.assert_allclose(o1.detach().numpy(), o2.detach().numpy(), rtol=1e-10)


def test_rnn_helpers_and_flatten_parameters(torch_mod):
    e, t = _pair(lambda nn: nn.LSTM(3, 4, num_layers=2, bidirectional=True), torch_mod)
    e.flatten_parameters()
    assert [[tuple(p.shape) for p in ws] for ws in e.all_weights] == [
        [tuple(p.shape) for p in ws] for ws in t.all_weights
    ]
    assert e._flat_weights_names == t._flat_weights_names


def test_recurrent_state_and_constructor_errors_match_torch(torch_mod):
    for lib in (ember, torch_mod):
        gru, lstm = lib.nn.GRU(3, 4, num_layers=2), lib.nn.LSTM(3, 4, proj_size=2, num_layers=2)
        z = lib.zeros
        cases = [
            (
                lambda: gru(z(5, 2, 3), z(1, 2, 4)),
                RuntimeError,
                r"Expected hidden size \(2, 2, 4\), got \[1, 2, 4\]",
            ),
            (
                lambda: gru(z(5, 3), z(2, 2, 4)),
                RuntimeError,
                "For unbatched 2-D input, hx should also be 2-D but got 3-D",
            ),
            (
                lambda: gru(z(5, 2, 3), z(2, 4)),
                RuntimeError,
                "For batched 3-D input, hx should also be 3-D but got 2-D",
            ),
            (
                lambda: lstm(z(5, 2, 3), (z(2, 2, 4), z(2, 2, 4))),
                RuntimeError,
                r"Expected hidden\[0\] size \(2, 2, 2\), got \[2, 2, 4\]",
            ),
            (
                lambda: lstm(z(5, 2, 3), (z(2, 2, 2), z(2, 2, 2))),
                RuntimeError,
                r"Expected hidden\[1\] size \(2, 2, 4\), got \[2, 2, 2\]",
            ),
            (
                lambda: lstm(z(5, 2, 3), (z(2, 2), z(2, 2, 2))),
                RuntimeError,
                r"hx and cx should also be 3-D but got \(2-D, 3-D\)",
            ),
            (lambda: gru(z(5, 2, 3, 1)), ValueError, "GRU: Expected input to be 2D or 3D, got 4D"),
            (
                lambda: gru(z(5, 2, 7)),
                RuntimeError,
                "input.size.-1. must be equal to input_size. Expected 3, got 7",
            ),
            (
                lambda: lib.nn.LSTM(3, 4, proj_size=4),
                ValueError,
                "proj_size has to be smaller than hidden_size",
            ),
            (
                lambda: lib.nn.LSTM(3, 4, proj_size=-1),
                ValueError,
                "proj_size should be a positive integer",
            ),
            (lambda: lib.nn.RNN(3, 0), ValueError, "hidden_size must be greater than zero"),
            (
                lambda: lib.nn.RNN(3, 4, num_layers=0),
                ValueError,
                "num_layers must be greater than zero",
            ),
            (lambda: lib.nn.RNN(3.0, 4), TypeError, "input_size should be of type int, got: float"),
            (
                lambda: lib.nn.GRU(3, 4, dropout=1.5),
                ValueError,
                "dropout should be a number in range",
            ),
        ]
        for call, err, phrase in cases:
            with pytest.raises(err, match=phrase):
                call()
        with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
            lib.nn.RNN(3, 4, dropout=0.5)


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU", "LSTM-proj"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequences_through_recurrent_layers_match_torch(mode, enforce_sorted, torch_mod):
    proj = 2 if mode == "LSTM-proj" else 0
    mode = mode.split("-")[0]
    kw = dict(proj_size=proj) if proj else {}
    e, t = _pair(
        lambda nn: getattr(nn, mode)(3, 4, num_layers=2, bidirectional=True, **kw), torch_mod
    )
    rng = np.random.default_rng(3)
    lengths = [5, 3, 2] if enforce_sorted else [2, 5, 3]
    x = rng.standard_normal((5, 3, 3))
    h = rng.standard_normal((4, 3, proj or 4))
    (xe, he), (xt, ht) = _inputs(torch_mod, x, h)
    pe = e_rnn.pack_padded_sequence(xe, lengths, enforce_sorted=enforce_sorted)
    pt = torch_mod.nn.utils.rnn.pack_padded_sequence(xt, lengths, enforce_sorted=enforce_sorted)
    c = rng.standard_normal((4, 3, 4))
    state_e = (he, ember.tensor(c)) if mode == "LSTM" else he
    state_t = (ht, torch_mod.tensor(c)) if mode == "LSTM" else ht
    out_e, st_e = e(pe, state_e)
    out_t, st_t = t(pt, state_t)
    np.testing.assert_array_equal(out_e.batch_sizes.numpy(), out_t.batch_sizes.numpy())
    pad_e, len_e = e_rnn.pad_packed_sequence(out_e, batch_first=True, padding_value=-1.0)
    pad_t, len_t = torch_mod.nn.utils.rnn.pad_packed_sequence(
        out_t, batch_first=True, padding_value=-1.0
    )
    np.testing.assert_array_equal(len_e.numpy(), len_t.numpy())
    _assert_same((pad_e, st_e), (pad_t, st_t), [xe, he, *e.parameters()], [xt, ht, *t.parameters()])


def test_padding_and_packing_helpers_match_torch(torch_mod):
    rng = np.random.default_rng(4)
    seqs = [rng.standard_normal((n, 2)) for n in (2, 4, 1)]
    se = [ember.tensor(s, requires_grad=True) for s in seqs]
    st = [torch_mod.tensor(s, requires_grad=True) for s in seqs]
    tu = torch_mod.nn.utils.rnn
    for kw in (dict(), dict(batch_first=True, padding_value=7.0), dict(padding_side="left")):
        np.testing.assert_array_equal(
            e_rnn.pad_sequence(se, **kw).detach().numpy(),
            tu.pad_sequence(st, **kw).detach().numpy(),
        )
    pe, pt = (
        e_rnn.pack_sequence(se, enforce_sorted=False),
        tu.pack_sequence(st, enforce_sorted=False),
    )
    for a, b in zip(pe, pt):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    pad_e, lens_e = e_rnn.pad_packed_sequence(pe, total_length=6)
    pad_t, lens_t = tu.pad_packed_sequence(pt, total_length=6)
    np.testing.assert_array_equal(pad_e.detach().numpy(), pad_t.detach().numpy())
    assert lens_e.dtype == ember.int64 and lens_e.tolist() == lens_t.tolist() == [2, 4, 1]
    for a, b in zip(e_rnn.unpack_sequence(pe), seqs):
        np.testing.assert_array_equal(a.detach().numpy(), b)
    for a, b in zip(e_rnn.unpad_sequence(pad_e, lens_e), seqs):
        np.testing.assert_array_equal(a.detach().numpy(), b)
    (pad_e * ember.arange(6.0).reshape(6, 1, 1)).sum().backward()
    (pad_t * torch_mod.arange(6.0, dtype=torch_mod.float64).reshape(6, 1, 1)).sum().backward()
    for a, b in zip(se, st):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
    # lengths as a tensor, batch_first input
    x = rng.standard_normal((3, 4, 2))
    pe = e_rnn.pack_padded_sequence(ember.tensor(x), ember.tensor([4, 2, 1]), batch_first=True)
    pt = tu.pack_padded_sequence(torch_mod.tensor(x), torch_mod.tensor([4, 2, 1]), batch_first=True)
    np.testing.assert_array_equal(pe.data.numpy(), pt.data.numpy())
    assert pe.sorted_indices is None and pe.double().data.dtype == ember.float64


def test_packing_errors_match_torch(torch_mod):
    for lib, tu in ((ember, e_rnn), (torch_mod, torch_mod.nn.utils.rnn)):
        x = lib.zeros(3, 2, 4)
        cases = [
            (
                lambda: tu.pack_padded_sequence(x, [2, 3]),
                RuntimeError,
                "must be sorted in decreasing order",
            ),
            (lambda: tu.pack_padded_sequence(x, [3, 0]), RuntimeError, "has to be greater than 0"),
            (
                lambda: tu.pack_padded_sequence(x, [3, 2, 1]),
                RuntimeError,
                r"got 3 \(batch_size=2\)",
            ),
            (
                lambda: tu.pad_packed_sequence(tu.pack_padded_sequence(x, [3, 2]), total_length=2),
                ValueError,
                "total_length=2 and max sequence length being 3",
            ),
            (
                lambda: tu.pad_sequence([x[0]], padding_side="up"),
                RuntimeError,
                "padding_side to be one of left or right",
            ),
        ]
        for call, err, phrase in cases:
            with pytest.raises(err, match=phrase):
                call()


def test_lstm_layer_gradgradcheck_on_noncontiguous_input():
    lstm = ember.nn.LSTM(2, 2, bidirectional=True, proj_size=1).double()
    x = np.random.default_rng(6).standard_normal((2, 3, 2))  # made (3, 2, 2) non-contiguous
    check_gradients(lambda m, t: lstm(t)[0], [x], noncontiguous=True)


def test_zero_batch_and_zero_length_match_torch(torch_mod):
    for lib in (ember, torch_mod):
        out, (h, _) = lib.nn.LSTM(3, 4)(lib.zeros(5, 0, 3))
        assert tuple(out.shape) == (5, 0, 4) and tuple(h.shape) == (1, 0, 4)
        assert tuple(lib.nn.GRUCell(3, 4)(lib.zeros(0, 3)).shape) == (0, 4)
        with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0"):
            lib.nn.GRU(3, 4)(lib.zeros(0, 2, 3))


def test_dropout_between_layers_and_dtype_mismatch(torch_mod):
    rnn = ember.nn.RNN(3, 4, num_layers=2, dropout=1.0)
    x = ember.randn(5, 2, 3)
    # every unit of layer 0's output dropped: layer 1 sees zeros, as an RNN fed zeros does
    out_train, _ = rnn(x)
    zero_fed = ember.nn.RNN(4, 4)
    zero_fed.load_state_dict(
        {k.replace("l1", "l0"): v for k, v in rnn.state_dict().items() if "l1" in k}, strict=False
    )
    expected, _ = zero_fed(ember.zeros(5, 2, 4))
    np.testing.assert_allclose(out_train.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    out_eval, _ = rnn.eval()(x)
    assert not np.allclose(out_eval.detach().numpy(), expected.detach().numpy())
    for lib in (ember, torch_mod):
        with pytest.raises(
            ValueError, match=r"RNN input dtype \(.*float32\) does not match weight"
        ):
            lib.nn.LSTM(3, 4).double()(lib.zeros(5, 2, 3))


def test_packed_sequence_constructor_derives_unsorted_indices():
    data, sizes = ember.arange(6.0).reshape(3, 2), ember.tensor([2, 1])
    packed = e_rnn.PackedSequence(data, sizes, ember.tensor([1, 0]))
    assert packed.unsorted_indices.tolist() == [1, 0]
    assert e_rnn.PackedSequence((data, sizes)).sorted_indices is None
    padded, lengths = e_rnn.pad_packed_sequence(packed, batch_first=True)
    assert lengths.tolist() == [1, 2] and padded[1, 1].tolist() == [4.0, 5.0]


def test_packed_lstm_classifier_training_matches_torch(torch_mod):
    rng = np.random.default_rng(11)
    tokens = rng.integers(1, 10, size=(3, 6))
    lengths = [4, 6, 2]
    for i, n in enumerate(lengths):
        tokens[i, n:] = 0
    labels = np.array([2, 0, 1])

    def build(lib):
        return lib.nn.ModuleList(
            [
                lib.nn.Embedding(10, 4, padding_idx=0),
                lib.nn.LSTM(4, 5, batch_first=True),
                lib.nn.Linear(5, 3),
            ]
        ).double()

    def train(lib, model):
        opt = lib.optim.SGD(model.parameters(), lr=0.5)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            packed = lib.nn.utils.rnn.pack_padded_sequence(
                model[0](lib.tensor(tokens)),
                lib.tensor(lengths),
                batch_first=True,
                enforce_sorted=False,
            )
            _, (h_n, _) = model[1](packed)
            loss = lib.nn.functional.cross_entropy(model[2](h_n[-1]), lib.tensor(labels))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    t_model, e_model = build(torch_mod), build(ember)
    e_model.load_state_dict({k: ember.tensor(v.numpy()) for k, v in t_model.state_dict().items()})
    t_losses, e_losses = train(torch_mod, t_model), train(ember, e_model)
    assert t_losses[-1] < t_losses[0]
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-9)
    for k, v in t_model.state_dict().items():
        np.testing.assert_allclose(e_model.state_dict()[k].numpy(), v.numpy(), rtol=1e-8, err_msg=k)


@pytest.mark.parametrize("name", ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"])
def test_torch_level_cell_functions_match_torch(name, torch_mod):
    from ember.nn.modules import rnn_cells

    gates = {"lstm_cell": 4, "gru_cell": 3}.get(name, 1)
    rng = np.random.default_rng(12)
    arrays = [
        rng.standard_normal((2, 3)),
        rng.standard_normal((2, 4)),
        rng.standard_normal((gates * 4, 3)),
        rng.standard_normal((gates * 4, 4)),
        rng.standard_normal(gates * 4),
        rng.standard_normal(gates * 4),
    ]
    (x, h, *ws_e), (xt, ht, *ws_t) = (
        [ember.tensor(a, requires_grad=True) for a in arrays],
        [torch_mod.tensor(a, requires_grad=True) for a in arrays],
    )
    if name == "lstm_cell":
        out_e = rnn_cells.lstm_cell(x, (h, h * 0.5), *ws_e)
        out_t = torch_mod.lstm_cell(xt, (ht, ht * 0.5), *ws_t)
    else:
        out_e = getattr(rnn_cells, name)(x, h, *ws_e)
        out_t = getattr(torch_mod, name)(xt, ht, *ws_t)
    _assert_same(out_e, out_t, [x, h, *ws_e], [xt, ht, *ws_t])


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.nn.RNN(2, 3, bias=1),
        lambda m: m.nn.GRU(2, 3, bias="yes"),
        lambda m: m.nn.LSTM(2, 3, batch_first=0),
        lambda m: m.nn.RNN(0, 3),
        lambda m: m.nn.LSTM(-1, 3),
        lambda m: m.nn.RNNCell(2, 3)(m.zeros(2), m.zeros(1, 1, 1, 3)),
        lambda m: m.nn.GRUCell(2, 3)(m.zeros(4, 2), m.zeros(1, 4, 3)),
        lambda m: m.nn.LSTMCell(2, 3)(m.zeros(2), (m.zeros(3), m.zeros(1, 1, 3))),
    ],
    ids=["rnn-bias", "gru-bias", "lstm-batch_first", "rnn-size-0", "lstm-size-neg", "rnncell-4d",
         "grucell-3d", "lstmcell-hx1-3d"],
)  # fmt: skip
def test_constructor_and_state_errors_as_torch(torch_mod, make):
    errors = []
    for m in (ember, torch_mod):
        with pytest.raises((TypeError, ValueError)) as info:
            make(m)
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]
