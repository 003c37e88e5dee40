"""ember's CPU generator against PyTorch's: the same seed gives the same streams.

Bit-identical: uniform (float32/float64, and float16/bfloat16), integers, randperm, normal
(both of torch's paths), bernoulli, exponential, the generator state and the stream position
after mixed calls. ``TorchSampler`` is driven directly where a public function does not yet
say which dtype it draws for (see ``test_public_float64_rand_matches_torch``).
"""

import numpy as np
import pytest

import ember
from ember._random import Generator, resolve_generator

SEEDS = (0, 1, 12345)
SIZES = (*range(1, 101), 10**4, 10**6)
FLOAT_DTYPES = ("float32", "float64")


def _sampler(seed: int):
    return resolve_generator(Generator().manual_seed(seed))


def _torch_generator(torch, seed: int):
    return torch.Generator().manual_seed(seed)


def _ulps(a: np.ndarray, b: np.ndarray) -> int:
    as_int = np.int32 if a.dtype == np.float32 else np.int64
    return int(np.abs(a.view(as_int).astype(np.int64) - b.view(as_int).astype(np.int64)).max())


# --- the engine and seeding --------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS + (2**40 + 7, -1))
def test_manual_seed_state_bytes_equal_torch(torch_mod, seed):
    ember.manual_seed(seed)
    torch_mod.manual_seed(seed)
    assert np.array_equal(ember.get_rng_state().numpy(), torch_mod.get_rng_state().numpy())
    assert ember.initial_seed() == torch_mod.initial_seed()


def test_state_is_torch_bytetensor_layout():
    state = Generator().manual_seed(3).get_state()
    assert state.dtype == ember.uint8 and tuple(state.shape) == (5056,)


@pytest.mark.parametrize("seed", SEEDS)
def test_state_after_mixed_calls_equals_torch(torch_mod, seed):
    ember.manual_seed(seed)
    torch_mod.manual_seed(seed)
    for e, t in (
        (ember.rand(7), torch_mod.rand(7)),
        (ember.randint(0, 10, (5,)), torch_mod.randint(0, 10, (5,))),
        (ember.randn(3), torch_mod.randn(3)),  # scalar path: leaves a cached normal
        (ember.randperm(9), torch_mod.randperm(9)),
        (ember.randn(40), torch_mod.randn(40)),
        (ember.randint(0, 2**40, (3,)), torch_mod.randint(0, 2**40, (3,))),
        (ember.empty(5).uniform_(-2, 3), torch_mod.empty(5).uniform_(-2, 3)),
        (ember.randn(1), torch_mod.randn(1)),  # consumes the cached normal
    ):
        assert np.array_equal(e.numpy(), t.numpy())
    assert np.array_equal(ember.get_rng_state().numpy(), torch_mod.get_rng_state().numpy())


def test_states_move_between_ember_and_torch(torch_mod):
    torch_mod.manual_seed(5)
    torch_mod.rand(1001)
    torch_mod.randn(3)  # a cached normal travels in the state too
    ember.set_rng_state(torch_mod.get_rng_state())
    assert np.array_equal(ember.randn(4).numpy(), torch_mod.randn(4).numpy())
    ember.rand(77)
    torch_mod.set_rng_state(torch_mod.tensor(ember.get_rng_state().numpy()))
    assert np.array_equal(ember.rand(20).numpy(), torch_mod.rand(20).numpy())


def test_get_set_state_round_trip_replays_the_stream():
    g = Generator().manual_seed(11)
    ember.randn(5, generator=g)
    state = g.get_state()
    first = [
        ember.rand(30, generator=g),
        ember.randn(3, generator=g),
        ember.randperm(8, generator=g),
    ]
    g.set_state(state)
    again = [
        ember.rand(30, generator=g),
        ember.randn(3, generator=g),
        ember.randperm(8, generator=g),
    ]
    for a, b in zip(first, again, strict=True):
        assert np.array_equal(a.numpy(), b.numpy())
    assert np.array_equal(
        g.get_state().numpy(), Generator().set_state(g.get_state()).get_state().numpy()
    )


