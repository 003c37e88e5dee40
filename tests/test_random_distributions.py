"""Random draws beyond the plain streams, against real torch under the same seed:
multinomial (both algorithms, errors), the rejection samplers (_standard_gamma, poisson,
binomial, _sample_dirichlet) and ember.distributions' sample/rsample.

Each case also checks the stream position afterwards: the next ``rand`` draws equal torch's.
"""

import warnings

import numpy as np
import pytest

import ember
from ember import _random_ops as _sampling

SEEDS = (0, 3, 2024)


class _Ember:
    """ember, with the samplers that ``ember/__init__.py`` does not export yet."""

    _SAMPLERS = ("poisson", "binomial", "_standard_gamma", "_sample_dirichlet")

    def __getattr__(self, name):
        if name in self._SAMPLERS:
            return getattr(_sampling, name)
        return getattr(ember, name)


EMBER = _Ember()


def _both(torch, seed: int, draw):
    """``draw(module)`` under ``manual_seed(seed)`` in ember and torch, then the positions."""
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    ours, theirs = draw(EMBER), draw(torch)
    assert np.array_equal(ember.rand(5).numpy(), torch.rand(5).numpy()), "stream position"
    return ours, theirs


# --- multinomial ----------------------------------------------------------------------------
def _weights(seed: int, shape: tuple, zeros: bool) -> np.ndarray:
    weights = np.random.RandomState(seed).rand(*shape) ** 3
    if zeros and shape[-1] > 2:
        weights[..., ::3] = 0
    return weights


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1,), (6,), (3, 7), (4, 100), (2, 10**4)])
@pytest.mark.parametrize("seed", SEEDS)
def test_multinomial_with_replacement_equals_torch(torch_mod, seed, shape, dtype):
    weights = _weights(seed, shape, zeros=True)

    def draw(m):
        return m.multinomial(m.tensor(weights, dtype=getattr(m, dtype)), 50, replacement=True)

    ours, theirs = _both(torch_mod, seed, draw)
    assert ours.dtype == ember.int64 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not np.isin(ours.numpy(), np.flatnonzero(weights.reshape(-1, shape[-1])[0] == 0)).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,num_samples", [((6,), 1), ((6,), 4), ((3, 7), 7), ((5, 100), 9)])
@pytest.mark.parametrize("seed", SEEDS)
def test_multinomial_without_replacement_equals_torch(torch_mod, seed, shape, num_samples, dtype):
    weights = _weights(seed, shape, zeros=False)

    def draw(m):
        return m.multinomial(m.tensor(weights, dtype=getattr(m, dtype)), num_samples)

    ours, theirs = _both(torch_mod, seed, draw)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    rows = ours.numpy().reshape(-1, num_samples)
    assert all(len(set(row)) == num_samples for row in rows)


def test_multinomial_without_replacement_skips_zero_weights_while_it_can(torch_mod):
    weights = [0.0, 1.0, 0.0, 3.0, 2.0, 0.0]

    def draw(m):
        return m.multinomial(m.tensor(weights), 3)

    ours, theirs = _both(torch_mod, 9, draw)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert sorted(ours.tolist()) == [1, 3, 4]


