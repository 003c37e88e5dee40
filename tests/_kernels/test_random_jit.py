"""ember._kernels.random_jit: the compiled Box-Muller and randperm shuffles give the NumPy
paths' values (kernels off) bit for bit, and torch's."""

import numpy as np
import pytest

import ember
from ember._kernels import jit
from ember._random import box_muller_float32

pytest.importorskip("numba")
random_jit = jit.module("random_jit")
if random_jit is None:
    pytest.skip("compiled kernels are switched off (EMBER_JIT=0)", allow_module_level=True)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def _both(draw):
    """``draw(generator)`` with kernels on and off, from the same seed."""
    on = draw(ember.Generator().manual_seed(5))
    with jit.disabled():
        off = draw(ember.Generator().manual_seed(5))
    return on, off


def test_float32_box_muller_matches_numpy_over_an_eighth_of_all_uniforms():
    # each block's radius half and angle half run over the uniforms k * 2^-24 for every 8th k
    # (every residue of k mod 8 and the largest k included); the NumPy path itself is checked
    # against the exact Cephes replay for all 2^24 (tests/test_random_box_muller.py)
    k = np.arange(1 << 21, dtype=np.uint32)
    k = np.concatenate([8 * k + (k % 8), np.arange((1 << 24) - 8, 1 << 24, dtype=np.uint32)])
    words = np.stack([k.reshape(-1, 8), k[::-1].reshape(-1, 8)], axis=1).reshape(-1)
    out = np.empty(words.size, dtype=np.float32)
    random_jit.normal_blocks(words, out, 0.0, 1.0)
    uniform = (words & 0xFFFFFF).astype(np.float32) * np.float32(2.0**-24)
    assert _same_bits(out, box_muller_float32.box_muller_16_float32(uniform, 0.0, 1.0))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
@pytest.mark.parametrize("n", [0, 5, 16, 17, 33, 1000, 70_001])
@pytest.mark.parametrize(("mean", "std"), [(0.0, 1.0), (1.5, 0.25), (-2.0, 3.0)])
def test_normal_matches_the_numpy_path(dtype, n, mean, std):
    on, off = _both(lambda g: ember.empty(n, dtype=dtype).normal_(mean, std, generator=g))
    assert _same_bits(on.numpy(), off.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [16, 31, 4099, 100_003])
def test_randn_matches_torch(dtype, n):
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(9)
    expected = torch.randn(n, dtype=getattr(torch, dtype), generator=generator)
    got = ember.randn(n, dtype=getattr(ember, dtype), generator=ember.Generator().manual_seed(9))
    assert _same_bits(got.numpy(), expected.numpy())


def test_normal_with_tensor_mean_and_randn_like_match_torch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(4)
    expected = [
        torch.normal(torch.arange(40.0).reshape(5, 8), 2.0),
        torch.randn_like(torch.empty(3, 7, dtype=torch.float64)),
        torch.empty(50).normal_(1.0, 0.5),
    ]
    ember.manual_seed(4)
    got = [
        ember.normal(ember.arange(40.0).reshape(5, 8), 2.0),
        ember.randn_like(ember.empty(3, 7, dtype=ember.float64)),
        ember.empty(50).normal_(1.0, 0.5),
    ]
    for g, e in zip(got, expected, strict=True):
        assert _same_bits(g.numpy(), e.numpy())


def test_normal_into_a_non_contiguous_tensor_matches_the_numpy_path():
    def draw(generator):
        t = ember.zeros(40, 6)
        t[:, ::2].normal_(generator=generator)
        return t

    on, off = _both(draw)
    assert _same_bits(on.numpy(), off.numpy())


def test_threads_split_blocks_without_changing_values():
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = ember.randn(300_016, generator=ember.Generator().manual_seed(2))
        ember.set_num_threads(3)
        three = ember.randn(300_016, generator=ember.Generator().manual_seed(2))
    finally:
        ember.set_num_threads(before)
    assert _same_bits(one.numpy(), three.numpy())


def test_the_stream_continues_alike_after_a_ragged_normal():
    on, off = _both(lambda g: (ember.randn(37, generator=g), ember.rand(5, generator=g)))
    for a, b in zip(on, off, strict=True):
        assert _same_bits(a.numpy(), b.numpy())


@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 1000, 65_537])
def test_randperm_matches_the_numpy_path_and_torch(n):
    on, off = _both(lambda g: ember.randperm(n, generator=g))
    assert on.dtype == ember.int64 and np.array_equal(on.numpy(), off.numpy())
    torch = pytest.importorskip("torch")
    expected = torch.randperm(n, generator=torch.Generator().manual_seed(5))
    assert np.array_equal(on.numpy(), expected.numpy())


def test_inside_out_shuffle_equals_torchs_loop():
    # torch's algorithm from n >= 2^32 / 20, run here on a small n
    words = np.random.default_rng(0).integers(0, 2**64, 1000, dtype=np.uint64)
    perm = [0] * words.size
    for i, z in enumerate((words % np.arange(1, words.size + 1, dtype=np.uint64)).tolist()):
        perm[i] = perm[z]
        perm[z] = i
    assert random_jit.inside_out(words).tolist() == perm


