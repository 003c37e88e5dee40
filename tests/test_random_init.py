"""nn.init and every layer's default initialisation draw PyTorch's values under the same seed.

Differential against real torch: each init function (float32 and float64 tensors), then the
next ``rand`` draws to check that the stream stands where torch's does; then whole models
built under one ``manual_seed`` compared parameter by parameter.
"""

import numpy as np
import pytest

import ember

SEEDS = (0, 7, 12345)


def _assert_close(ember_tensor, torch_tensor, ulps: int = 1) -> None:
    e = ember_tensor.detach().numpy()
    t = torch_tensor.detach().numpy()
    assert e.shape == t.shape and e.dtype == t.dtype
    as_int = np.int32 if t.dtype == np.float32 else np.int64
    distance = np.abs(e.view(as_int).astype(np.int64) - t.view(as_int).astype(np.int64))
    assert (distance <= ulps).all() or np.array_equal(e, t), distance.max()


def _in_both(torch, seed: int, make):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    made = make(ember), make(torch)
    after = ember.rand(4), torch.rand(4)  # the stream position after the init
    assert np.array_equal(after[0].numpy(), after[1].numpy())
    return made


INITS = {
    "uniform_": lambda m, dt: m.nn.init.uniform_(m.empty(5, 7, dtype=dt), -1.5, 2.0),
    "normal_": lambda m, dt: m.nn.init.normal_(m.empty(33, 3, dtype=dt), 1.0, 2.0),
    "normal_small": lambda m, dt: m.nn.init.normal_(m.empty(5, dtype=dt), 1.0, 2.0),
    "trunc_normal_wide": lambda m, dt: m.nn.init.trunc_normal_(m.empty(40, 9, dtype=dt)),
    "trunc_normal_std": lambda m, dt: m.nn.init.trunc_normal_(m.empty(64, dtype=dt), 0.5, 0.3),
    "trunc_normal_narrow": lambda m, dt: m.nn.init.trunc_normal_(
        m.empty(30, 7, dtype=dt), 0.0, 1.0, -0.1, 0.2
    ),
    "trunc_normal_tail": lambda m, dt: m.nn.init.trunc_normal_(
        m.empty(50, dtype=dt), 0.0, 1.0, 1.5, 3.0
    ),
    "xavier_uniform_": lambda m, dt: m.nn.init.xavier_uniform_(m.empty(5, 7, dtype=dt), 2.0),
    "xavier_normal_": lambda m, dt: m.nn.init.xavier_normal_(m.empty(6, 7, 2, dtype=dt)),
    "kaiming_uniform_": lambda m, dt: m.nn.init.kaiming_uniform_(m.empty(5, 7, 3, dtype=dt)),
    "kaiming_normal_": lambda m, dt: m.nn.init.kaiming_normal_(
        m.empty(8, 3, 3, 3, dtype=dt), mode="fan_out", nonlinearity="relu"
    ),
    "sparse_": lambda m, dt: m.nn.init.sparse_(m.empty(6, 40, dtype=dt), 0.3),
    "eye_": lambda m, dt: m.nn.init.eye_(m.empty(3, 5, dtype=dt)),
    "dirac_": lambda m, dt: m.nn.init.dirac_(m.empty(4, 2, 3, 3, dtype=dt), 2),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(INITS))
@pytest.mark.parametrize("seed", SEEDS)
def test_init_function_draws_torch_values(torch_mod, name, dtype, seed):
    make = INITS[name]
    ours, theirs = _in_both(torch_mod, seed, lambda m: make(m, getattr(m, dtype)))
    _assert_close(ours, theirs)