def test_set_rng_state_rejects_non_byte_tensor_as_torch():
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        ember.set_rng_state(ember.zeros(5056))
    with pytest.raises(TypeError, match="expected a torch.ByteTensor, but got list"):
        ember.set_rng_state([1, 2])
    with pytest.raises(RuntimeError, match="size 5056 but found the input RNG state size to be 10"):
        ember.set_rng_state(ember.zeros(10, dtype=ember.uint8))


def test_seed_reseeds_and_reports_the_seed():
    s = ember.seed()
    assert ember.initial_seed() == s
    first = ember.rand(4)
    ember.manual_seed(s)
    assert np.array_equal(ember.rand(4).numpy(), first.numpy())


# --- uniform -----------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_rand_float32_equals_torch_for_all_sizes(torch_mod, seed):
    g, tg = Generator().manual_seed(seed), _torch_generator(torch_mod, seed)
    for n in SIZES:
        assert np.array_equal(
            ember.rand(n, generator=g).numpy(), torch_mod.rand(n, generator=tg).numpy()
        ), n


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-0.5, 0.5), (-0.3, 1.7), (2.0, 3.3)])
def test_uniform_equals_torch(torch_mod, dtype, seed, bounds):
    rng, tg = _sampler(seed), _torch_generator(torch_mod, seed)
    for n in (1, 17, 10**4, 10**6):
        ours = rng.uniform(*bounds, size=n, dtype=np.dtype(dtype))
        theirs = torch_mod.empty(n, dtype=getattr(torch_mod, dtype)).uniform_(*bounds, generator=tg)
        assert ours.dtype == np.dtype(dtype)
        assert np.array_equal(ours, theirs.numpy()), n


def test_uniform_method_on_float32_tensor_equals_torch(torch_mod):
    ember.manual_seed(0)
    torch_mod.manual_seed(0)
    ours = ember.empty(1000).uniform_(-0.7, 1.9)
    assert np.array_equal(ours.numpy(), torch_mod.empty(1000).uniform_(-0.7, 1.9).numpy())


def test_public_float64_rand_matches_torch(torch_mod):
    ember.manual_seed(0)
    torch_mod.manual_seed(0)
    assert np.array_equal(
        ember.rand(10, dtype=ember.float64).numpy(),
        torch_mod.rand(10, dtype=torch_mod.float64).numpy(),
    )


# --- integers ----------------------------------------------------------------------------
INT_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "float32", "float64")


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
def test_randint_equals_torch(torch_mod, dtype, seed):
    g, tg = Generator().manual_seed(seed), _torch_generator(torch_mod, seed)
    high = 100 if dtype in ("int8", "uint8") else 1000
    for n in SIZES:
        ours = ember.randint(0, high, (n,), generator=g, dtype=getattr(ember, dtype))
        theirs = torch_mod.randint(0, high, (n,), generator=tg, dtype=getattr(torch_mod, dtype))
        assert np.array_equal(ours.numpy(), theirs.numpy()), n


@pytest.mark.parametrize(
    "low, high",
    [
        (-5, 5),
        (0, 2**28 - 1),
        (0, 2**28),
        (3, 2**31),
        (0, 2**32 - 1),
        (-(2**40), 2**40),
        (0, 2**62),
    ],
)
def test_randint_ranges_switch_to_64_bit_draws_as_torch(torch_mod, low, high):
    g, tg = Generator().manual_seed(7), _torch_generator(torch_mod, 7)
    ours = ember.randint(low, high, (1000,), generator=g)
    theirs = torch_mod.randint(low, high, (1000,), generator=tg)
    assert np.array_equal(ours.numpy(), theirs.numpy())
    assert np.array_equal(g.get_state().numpy(), tg.get_state().numpy())


