"""The intra-op thread policy: ember.set_num_threads / get_num_threads set NumPy's BLAS
(through threadpoolctl, or NumPy's OpenBLAS directly without it) and ember's pool; the
pool only takes large arrays; NumPy's OpenBLAS axpy used by the optimizers."""

import os
import sys

import numpy as np
import pytest

import ember
from ember import _backend


@pytest.fixture
def restore_threads():
    before = ember.get_num_threads()
    yield
    ember.set_num_threads(before)


def _numpy_blas_threads() -> int | None:
    blas = _backend.numpy_blas()
    return None if blas is None else blas.get_num_threads()


def test_default_is_the_usable_cores():
    assert ember.get_num_threads() == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("n", [1, 3])
def test_set_num_threads_sets_ember_and_the_blas(n, restore_threads):
    ember.set_num_threads(n)
    assert ember.get_num_threads() == n
    threadpoolctl = pytest.importorskip("threadpoolctl")
    blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    assert blas and all(i["num_threads"] == n for i in blas)
    if _backend.numpy_blas() is not None:
        assert _numpy_blas_threads() == n


def test_without_threadpoolctl_numpys_openblas_is_set_directly(restore_threads, monkeypatch):
    if _backend.numpy_blas() is None:
        pytest.skip("NumPy's OpenBLAS is not reachable here")
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # import now raises ImportError
    assert _backend.set_blas_threads(1) == "numpy-openblas"
    assert _numpy_blas_threads() == 1
    ember.set_num_threads(2)
    assert _numpy_blas_threads() == 2 and ember.get_num_threads() == 2


def test_without_any_blas_handle_only_embers_count_changes(restore_threads, monkeypatch):
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)
    monkeypatch.setattr(_backend, "_numpy_blas", [None])
    assert _backend.set_blas_threads(1) is None
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1


@pytest.mark.parametrize(
    "value,message",
    [
        (0, "set_num_threads expects a positive integer"),
        (-2, "set_num_threads expects a positive integer"),
        (1.5, "set_num_threads expects an int, but got float"),
        ("2", "set_num_threads expects an int, but got str"),
        (True, "set_num_threads expects an int, but got bool"),
    ],
)
def test_bad_counts_raise_torch_errors(value, message, torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError, match=message):
            m.set_num_threads(value)


def test_pool_only_takes_large_arrays():
    # measured: below ~2^20 elements the hand-off costs more than a second core saves
    assert _backend.PARALLEL_MIN_ELEMENTS >= 1 << 20


def test_parallel_map_chunks_equal_one_call(restore_threads, monkeypatch):
    monkeypatch.setattr(_backend, "PARALLEL_MIN_ELEMENTS", 16)
    ember.set_num_threads(3)
    data = np.linspace(-3, 3, 1001, dtype=np.float32).reshape(7, 143)
    for ufunc in (np.tanh, None):
        out = _backend.parallel_map(lambda xp, a: xp.tanh(a), np, data, ufunc)
        np.testing.assert_array_equal(out, np.tanh(data))
        assert out.shape == data.shape and out.dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 7, 20001])
def test_numpy_blas_axpy_is_one_fused_pass(dtype, n):
    blas = _backend.numpy_blas()
    if blas is None:
        pytest.skip("NumPy's OpenBLAS is not reachable here")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    alpha = dtype(-0.3)
    before = y.copy()
    threads = blas.get_num_threads()
    blas.axpy(float(alpha), x, y)
    if dtype is np.float32:  # float64 holds the product exactly: one rounding, as an FMA
        expected = (before.astype(np.float64) + np.float64(alpha) * x).astype(np.float32)
        # OpenBLAS picks its kernel by CPU: on AVX-512 machines every element is one FMA,
        # the AVX2 (Haswell) kernel rounds the tail past the last full vector twice
        np.testing.assert_array_max_ulp(y, expected, maxulp=1)
    else:
        bound = np.finfo(dtype).eps * (np.abs(before) + np.abs(alpha * x))
        assert np.all(np.abs(y - (before + alpha * x)) <= bound)
    assert blas.get_num_threads() == threads  # a long axpy ran on one thread, then restored


def test_numpy_blas_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("EMBER_NUMPY_BLAS", "0")
    assert _backend._find_numpy_blas() is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_blas_axpby_rounds_as_scale_then_fused_add(dtype, torch_mod):
    blas = _backend.numpy_blas()
    if blas is None or not blas.has_axpby:
        pytest.skip("no OpenBLAS axpby here")
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(30011).astype(dtype), rng.standard_normal(30011).astype(dtype)
    expected = torch_mod.tensor(y).mul_(0.9).add_(torch_mod.tensor(x), alpha=0.7).numpy()
    # torch rounds as one FMA per element; OpenBLAS's kernel (chosen by CPU) may round the
    # product and the sum separately: one rounding of the terms apart at most
    bound = 2 * np.finfo(dtype).eps * (np.abs(0.9 * y) + np.abs(0.7 * x))
    blas.axpby(0.7, x, 0.9, y)
    assert np.all(np.abs(y - expected) <= bound)