@pytest.mark.parametrize("shape,num_samples", [((7,), 7), ((3, 20), 15), ((2, 700), 9)])
def test_multinomial_without_replacement_orders_tied_zero_weights_as_torch(
    torch_mod, shape, num_samples
):
    weights = _weights(5, shape, zeros=False)
    weights[np.random.RandomState(6).rand(*shape) < 0.9] = 0  # more draws than non-zeros
    weights[..., 1] = 0.5
    for seed in SEEDS:
        ours, theirs = _both(
            torch_mod, seed, lambda m: m.multinomial(m.tensor(weights), num_samples)
        )
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("n", [2, 5, 16, 17, 40, 100, 700, 2000])
def test_std_sort_topk_replays_torch_topk_ties(torch_mod, n):
    from ember._random.std_sort import topk_largest

    rs = np.random.RandomState(n)
    for levels in (1, 2, 5):
        values = rs.randint(0, levels, n).astype(np.float32)
        for k in sorted({1, 2, n // 64 or 1, n // 3 or 1, n - 1 or 1, n}):
            expected = torch_mod.topk(torch_mod.tensor(values), k).indices.tolist()
            assert topk_largest(values.tolist(), k) == expected, (levels, k)


def test_tensor_multinomial_and_generator_argument_equal_torch(torch_mod):
    weights = [[0.2, 0.3, 0.5], [1.0, 0.0, 1.0]]
    ours = ember.tensor(weights).multinomial(6, True, generator=ember.Generator().manual_seed(4))
    theirs = torch_mod.tensor(weights).multinomial(
        6, True, generator=torch_mod.Generator().manual_seed(4)
    )
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_multinomial_consumes_one_float64_uniform_per_sample(torch_mod):
    def draw(m):
        first = m.multinomial(m.tensor([0.5, 0.5]), 3, True)
        return m.cat([first, m.multinomial(m.tensor([[1.0, 2.0, 3.0]] * 2), 2).reshape(-1)], 0)

    ours, theirs = _both(torch_mod, 1, lambda m: draw(m).reshape(-1))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


MULTINOMIAL_ERRORS = [
    ([0.5, -0.1, 0.6], 2, True, "encountering probability entry < 0"),
    ([0.5, float("nan"), 0.6], 2, True, "encountering probability entry < 0"),
    ([0.5, float("inf"), 0.6], 2, True, "encountering probability entry = infinity or NaN"),
    ([0.0, 0.0], 2, True, "sum of probabilities <= 0"),
    ([0.0, 0.0], 1, False, "sum of probabilities <= 0"),
    ([[1.0, 1.0], [0.0, 0.0]], 1, False, "sum of probabilities <= 0"),
    ([0.5, -0.1, 0.6], 2, False, "either `inf`, `nan` or element < 0"),
    ([0.5, float("nan"), 0.6], 2, False, "either `inf`, `nan` or element < 0"),
    ([0.5, float("inf"), 0.6], 2, False, "either `inf`, `nan` or element < 0"),
    ([0.5, 0.5], 3, False, "cannot sample n_sample > prob_dist.size(-1) samples without"),
    ([0.5, 0.5], 0, True, "cannot sample n_sample <= 0 samples"),
    ([[[0.5, 0.5]]], 1, True, "prob_dist must be 1 or 2 dim"),
    (0.5, 1, True, "prob_dist must be 1 or 2 dim"),
]


@pytest.mark.parametrize("weights,num_samples,replacement,message", MULTINOMIAL_ERRORS)
def test_multinomial_errors_as_torch(torch_mod, weights, num_samples, replacement, message):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match=message.replace("(", r"\(").replace(")", r"\)")):
            m.multinomial(m.tensor(weights), num_samples, replacement)


def test_multinomial_of_integers_raises_as_torch(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match="only supports floating-point dtypes for input"):
            m.multinomial(m.tensor([1, 2]), 1)


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_of_a_transposed_tensor_draws_in_its_memory_order(torch_mod, replacement):
    weights = _weights(2, (6, 5), zeros=False)

    def draw(m):
        return m.multinomial(m.tensor(weights).t(), 3, replacement)

    ours, theirs = _both(torch_mod, 8, draw)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("replacement", [False, True])
def test_multinomial_of_float16_weights_equals_torch(torch_mod, replacement):
    weights = _weights(3, (4, 9), zeros=True)

    def draw(m):
        return m.multinomial(m.tensor(weights, dtype=m.float16), 5, replacement)

    ours, theirs = _both(torch_mod, 1, draw)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_multinomial_of_zero_categories_raises_as_torch(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
            m.multinomial(m.empty(3, 0), 1, True)


def test_multinomial_of_zero_rows_draws_nothing(torch_mod):
    ours, theirs = _both(torch_mod, 0, lambda m: m.multinomial(m.empty(0, 3), 2, True))
    assert tuple(ours.shape) == tuple(theirs.shape) == (0, 2)


# --- the rejection samplers ------------------------------------------------------------------
def _concentrations(seed: int, size: int, dtype: str) -> np.ndarray:
    rs = np.random.RandomState(seed)
    alpha = rs.gamma(0.7, 3.0, size=size)
    alpha[: min(size, 4)] = [0.01, 0.5, 1.0, 40.0][: min(size, 4)]
    return alpha.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [1, 7, 100, 10**4])
@pytest.mark.parametrize("seed", SEEDS)
def test_standard_gamma_equals_torch(torch_mod, seed, size, dtype):
    alpha = _concentrations(seed, size, dtype)

    def draw(m):
        m.randn(seed % 3)  # sometimes leaves a cached normal, which the sampler uses first
        return m._standard_gamma(m.tensor(alpha))

    ours, theirs = _both(torch_mod, seed, draw)
    assert ours.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_standard_gamma_of_zero_is_the_smallest_normal(torch_mod):
    ours, theirs = _both(torch_mod, 0, lambda m: m._standard_gamma(m.tensor([0.0, 2.0, 0.0])))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours[0].item() == np.finfo(np.float32).tiny


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(2,), (5, 3), (40, 7), (3, 40), (2, 300)])
@pytest.mark.parametrize("seed", SEEDS)
def test_sample_dirichlet_equals_torch(torch_mod, seed, shape, dtype):
    alpha = _concentrations(seed, int(np.prod(shape)), dtype).reshape(shape) + 0.05

    def draw(m):
        return m._sample_dirichlet(m.tensor(alpha))

    ours, theirs = _both(torch_mod, seed, draw)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [1, 9, 100, 10**4])
