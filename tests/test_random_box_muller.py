"""The fast float32 Box-Muller (no fma tie check) against the tie-checked Cephes replay, for
every uniform Box-Muller can be given, and against torch."""

import numpy as np
import pytest

import ember
from ember._random import box_muller_float32 as fast
from ember._random import cephes_float32 as reference

_f32 = np.float32
_ALL_UNIFORMS = np.arange(1 << 24, dtype=np.int32).astype(_f32) * _f32(2.0**-24)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return np.array_equal(a.view(np.int32), b.view(np.int32))


def test_log_of_one_minus_matches_the_reference_for_every_uniform():
    chunk = 1 << 20
    workspace = fast._Workspace(chunk // 8)
    out = np.empty((chunk // 8, 8), dtype=_f32)
    for start in range(0, _ALL_UNIFORMS.size, chunk):
        u = _ALL_UNIFORMS[start : start + chunk].reshape(-1, 8)
        fast._log_of_one_minus(u, workspace, out)
        assert _same_bits(out, reference.log_float32(_f32(1) - u)), start


def test_sincos_of_angle_matches_the_reference_for_every_uniform():
    chunk = 1 << 20
    workspace = fast._Workspace(chunk // 8)
    sin, cos = (np.empty((chunk // 8, 8), dtype=_f32) for _ in range(2))
    for start in range(0, _ALL_UNIFORMS.size, chunk):
        u = _ALL_UNIFORMS[start : start + chunk].reshape(-1, 8)
        fast._sincos_of_angle(u, workspace, sin, cos)
        expected_sin, expected_cos = reference.sincos_float32(_f32(2.0 * np.pi) * u)
        assert _same_bits(sin, expected_sin), start
        assert _same_bits(cos, expected_cos), start


@pytest.mark.parametrize("n", [16, 48, 1000, 70_000])
@pytest.mark.parametrize(("mean", "std"), [(0.0, 1.0), (1.5, 0.25)])
def test_normal_float32_matches_torch(n, mean, std):
    torch = pytest.importorskip("torch")
    expected = torch.empty(n).normal_(mean, std, generator=torch.Generator().manual_seed(3))
    got = ember.empty(n).normal_(mean, std, generator=ember.Generator().manual_seed(3))
    assert _same_bits(got.numpy(), expected.numpy())


def test_chunked_blocks_match_one_block_at_a_time():
    u = np.random.default_rng(0).integers(0, 1 << 24, 16 * 3000).astype(_f32) * _f32(2.0**-24)
    whole = fast.box_muller_16_float32(u, 0.0, 1.0)
    blocks = np.concatenate([fast.box_muller_16_float32(b, 0.0, 1.0) for b in u.reshape(-1, 16)])
    assert _same_bits(whole, blocks)
