"""The random nn ops draw torch's values after the same seed: dropout (element-wise,
channel-wise, alpha), gumbel_softmax and rrelu, and leave the generator where torch leaves it."""

import warnings

import numpy as np
import pytest

import ember

F = ember.nn.functional

SHAPES = [(1, 1, 1), (3, 5, 7), (4, 16, 9), (32, 64, 33)]
LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.transpose(0, 2),
    "sliced": lambda x: x[:, ::2],
}


def _run_both(torch_mod, fn, shape, dtype, layout="contiguous", seed=0, grad=False):
    """fn(F, x) under manual_seed(seed) in both libraries: outputs, next uniforms, grads."""
    x = np.random.default_rng(seed + 1).standard_normal(shape).astype(dtype)
    x[..., ::3] = 0.0  # zeros take a draw in rrelu (torch draws where x <= 0)
    runs = []
    for lib in (torch_mod, ember):
        leaf = lib.tensor(x, requires_grad=grad)
        lib.manual_seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(lib.nn.functional, LAYOUTS[layout](leaf))
        after = lib.rand(3).numpy()
        if grad:
            (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
        runs.append((out.detach().numpy(), after, leaf.grad.numpy() if grad else None))
    return runs


def _assert_same(runs):
    (theirs, their_next, their_grad), (ours, our_next, our_grad) = runs
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(our_next, their_next)  # same stream position afterwards
    if their_grad is not None:
        np.testing.assert_array_equal(our_grad, their_grad)


DROPOUTS = {
    "dropout": lambda F, x: F.dropout(x, 0.3),
    "dropout_p_0.9": lambda F, x: F.dropout(x, 0.9, True),
    "dropout1d": lambda F, x: F.dropout1d(x, 0.4),
    "dropout2d": lambda F, x: F.dropout2d(x.unsqueeze(-1), 0.4),
    "dropout3d": lambda F, x: F.dropout3d(x.unsqueeze(-1).unsqueeze(-1), 0.4),
    "alpha_dropout": lambda F, x: F.alpha_dropout(x, 0.3, True),
    "feature_alpha_dropout": lambda F, x: F.feature_alpha_dropout(x, 0.3, True),
}


@pytest.mark.parametrize("name", DROPOUTS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_family_draws_torchs_masks(torch_mod, name, shape, dtype):
    _assert_same(_run_both(torch_mod, DROPOUTS[name], shape, dtype, grad=True))


@pytest.mark.parametrize("name", DROPOUTS)
@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_dropout_of_non_contiguous_input_draws_in_torchs_memory_order(torch_mod, name, layout):
    _assert_same(_run_both(torch_mod, DROPOUTS[name], (6, 8, 5), "float32", layout, grad=True))


@pytest.mark.parametrize("name", ["dropout", "dropout1d", "alpha_dropout"])
def test_unbatched_and_half_dropout_match_torch(torch_mod, name):
    fn = DROPOUTS[name]
    _assert_same(_run_both(torch_mod, lambda F, x: fn(F, x[0]), (3, 4, 9), "float64"))
    for half in ("half", "bfloat16"):
        half_fn = lambda F, x: fn(F, getattr(x, half)()).float()  # noqa: E731
        _assert_same(_run_both(torch_mod, half_fn, (3, 4, 9), "float32"))


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_in_eval_or_of_empty_input_is_the_input_and_draws_nothing(torch_mod, name):
    fn = DROPOUTS[name]
    for shape in [(2, 3, 0), (0, 3, 4)]:
        _assert_same(_run_both(torch_mod, fn, shape, "float32"))
    ember.manual_seed(0)
    x = ember.randn(2, 3, 4)
    state = ember.get_rng_state()
    assert F.dropout(x, 0.5, training=False) is x and F.alpha_dropout(x, 0.5) is x
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        assert F.dropout2d(x, 0.0) is x
    assert ember.equal(ember.get_rng_state(), state)


def test_inplace_dropout_writes_torchs_values_into_the_input(torch_mod):
    x = np.random.default_rng(0).standard_normal((4, 6, 5)).astype("float32")
    results = []
    for lib in (torch_mod, ember):
        F_ = lib.nn.functional
        lib.manual_seed(7)
        tensors = [lib.tensor(x) for _ in range(4)]
        outs = [
            F_.dropout(tensors[0], 0.5, True, inplace=True),
            F_.dropout1d(tensors[1][0], 0.5, True, inplace=True),
            F_.alpha_dropout(tensors[2], 0.5, True, inplace=True),
            F_.dropout3d(tensors[3].unsqueeze(0), 0.5, True, inplace=True),
        ]
        assert all(o is t or o.data_ptr() == t.data_ptr() for o, t in zip(outs[::2], tensors[::2]))
        results.append([t.numpy() for t in tensors])
    for theirs, ours in zip(*results):
        assert ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)


def test_dropout_modules_draw_as_torch(torch_mod):
    x = np.random.default_rng(0).standard_normal((3, 4, 5, 6)).astype("float32")
    for name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"):
        outs = []
        for lib in (torch_mod, ember):
            layer = getattr(lib.nn, name)(0.25)
            lib.manual_seed(11)
            t = lib.tensor(x[0] if name == "Dropout1d" else x)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs.append(layer(t).numpy())
        np.testing.assert_array_equal(outs[1], outs[0])


def test_dropout_of_an_integer_tensor_raises_as_torch(torch_mod):
    for lib in (torch_mod, ember):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired"):
            lib.nn.functional.dropout(lib.tensor([1, 2, 3]), 0.5)
        with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
            lib.nn.functional.feature_alpha_dropout(lib.ones(3), 0.5, True)
        x = lib.ones(3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert lib.nn.functional.dropout2d(x, 0.5, training=False) is x


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_hard_gumbel_softmax_picks_torchs_samples(torch_mod, shape, dtype, layout):
    fn = lambda F, x: F.gumbel_softmax(x, tau=0.5, hard=True)  # noqa: E731
    _assert_same(_run_both(torch_mod, fn, shape, dtype, layout))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_soft_gumbel_softmax_draws_torchs_gumbels(torch_mod, dtype):
    """torch's gumbels are -log(Exp(1)) drawn in C order; softmax and log may differ by an
    ulp between the libraries, so the values agree to rounding and the stream exactly."""
    (theirs, their_next, _), (ours, our_next, _) = _run_both(
        torch_mod, lambda F, x: F.gumbel_softmax(x, tau=2.0, dim=1), (5, 17, 3), dtype
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-5 if dtype == "float32" else 1e-12)
    np.testing.assert_array_equal(our_next, their_next)
    logits = ember.randn(5, 17, dtype=getattr(ember, dtype))
    ember.manual_seed(3)
    sample = F.gumbel_softmax(logits, tau=2.0)
    ember.manual_seed(3)
    gumbels = -ember.empty_like(logits).exponential_().log()
    np.testing.assert_array_equal(sample.numpy(), ((logits + gumbels) / 2.0).softmax(-1).numpy())


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_rrelu_in_training_draws_torchs_slopes(torch_mod, shape, dtype, layout):
    fn = lambda F, x: F.rrelu(x, 0.1, 0.7, training=True)  # noqa: E731
    _assert_same(_run_both(torch_mod, fn, shape, dtype, layout, grad=True))


def test_rrelu_draws_one_uniform_per_non_positive_element(torch_mod):
    x = ember.tensor([0.0, -1.0, 1.0, -0.0, 2.0, -3.0], dtype=ember.float64)
    ember.manual_seed(0)
    y = F.rrelu(x, 0.125, 0.25, training=True)
    ember.manual_seed(0)
    slopes = ember.empty(4, dtype=ember.float64).uniform_(0.125, 0.25).numpy()
    np.testing.assert_allclose(y.numpy()[[1, 5]], [-slopes[1], -3 * slopes[3]], rtol=1e-15)
    np.testing.assert_array_equal(y.numpy()[[0, 2, 4]], [0.0, 1.0, 2.0])


def test_rrelu_eval_inplace_and_module_match_torch(torch_mod):
    eval_fn = lambda F, x: F.rrelu(x, 0.2, 0.5)  # noqa: E731
    _assert_same(_run_both(torch_mod, eval_fn, (3, 5, 7), "float32", grad=True))
    bf16 = lambda F, x: F.rrelu(x.bfloat16(), training=True).float()  # noqa: E731
    _assert_same(_run_both(torch_mod, bf16, (3, 5, 7), "float32"))
    for lib in (torch_mod, ember):
        with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
            lib.nn.functional.rrelu(lib.ones(2, dtype=lib.half), training=True)
    x = np.random.default_rng(0).standard_normal((4, 9)).astype("float32")
    outs = []
    for lib in (torch_mod, ember):
        lib.manual_seed(2)
        t = lib.tensor(x)
        lib.nn.functional.rrelu_(t, training=True)
        layer = lib.nn.RReLU(0.05, 0.3)
        outs.append((t.numpy(), layer(lib.tensor(x)).numpy(), layer.eval()(lib.tensor(x)).numpy()))
    for theirs, ours in zip(*outs):
        np.testing.assert_array_equal(ours, theirs)
    for lib in (torch_mod, ember):
        with pytest.raises(RuntimeError, match="Lower bound should be less than or equal"):
            lib.nn.functional.rrelu(lib.ones(2), 0.5, 0.1, training=True)