def test_kernels_reject_words_that_do_not_fit():
    out = np.empty(32, dtype=np.float32)
    with pytest.raises(ValueError, match="cannot fill"):
        random_jit.normal_blocks(np.zeros(16, dtype=np.uint32), out, 0.0, 1.0)
    with pytest.raises(ValueError, match="cannot fill"):
        random_jit.normal_blocks(np.zeros(30, dtype=np.uint32), out[:30], 0.0, 1.0)
    with pytest.raises(ValueError, match="contiguous uint32"):
        random_jit.normal_blocks(np.zeros(32, dtype=np.int64), out, 0.0, 1.0)
    with pytest.raises(ValueError, match="contiguous uint32"):
        random_jit.normal_blocks(np.zeros(64, dtype=np.uint32)[::2], out, 0.0, 1.0)
    with pytest.raises(ValueError, match="uint32 words expected"):
        random_jit.fisher_yates(np.zeros(4, dtype=np.int64))
    with pytest.raises(ValueError, match="uint64 words expected"):
        random_jit.inside_out(np.zeros(4, dtype=np.uint32))


def test_mt19937_words_continue_numpys_twister():
    numpy_twister = np.random.Generator(np.random.MT19937(7))
    inner = numpy_twister.bit_generator.state["state"]
    key, position = np.array(inner["key"], dtype=np.uint32), int(inner["pos"])
    for n in [0, 1, 623, 624, 625, 5000, 70_001]:
        got, position = random_jit.mt19937_words(key, position, n)
        expected = numpy_twister.integers(0, 1 << 32, n, dtype=np.uint32)
        assert np.array_equal(got, expected), n
        inner = numpy_twister.bit_generator.state["state"]
        assert position == inner["pos"] and np.array_equal(key, inner["key"]), n


def test_long_fill_leaves_torchs_state_and_stream():
    torch = pytest.importorskip("torch")
    torch_generator = torch.Generator().manual_seed(5)  # _both's seed
    on, off = _both(
        lambda g: (ember.rand(100_003, generator=g), g.get_state(), ember.rand(3, generator=g))
    )
    expected = torch.rand(100_003, generator=torch_generator)
    assert _same_bits(on[0].numpy(), expected.numpy())
    assert np.array_equal(on[1].numpy(), torch_generator.get_state().numpy())
    for a, b in zip(on, off, strict=True):
        assert _same_bits(a.numpy(), b.numpy())


def test_mt19937_words_rejects_a_bad_state():
    with pytest.raises(ValueError, match="624 words"):
        random_jit.mt19937_words(np.zeros(623, dtype=np.uint32), 0, 5)
    with pytest.raises(ValueError, match="position 625"):
        random_jit.mt19937_words(np.zeros(624, dtype=np.uint32), 625, 5)


@pytest.mark.parametrize("n", [127, 128, 129, 5001])
def test_scalar_sampler_matches_the_numpy_path(n):
    # torch's scalar sampler serves non-contiguous normal_ and log_normal_; its cached second
    # value carries over to the next call
    def draw(generator):
        t = ember.zeros(n, 2)
        t[:, 0].normal_(generator=generator)
        return t, ember.empty(n).log_normal_(0.5, 2.0, generator=generator)

    on, off = _both(draw)
    for a, b in zip(on, off, strict=True):
        assert _same_bits(a.numpy(), b.numpy())
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(5)
    t = torch.zeros(n, 2)
    t[:, 0].normal_(generator=generator)
    expected = (t, torch.empty(n).log_normal_(0.5, 2.0, generator=generator))
    for a, b in zip(on, expected, strict=True):
        assert _same_bits(a.numpy(), b.numpy())


def test_scalar_normal_pairs_rejects_words_not_in_fours():
    with pytest.raises(ValueError, match="in fours"):
        random_jit.scalar_normal_pairs(np.zeros(6, dtype=np.uint32))


@pytest.mark.parametrize("name", ["log", "log1p", "tan", "exp", "cos", "sin"])
def test_libm_is_the_c_librarys_function(name):
    import math

    rng = np.random.default_rng(1)
    values = np.concatenate(
        [
            rng.uniform(0.0, 1.0, 20_000),
            rng.uniform(-0.99, 50.0, 20_000),
            np.pi * (rng.uniform(0.0, 1.0, 5_000) - 0.5),
            [1e-300, 5e-324, 1.0, 0.5, 2.0**-53, 3.0, 7.0, 0.25],
        ]
    ).reshape(-1, 4)[:, ::3]  # non-contiguous, 2-d
    if name == "log":
        values = np.abs(values)
    if name == "log1p":  # log1p(-u) for uniforms u, as the samplers call it
        values = -np.minimum(np.abs(values), 1.0 - 2.0**-53)
    expected = np.frompyfunc(getattr(math, name), 1, 1)(values).astype(np.float64)
    assert _same_bits(random_jit.libm(name, values), expected)


@pytest.mark.parametrize("method", ["exponential_", "geometric_", "cauchy_", "log_normal_"])
def test_float64_transforms_match_the_numpy_path_and_torch(method):
    args = {"geometric_": (0.3,), "log_normal_": (0.5, 0.75)}.get(method, ())
    on, off = _both(lambda g: getattr(ember.empty(3001), method)(*args, generator=g))
    assert _same_bits(on.numpy(), off.numpy())
    torch = pytest.importorskip("torch")
    expected = getattr(torch.empty(3001), method)(*args, generator=torch.Generator().manual_seed(5))
    assert _same_bits(on.numpy(), expected.numpy())