@pytest.mark.parametrize("seed", SEEDS)
def test_poisson_equals_torch(torch_mod, seed, size, dtype):
    rates = np.random.RandomState(seed).gamma(0.5, 30.0, size=size)
    rates[: min(size, 5)] = [0.0, 9.99, 10.0, 2000.5, 0.3][: min(size, 5)]
    rates = rates.astype(dtype)
    ours, theirs = _both(torch_mod, seed, lambda m: m.poisson(m.tensor(rates)))
    assert ours.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", [6, 100, 10**4])
@pytest.mark.parametrize("seed", SEEDS)
def test_binomial_equals_torch(torch_mod, seed, size, dtype):
    rs = np.random.RandomState(seed)
    count = rs.randint(0, 300, size=size).astype(dtype)
    prob = rs.rand(size).astype(dtype)
    # every branch: p = 0, p = 1, n = 0, inversion (n·p < 10) both sides, BTRS both sides
    count[:6] = [10, 10, 0, 300, 300, 1e6]
    prob[:6] = [0.0, 1.0, 0.5, 0.02, 0.97, 0.3]

    def draw(m):
        return m.binomial(m.tensor(count), m.tensor(prob))

    ours, theirs = _both(torch_mod, seed, draw)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_samplers_keep_zero_dimensional_shapes(torch_mod):
    def draw(m):
        rate = m.tensor(3.0)
        return [
            m.poisson(rate),
            m._standard_gamma(rate),
            m.binomial(m.tensor(5.0), m.tensor(0.5)),
            m.distributions.Gamma(rate, rate).rsample(),
            m.distributions.Poisson(rate).sample(),
        ]

    ours, theirs = _both(torch_mod, 2, draw)
    for o, t in zip(ours, theirs, strict=True):
        assert tuple(o.shape) == tuple(t.shape) == ()
        assert o.item() == t.item()


def test_samplers_with_a_generator_leave_the_default_stream_alone(torch_mod):
    def draw(m):
        g = m.Generator().manual_seed(8)
        rates = m.tensor([3.0, 30.0])
        return m.cat([m.poisson(rates, g), m._standard_gamma(rates, g)])

    ours, theirs = _both(torch_mod, 1, draw)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    "call,error,message",
    [
        (lambda m: m.poisson(m.tensor([1.0, -1.0])), RuntimeError, "invalid Poisson rate"),
        (lambda m: m.poisson(m.tensor([1, 2])), NotImplementedError, "poisson_cpu"),
        (lambda m: m._standard_gamma(m.tensor([1, 2])), NotImplementedError, "gamma_cpu"),
        (lambda m: m._sample_dirichlet(m.tensor([1, 2])), NotImplementedError, "dirichlet"),
        (
            lambda m: m.binomial(m.tensor([1, 2]), m.tensor([0.5, 0.5])),
            ValueError,
            "binomial only supports floating-point dtypes for count, got: Long",
        ),
        (
            lambda m: m.binomial(m.tensor([1.0]), m.tensor([0.5], dtype=m.float64)),
            RuntimeError,
            "Found dtype Double but expected Float",
        ),
    ],
)
def test_sampler_errors_as_torch(torch_mod, call, error, message):
    for m in (EMBER, torch_mod):
        with pytest.raises(error, match=message):
            call(m)


