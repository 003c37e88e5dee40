"""Factories of src/ember/_creation.py: ranges, filled tensors and their keywords, vs torch."""

import itertools

import numpy as np
import pytest

import ember


def _same(e, t):
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_linspace_matches_torch_bit_for_bit(torch_mod):
    dtypes = ("float32", "float64", "int64", "int16", "uint8")
    for start, end, steps, dtype in itertools.product(
        (0, 0.5, -1.7, 3), (2.5, 10, -3), (1, 3, 7, 10, 33), dtypes
    ):
        if dtype == "uint8" and start < 0:
            continue  # a negative float does not fit: both raise
        e = ember.linspace(start, end, steps, dtype=getattr(ember, dtype))
        t = torch_mod.linspace(start, end, steps, dtype=getattr(torch_mod, dtype))
        _same(e, t)


def test_integer_linspace_and_logspace_truncate_the_ends_first(torch_mod):
    for m in (ember, torch_mod):
        assert m.linspace(0.5, 2.5, 3, dtype=m.int64).tolist() == [0, 1, 2]
        assert m.linspace(0, 2.5, 7, dtype=m.int64).tolist() == [0, 0, 0, 1, 1, 1, 2]
        assert m.linspace(0, -3, 3, dtype=m.uint8).tolist() == [0, 126, 253]  # -3 wraps
        assert m.logspace(0.5, 2.5, 3, dtype=m.int64).tolist() == [1, 10, 100]
        assert m.logspace(0.5, 2.5, 1, dtype=m.int64).tolist() == [3]  # one step: base**start
        assert m.logspace(0, 10, 3, dtype=m.int16).tolist() == [1, -31072, 0]
        with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
            m.linspace(0, 1, -1)


def test_logspace_matches_torch(torch_mod):
    for start, end, steps, base in itertools.product(
        (0, 0.5, -1.7), (2.5, 10, -3), (1, 3, 7, 10), (10.0, 2, 2.5)
    ):
        for dtype in ("float64", "int64", "int16"):
            e = ember.logspace(start, end, steps, base, dtype=getattr(ember, dtype))
            t = torch_mod.logspace(start, end, steps, base, dtype=getattr(torch_mod, dtype))
            _same(e, t)
        e, t = ember.logspace(start, end, steps, base), torch_mod.logspace(start, end, steps, base)
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=2e-6)  # torch: a few ulps off


def test_samples_of_parameters_that_require_grad_are_recorded_like_torch(torch_mod):
    for m in (ember, torch_mod):
        p = m.tensor([0.5, 0.25], requires_grad=True)
        cases = {
            "BernoulliBackward0": m.bernoulli(p),
            "NormalBackward1": m.normal(p, 1.0),
            "NormalBackward2": m.normal(0.0, p),
            "NormalBackward3": m.normal(p, p),
        }
        for name, out in cases.items():
            assert out.requires_grad and out.grad_fn.name() == name
            (g,) = m.autograd.grad(out.sum(), p)
            assert g.tolist() == [0.0, 0.0]  # torch's derivative of a sample: zeros
        out = m.bernoulli(p, 0.3)  # torch records it but cannot differentiate it
        assert out.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::bernoulli is not implemented"):
            m.autograd.grad(out.sum(), p)
        assert not m.bernoulli(m.tensor([0.5])).requires_grad


def test_factories_take_size_by_keyword_and_normal_takes_layout(torch_mod):
    for m in (ember, torch_mod):
        for make in (m.empty, m.zeros, m.ones, m.rand, m.randn):
            assert tuple(make(size=(2, 3)).shape) == (2, 3)
            assert tuple(make(size=[4]).shape) == (4,)
        assert tuple(m.normal(0.0, 1.0, (2, 2), layout=m.strided).shape) == (2, 2)
        out = m.normal(0.0, 1.0, size=(2,), dtype=m.float64, layout=m.strided, device="cpu")
        assert out.dtype == m.float64
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        ember.zeros(2, size=(2,))


def test_from_numpy_of_memmap_slices_shares_memory_and_stacks(tmp_path):
    import numpy as np

    m = np.memmap(tmp_path / "data.bin", dtype=np.float32, mode="w+", shape=(4, 3))
    m[:] = np.arange(12, dtype=np.float32).reshape(4, 3)
    rows = [ember.from_numpy(m[i]) for i in range(2)]
    stacked = ember.stack(rows)
    assert stacked.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    rows[0][0] = 100.0  # writes go through to the file's pages
    assert m[0, 0] == 100.0
    shared = ember.as_tensor(m)
    assert type(shared._data) is np.ndarray and shared[3].tolist() == [9.0, 10.0, 11.0]
    shared[3, 0] = -1.0
    assert m[3, 0] == -1.0
    masked = np.ma.masked_array([1.0, 2.0], mask=[False, True])  # another subclass: its data
    assert (ember.from_numpy(masked) * 2).tolist() == [2.0, 4.0]


def test_integer_arange_counts_from_truncated_start_and_step():
    # torch converts start and step to int64 first; an int64 range takes its size from the
    # truncated end too, the narrower types from the unconverted bounds
    assert ember.arange(0.7, 10.9, 2.5, dtype=ember.int64).tolist() == [0, 2, 4, 6, 8]
    assert ember.arange(0, 10, 1.5, dtype=ember.int64).tolist() == list(range(10))
    assert ember.arange(0, 10, 1.5, dtype=ember.int32).tolist() == list(range(7))
    assert ember.arange(5, -3.7, -2.5, dtype=ember.int64).tolist() == [5, 3, 1, -1]
    assert ember.arange(0, 5, 0.5, dtype=ember.int16).tolist() == [0] * 10
    with pytest.raises(ValueError, match="step must be nonzero"):
        ember.arange(0, 64, 0.5, dtype=ember.int64)


def test_factories_make_their_values_in_the_dtype_of_out():
    out = ember.empty(0, dtype=ember.int64)
    assert ember.arange(0, 10, 1.5, out=out) is out and out.tolist() == list(range(10))
    assert ember.linspace(0.5, 3.7, 4, out=out).tolist() == [0, 1, 2, 3]
    assert ember.full((3,), 2.5, out=out).tolist() == [2, 2, 2]
    with pytest.raises(ValueError, match="step must be nonzero"):
        ember.arange(0, 64, 0.5, out=out)
    with pytest.raises(
        RuntimeError, match=r"dtype Float does not match dtype of out parameter \(Long\)"
    ):
        ember.zeros(3, dtype=ember.float32, out=out)


@pytest.mark.parametrize(
    ("dtype", "name"), [(ember.bool, "Bool"), (ember.complex64, "ComplexFloat")]
)
def test_arange_has_no_bool_or_complex_kernel(dtype, name):
    with pytest.raises(NotImplementedError, match=f"\"arange_cpu\" not implemented for '{name}'"):
        ember.arange(0.5, 3, dtype=dtype)
