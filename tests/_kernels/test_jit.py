"""The compiled-kernel layer: lazy numba, the off switch, and the pool-split loop."""

import os
import subprocess
import sys

import numpy as np
import pytest

from ember._kernels import jit

numba = pytest.importorskip("numba")


def test_importing_ember_does_not_import_numba():
    code = "import sys, ember; ember.ones(3).sum(); print('numba' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"


def test_environment_switch_turns_kernels_off():
    code = "from ember._kernels import jit; print(jit.enabled(), jit.module('jit'))"
    env = {**os.environ, "EMBER_JIT": "0"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    )
    assert out.stdout.strip() == "False None"


def test_disabled_is_per_thread_and_restores():
    assert jit.enabled()
    with jit.disabled():
        assert not jit.enabled() and jit.module("jit") is None
        with jit.disabled():
            assert not jit.enabled()
        assert not jit.enabled()
    assert jit.enabled()


def _fill(start, stop, out, scale):
    for i in range(start, stop):
        out[i] = i * scale


@pytest.mark.parametrize("size", [0, 1, 1000, 3 * jit.PARALLEL_MIN_ELEMENTS + 7])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_parallel_for_covers_every_index_once(size, threads):
    import ember

    kernel = jit.njit(_fill)
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        out = np.full(size, -1.0)
        jit.parallel_for(kernel, size, out, 2.0)
        np.testing.assert_array_equal(out, np.arange(size) * 2.0)
    finally:
        ember.set_num_threads(before)


def _refuse_odd(start, stop, out):
    for i in range(start, stop):
        if i == 5:
            raise ValueError("index 5 refused")
        out[i] = i


def test_kernel_errors_reach_the_caller():
    # numba does not check bounds: callers validate sizes; raised errors still propagate
    kernel = jit.njit(_refuse_odd)
    out = np.zeros(10)
    with pytest.raises(ValueError, match="index 5 refused"):
        jit.parallel_for(kernel, 10, out, min_chunk=1)


def test_small_work_keeps_to_numpy(monkeypatch):
    monkeypatch.setattr(jit, "MIN_WORK", 100)
    assert jit.module("embedding_jit", 99) is None
    assert jit.module("embedding_jit", 100) is not None
    assert jit.module("embedding_jit") is not None  # no size: the caller decided


def test_a_program_on_small_tensors_never_loads_numba():
    code = (
        "import sys, ember\n"
        "nn = ember.nn\n"
        "m = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10))\n"
        "opt = ember.optim.Adam(m.parameters())\n"
        "x = ember.randn(32, 64)\n"
        "for _ in range(3):\n"
        "    opt.zero_grad(); m(x).logsumexp(1).mean().backward(); opt.step()\n"
        "ember.randperm(1000); ember.randn(3); ember.randn(())\n"
        "for layer in (nn.LSTM, nn.GRU, nn.RNN):\n"
        "    layer(8, 5)(ember.randn(4, 3, 8))[0].sum().backward()\n"
        "nn.TransformerEncoderLayer(16, 2, 32)(ember.randn(2, 5, 16)).sum().backward()\n"
        "print('numba' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"