# --- reparameterisation gradients ------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_standard_gamma_grad_equals_torch(torch_mod, dtype):
    alpha = torch_mod.tensor(_concentrations(4, 400, dtype)) + 0.01
    x = torch_mod._standard_gamma(alpha)
    theirs = torch_mod._standard_gamma_grad(alpha, x).numpy()
    ours = _sampling._standard_gamma_grad(
        ember.tensor(alpha.numpy()), ember.tensor(x.numpy())
    ).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=1e-5 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dirichlet_grad_equals_torch(torch_mod, dtype):
    alpha = torch_mod.tensor(_concentrations(5, 300, dtype).reshape(100, 3)) + 0.05
    x = torch_mod._sample_dirichlet(alpha)
    total = alpha.sum(-1, True).expand_as(alpha)
    theirs = torch_mod._dirichlet_grad(x, alpha, total).numpy()
    ours = _sampling._dirichlet_grad(*(ember.tensor(t.numpy()) for t in (x, alpha, total))).numpy()
    # torch evaluates the float32 series in float32; here float64, rounded once
    np.testing.assert_allclose(ours, theirs, rtol=5e-4 if dtype == "float32" else 1e-10)


# --- ember.distributions ----------------------------------------------------------------------
def _params(m, dtype, *values):
    return [m.tensor(v, dtype=getattr(m, dtype)) for v in values]