@pytest.mark.parametrize("shape", [(5, 7), (9, 4), (4, 3, 2), (1, 6)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_orthogonal_matches_torch_up_to_lapack_rounding(torch_mod, shape, dtype):
    def make(m):
        return m.nn.init.orthogonal_(m.empty(*shape, dtype=getattr(m, dtype)), gain=2.0)

    ours, theirs = _in_both(torch_mod, 3, make)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)


def test_trunc_normal_stays_in_bounds_and_redraws_as_torch(torch_mod):
    # a narrow window far in the tail takes many rejection rounds
    def make(m):
        return m.nn.init.trunc_normal_(m.empty(200), 0.0, 1.0, 2.5, 3.0)

    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        ours, theirs = _in_both(torch_mod, 11, make)
    assert ours.min().item() >= 2.5 and ours.max().item() <= 3.0
    _assert_close(ours, theirs)


def test_sparse_takes_positions_from_default_generator_as_torch(torch_mod):
    def make(m):
        g = m.Generator().manual_seed(5)
        return m.nn.init.sparse_(m.empty(5, 6), 0.4, generator=g)

    ours, theirs = _in_both(torch_mod, 2, make)
    _assert_close(ours, theirs)
    assert ((ours.numpy() == 0).sum(axis=0) == 2).all()


MODELS = {
    "linear": lambda m: m.nn.Sequential(m.nn.Linear(5, 3), m.nn.Linear(3, 2, bias=False)),
    "convs": lambda m: m.nn.Sequential(
        m.nn.Conv1d(2, 4, 3),
        m.nn.Conv2d(2, 4, 3, groups=2),
        m.nn.Conv3d(2, 4, 2),
        m.nn.ConvTranspose1d(2, 3, 3),
        m.nn.ConvTranspose2d(4, 2, 3, groups=2),
        m.nn.ConvTranspose3d(2, 2, 2),
    ),
    "embedding_norms": lambda m: m.nn.Sequential(
        m.nn.Embedding(10, 4, padding_idx=1),
        m.nn.EmbeddingBag(7, 3),
        m.nn.BatchNorm1d(4),
        m.nn.BatchNorm2d(4),
        m.nn.LayerNorm(4),
        m.nn.GroupNorm(2, 4),
        m.nn.Bilinear(3, 4, 5),
        m.nn.PReLU(),
    ),
    "recurrent": lambda m: m.nn.ModuleList(
        [
            m.nn.RNN(3, 4, 2),
            m.nn.LSTM(3, 4, 2, bidirectional=True),
            m.nn.LSTM(3, 4, proj_size=2),
            m.nn.GRU(3, 4, batch_first=True),
            m.nn.RNNCell(3, 4),
            m.nn.LSTMCell(3, 4),
            m.nn.GRUCell(3, 4),
        ]
    ),
    "attention": lambda m: m.nn.ModuleList(
        [
            m.nn.MultiheadAttention(8, 2),
            m.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, bias=False),
            m.nn.TransformerEncoderLayer(8, 2, 16),
            m.nn.TransformerDecoderLayer(8, 2, 16, norm_first=True),
        ]
    ),
}


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("seed", (0, 42))
def test_default_layer_init_equals_torch(torch_mod, name, seed):
    ours, theirs = _in_both(torch_mod, seed, MODELS[name])
    ours_params = dict(ours.named_parameters())
    theirs_params = dict(theirs.named_parameters())
    assert list(ours_params) == list(theirs_params)
    for key, value in theirs_params.items():
        _assert_close(ours_params[key], value)
    ours_buffers = dict(ours.named_buffers())
    for key, value in theirs.named_buffers():
        np.testing.assert_array_equal(ours_buffers[key].numpy(), value.numpy())


@pytest.mark.parametrize("seed", [0, 1, 67280421310721, 2**32 - 1, 2**32 + 5, 2**64 - 1])
def test_the_engines_c_seeding_is_init_genrand(seed):
    from ember._random.mt19937 import MT19937, STATE_WORDS, init_genrand

    state = MT19937(seed).bits.state["state"]  # seeded by NumPy's C routine where it has one
    np.testing.assert_array_equal(state["key"], init_genrand(seed))  # the Python fallback
    assert state["pos"] == STATE_WORDS