def test_random_method_with_bounds_equals_torch(torch_mod):
    ember.manual_seed(1)
    torch_mod.manual_seed(1)
    for args in ((10,), (-3, 9)):
        ours = ember.empty(500, dtype=ember.int64).random_(*args)
        theirs = torch_mod.empty(500, dtype=torch_mod.int64).random_(*args)
        assert np.array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    "dtype", ["int64", "int32", "int16", "int8", "uint8", "bool", "float32", "float64"]
)
def test_random_full_equals_torch_random_without_bounds(torch_mod, dtype):
    rng, tg = _sampler(2), _torch_generator(torch_mod, 2)
    ours = rng.random_full(1000, np.dtype(dtype))
    theirs = torch_mod.empty(1000, dtype=getattr(torch_mod, dtype)).random_(generator=tg)
    assert np.array_equal(ours, theirs.numpy())


# --- permutations ------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_randperm_equals_torch(torch_mod, seed):
    g, tg = Generator().manual_seed(seed), _torch_generator(torch_mod, seed)
    for n in (0, *SIZES):
        ours = ember.randperm(n, generator=g)
        assert np.array_equal(ours.numpy(), torch_mod.randperm(n, generator=tg).numpy()), n


def test_permutation_of_an_array_reorders_it_by_randperm():
    values = np.arange(10) * 3
    assert np.array_equal(_sampler(4).permutation(values), values[_sampler(4).randperm(10)])


# --- normal ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("seed", SEEDS)
def test_normal_equals_torch_on_both_paths(torch_mod, dtype, seed):
    """Fewer than 16 values: the scalar Box-Muller with its cached value; 16 or more: the
    blockwise one (for float32, the AVX2 kernel's float arithmetic)."""
    rng, tg = _sampler(seed), _torch_generator(torch_mod, seed)
    for n in SIZES:
        for mean, std in ((0.0, 1.0), (0.5, 2.5)):
            ours = rng.normal(mean, std, n, np.dtype(dtype))
            theirs = torch_mod.empty(n, dtype=getattr(torch_mod, dtype)).normal_(
                mean, std, generator=tg
            )
            assert _ulps(ours, theirs.numpy()) <= 1, (n, mean, std)


@pytest.mark.parametrize("seed", SEEDS)
def test_randn_float32_is_bit_identical_to_torch(torch_mod, seed):
    g, tg = Generator().manual_seed(seed), _torch_generator(torch_mod, seed)
    for n in (1, 5, 15, 16, 17, 31, 100, 10**4, 10**6):
        assert np.array_equal(
            ember.randn(n, generator=g).numpy(), torch_mod.randn(n, generator=tg).numpy()
        ), n


def test_cached_normal_is_used_by_the_next_small_draw(torch_mod):
    g, tg = Generator().manual_seed(0), _torch_generator(torch_mod, 0)
    for n in (1, 1, 3, 2, 5):
        assert np.array_equal(
            ember.randn(n, generator=g).numpy(), torch_mod.randn(n, generator=tg).numpy()
        )
    assert np.array_equal(g.get_state().numpy(), tg.get_state().numpy())


def test_manual_seed_drops_the_cached_normal(torch_mod):
    ember.manual_seed(0)
    ember.randn(1)
    ember.manual_seed(0)
    torch_mod.manual_seed(0)
    assert np.array_equal(ember.randn(2).numpy(), torch_mod.randn(2).numpy())


# --- other distributions -----------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_bernoulli_scalar_p_equals_torch(torch_mod, seed):
    rng, tg = _sampler(seed), _torch_generator(torch_mod, seed)
    for n in (1, 17, 10**4):
        ours = rng.bernoulli(0.3, n)
        theirs = torch_mod.empty(n).bernoulli_(0.3, generator=tg)
        assert np.array_equal(ours, theirs.numpy().astype(bool))


def test_bernoulli_of_a_float32_probability_tensor_equals_torch(torch_mod):
    ember.manual_seed(0)
    torch_mod.manual_seed(0)
    probs = np.linspace(0, 1, 1000, dtype=np.float32)
    ours = ember.bernoulli(ember.tensor(probs))
    assert np.array_equal(ours.numpy(), torch_mod.bernoulli(torch_mod.tensor(probs)).numpy())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_exponential_equals_torch(torch_mod, dtype):
    ember.manual_seed(0)
    torch_mod.manual_seed(0)
    ours = ember.empty(10**4, dtype=getattr(ember, dtype)).exponential_(2.0)
    theirs = torch_mod.empty(10**4, dtype=getattr(torch_mod, dtype)).exponential_(2.0)
    assert _ulps(ours.numpy(), theirs.numpy()) == 0