DISTRIBUTIONS = {
    "Normal": lambda m, dt: m.distributions.Normal(*_params(m, dt, [0.0, 1.0], [1.0, 0.5])),
    "Uniform": lambda m, dt: m.distributions.Uniform(*_params(m, dt, [0.0, 1.0], [1.0, 4.0])),
    "Bernoulli": lambda m, dt: m.distributions.Bernoulli(*_params(m, dt, [0.1, 0.5, 0.9])),
    "Categorical": lambda m, dt: m.distributions.Categorical(
        *_params(m, dt, [[0.1, 0.5, 0.4], [0.0, 0.3, 0.7]])
    ),
    "OneHotCategorical": lambda m, dt: m.distributions.OneHotCategorical(
        *_params(m, dt, [0.1, 0.5, 0.4])
    ),
    "Exponential": lambda m, dt: m.distributions.Exponential(*_params(m, dt, [0.5, 2.0])),
    "Laplace": lambda m, dt: m.distributions.Laplace(*_params(m, dt, [0.0, 1.0], [1.0, 2.0])),
    "Cauchy": lambda m, dt: m.distributions.Cauchy(*_params(m, dt, [0.0, 1.0], [1.0, 2.0])),
    "Gumbel": lambda m, dt: m.distributions.Gumbel(*_params(m, dt, [0.0, 1.0], [1.0, 2.0])),
    "LogNormal": lambda m, dt: m.distributions.LogNormal(*_params(m, dt, [0.0, 1.0], [1.0, 0.5])),
    "Geometric": lambda m, dt: m.distributions.Geometric(*_params(m, dt, [0.1, 0.7])),
    "MultivariateNormal": lambda m, dt: m.distributions.MultivariateNormal(
        *_params(m, dt, [0.0, 1.0], [[2.0, 0.5], [0.5, 1.0]])
    ),
    "Gamma": lambda m, dt: m.distributions.Gamma(*_params(m, dt, [0.5, 1.0, 9.0], [1.0, 2.0, 0.5])),
    "Beta": lambda m, dt: m.distributions.Beta(*_params(m, dt, [0.5, 1.0, 9.0], [1.0, 2.0, 7.0])),
    "Dirichlet": lambda m, dt: m.distributions.Dirichlet(*_params(m, dt, [[0.5, 1.0, 3.0]])),
    "Chi2": lambda m, dt: m.distributions.Chi2(*_params(m, dt, [0.5, 1.0, 3.0])),
    "StudentT": lambda m, dt: m.distributions.StudentT(*_params(m, dt, [0.5, 1.0, 30.0])),
    "Poisson": lambda m, dt: m.distributions.Poisson(*_params(m, dt, [0.5, 4.0, 30.0])),
    "Binomial": lambda m, dt: m.distributions.Binomial(
        *_params(m, dt, [5.0, 20.0, 100.0], [0.1, 0.5, 0.9])
    ),
    "NegativeBinomial": lambda m, dt: m.distributions.NegativeBinomial(
        *_params(m, dt, [5.0, 20.0], [0.1, 0.7])
    ),
    "InverseGamma": lambda m, dt: m.distributions.InverseGamma(*_params(m, dt, [2.0], [1.0])),
    "FisherSnedecor": lambda m, dt: m.distributions.FisherSnedecor(*_params(m, dt, [3.0], [5.0])),
    "Multinomial": lambda m, dt: m.distributions.Multinomial(10, *_params(m, dt, [0.2, 0.3, 0.5])),
    "VonMises": lambda m, dt: m.distributions.VonMises(*_params(m, dt, [0.5, -2.0], [0.3, 4.0])),
    "Wishart": lambda m, dt: m.distributions.Wishart(
        *_params(m, dt, [4.0, 3.5], [[2.0, 0.5], [0.5, 1.0]])
    ),
    "Weibull": lambda m, dt: m.distributions.Weibull(*_params(m, dt, [1.0, 2.0], [0.5, 3.0])),
    "Kumaraswamy": lambda m, dt: m.distributions.Kumaraswamy(*_params(m, dt, [1.0], [0.5])),
    "RelaxedOneHotCategorical": lambda m, dt: m.distributions.RelaxedOneHotCategorical(
        *_params(m, dt, 0.5, [0.2, 0.3, 0.5])
    ),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_distribution_sample_equals_torch(torch_mod, name, dtype):
    make = DISTRIBUTIONS[name]
    for seed in (0, 77):
        with warnings.catch_warnings():  # torch's Wishart warns of singular samples wrongly
            warnings.simplefilter("ignore")
            ours, theirs = _both(torch_mod, seed, lambda m: make(m, dtype).sample((5,)))
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        o, t = ours.numpy(), theirs.numpy()
        if o.dtype.kind == "f":
            # MultivariateNormal's Cholesky factor comes from a different LAPACK
            assert np.allclose(o, t, rtol=1e-6 if dtype == "float32" else 1e-13, atol=0)
        else:
            np.testing.assert_array_equal(o, t)


REPARAMETERISED = {
    "Gamma": (lambda m, a, b: m.distributions.Gamma(a, b), [0.5, 2.0, 12.0], [1.0, 0.5, 3.0]),
    "Beta": (lambda m, a, b: m.distributions.Beta(a, b), [0.5, 2.0, 9.0], [1.5, 0.5, 8.0]),
    "Dirichlet": (lambda m, a, b: m.distributions.Dirichlet(a * b), [[0.5, 2.0, 9.0]], [[1.0]]),
    "StudentT": (lambda m, a, b: m.distributions.StudentT(a, 0.0, b), [0.7, 3.0], [1.0, 2.0]),
}


@pytest.mark.parametrize("name", sorted(REPARAMETERISED))
def test_rsample_gradients_equal_torch(torch_mod, name):
    make, first, second = REPARAMETERISED[name]

    def draw(m):
        a = m.tensor(first, dtype=m.float64, requires_grad=True)
        b = m.tensor(second, dtype=m.float64, requires_grad=True)
        value = make(m, a, b).rsample((50,))
        (value * m.arange(value.numel(), dtype=m.float64).reshape(value.shape)).sum().backward()
        return value, a.grad, b.grad

    ours, theirs = _both(torch_mod, 6, draw)
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-9)


def test_state_after_a_mix_of_samplers_equals_torch(torch_mod):
    def draw(m):
        weights = m.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 2.0, 0.0, 1.0]])
        return [
            m.randn(3),  # leaves a cached normal that the gamma sampler picks up
            m._standard_gamma(m.tensor([0.3, 2.0, 7.5])),
            m.multinomial(weights, 3),
            m.poisson(m.tensor([0.5, 12.0, 80.0])),
            m.multinomial(weights, 6, True),
            m._sample_dirichlet(m.tensor([[0.5, 1.0, 2.0]])),
            m.binomial(m.tensor([7.0, 90.0]), m.tensor([0.2, 0.6])),
            m.randn(33),
        ]

    ours, theirs = _both(torch_mod, 123, draw)
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    assert np.array_equal(ember.get_rng_state().numpy(), torch_mod.get_rng_state().numpy())