def test_geometric_cauchy_log_normal_equal_torch(torch_mod):
    rng, tg = _sampler(9), _torch_generator(torch_mod, 9)
    geometric = torch_mod.empty(1000, dtype=torch_mod.float64).geometric_(0.2, generator=tg)
    assert np.array_equal(rng.geometric(0.2, 1000), geometric.numpy())
    cauchy = torch_mod.empty(1000, dtype=torch_mod.float64).cauchy_(generator=tg)
    assert _ulps(rng.standard_cauchy(1000), cauchy.numpy()) <= 1
    log_normal = torch_mod.empty(1000, dtype=torch_mod.float64).log_normal_(1.0, 0.5, generator=tg)
    assert _ulps(rng.lognormal(1.0, 0.5, 1000), log_normal.numpy()) <= 1
    assert np.array_equal(rng.engine.to_bytes(), tg.get_state().numpy())


def test_numpy_only_distributions_draw_from_the_same_seeded_stream():
    a, b = _sampler(3), _sampler(3)
    assert np.array_equal(a.standard_gamma(np.ones(5)), b.standard_gamma(np.ones(5)))
    assert not np.array_equal(a.engine.to_bytes(), _sampler(3).engine.to_bytes())


# --- generators, fork_rng, models --------------------------------------------------------
def test_generator_argument_leaves_the_default_stream_alone():
    ember.manual_seed(0)
    expected = ember.rand(5)
    ember.manual_seed(0)
    ember.rand(100, generator=Generator().manual_seed(1))
    assert np.array_equal(ember.rand(5).numpy(), expected.numpy())


def test_fork_rng_restores_the_cpu_state():
    from ember.random import fork_rng

    ember.manual_seed(0)
    expected = ember.rand(5)
    ember.manual_seed(0)
    with fork_rng():
        ember.manual_seed(123)
        ember.randn(50)
    assert np.array_equal(ember.rand(5).numpy(), expected.numpy())


def test_random_module_is_torch_random_namespace():
    import ember.random as random

    for name in (
        "seed",
        "manual_seed",
        "initial_seed",
        "get_rng_state",
        "set_rng_state",
        "fork_rng",
    ):
        assert callable(getattr(random, name))
    assert random.default_generator is ember._random.default_generator


@pytest.mark.parametrize("seed", SEEDS)
def test_linear_layer_built_after_manual_seed_equals_torch(torch_mod, seed):
    ember.manual_seed(seed)
    torch_mod.manual_seed(seed)
    ours, theirs = ember.nn.Linear(4, 3), torch_mod.nn.Linear(4, 3)
    assert np.array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    assert np.array_equal(ours.bias.detach().numpy(), theirs.bias.detach().numpy())


@pytest.mark.parametrize(
    "build",
    [
        lambda nn: nn.Conv2d(3, 8, 3),
        lambda nn: nn.Embedding(10, 4),
        lambda nn: nn.LSTM(4, 5),
        lambda nn: nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)),
    ],
    ids=["conv2d", "embedding", "lstm", "mlp"],
)
def test_default_initialisation_equals_torch(torch_mod, build):
    ember.manual_seed(0)
    torch_mod.manual_seed(0)
    ours = [p.detach().numpy() for p in build(ember.nn).parameters()]
    theirs = [p.detach().numpy() for p in build(torch_mod.nn).parameters()]
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert np.array_equal(a, b)


def test_dropout_mask_equals_torch(torch_mod):
    ember.manual_seed(0)
    torch_mod.manual_seed(0)
    ours = ember.nn.functional.dropout(ember.ones(1000), 0.3)
    assert np.array_equal(
        ours.numpy(), torch_mod.nn.functional.dropout(torch_mod.ones(1000), 0.3).numpy()
    )


def test_vectorised_fisher_yates_equals_the_swap_loop():
    from ember._random.sampler import fisher_yates

    rng = np.random.default_rng(0)
    for n in (2, 3, 5, 10, 100, 1000):
        for _ in range(10):
            offsets = rng.integers(0, 2**32, n - 1) % np.arange(n, 1, -1)
            perm = list(range(n))
            for i, offset in enumerate(offsets.tolist()):
                perm[i], perm[i + offset] = perm[i + offset], perm[i]
            assert np.array_equal(fisher_yates(offsets), perm)


# --- float16 / bfloat16: float32 draws rounded, as torch ---------------------------------
HALF_DRAWS = {
    "rand": lambda m, dt, n: m.rand(n, dtype=dt),
    "uniform_": lambda m, dt, n: m.empty(n, dtype=dt).uniform_(-0.3, 1.7),
    "uniform_narrow": lambda m, dt, n: m.empty(n, dtype=dt).uniform_(0.1, 0.7),
    "randn": lambda m, dt, n: m.randn(n, dtype=dt),
    "normal_": lambda m, dt, n: m.empty(n, dtype=dt).normal_(1.5, 0.25),
    "random_": lambda m, dt, n: m.empty(n, dtype=dt).random_(),
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(HALF_DRAWS))
def test_half_precision_draws_equal_torch(torch_mod, name, dtype):
    draw = HALF_DRAWS[name]
    for n in (1, 5, 16, 17, 100, 4100):
        ember.manual_seed(n)
        torch_mod.manual_seed(n)
        ours = draw(ember, getattr(ember, dtype), n).float().numpy()
        theirs = draw(torch_mod, getattr(torch_mod, dtype), n).float().numpy()
        assert np.array_equal(ours, theirs), (name, n)
        assert np.array_equal(ember.rand(3).numpy(), torch_mod.rand(3).numpy()), (name, n)


def test_half_precision_uniform_never_reaches_the_upper_bound():
    g = Generator().manual_seed(0)
    values = ember.rand(10**5, dtype=ember.float16, generator=g).float().numpy()
    assert values.max() < 1.0 and values.min() >= 0.0


def test_thread_safe_generator_is_none_outside_thread_workers(torch_mod):
    assert ember.random.thread_safe_generator() is None
    assert torch_mod.random.thread_safe_generator() is None


def test_vectorised_sin_cos_in_use_equal_the_c_library():
    import math

    from ember._random.sampler import _cos, _sin

    angles = np.random.default_rng(3).uniform(0.0, 2.0 * np.pi, 10**4)
    assert np.array_equal(_cos(angles), [math.cos(a) for a in angles])
    assert np.array_equal(_sin(angles), [math.sin(a) for a in angles])


# --- in-place fills of strided tensors: torch writes in memory order -------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.zeros(5, 40).t(),
        lambda m: m.zeros(3, 4, 5).permute(2, 0, 1),
        lambda m: m.zeros(6, 40)[::2].t(),
        lambda m: m.zeros(5, 40)[:, 3:20],
    ],
)
def test_draws_in_fill_order_equal_torchs_strided_fills(torch_mod, make):
    from ember._random.layout import draw_in_fill_order

    theirs = make(torch_mod)
    torch_mod.manual_seed(0)
    theirs.uniform_(-1.0, 2.0)
    after_uniform = torch_mod.rand(2)
    strides = tuple(s * 4 for s in theirs.stride())  # the same layout in bytes, as NumPy's
    rng = _sampler(0)
    ours = draw_in_fill_order(
        lambda shape: rng.uniform(-1.0, 2.0, shape, dtype=np.float32), tuple(theirs.shape), strides
    )
    assert np.array_equal(ours, theirs.numpy())
    assert np.array_equal(rng.random(2, dtype=np.float32), after_uniform.numpy())
    # normal_ on a tensor that is not contiguous takes torch's scalar sampler for every value
    theirs = make(torch_mod)
    torch_mod.manual_seed(0)
    theirs.normal_(0.5, 2.0)
    rng = _sampler(0)
    serial = not theirs.is_contiguous()
    ours = draw_in_fill_order(
        lambda shape: rng.normal(0.5, 2.0, shape, dtype=np.float32, serial=serial),
        tuple(theirs.shape),
        strides,
    )
    assert np.array_equal(ours, theirs.numpy())
