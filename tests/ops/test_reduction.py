import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

FEW = settings(max_examples=8, deadline=None)


def _dims(shape, data):
    if not shape:
        return None
    return data.draw(
        st.one_of(
            st.none(),
            st.integers(-len(shape), len(shape) - 1),
            st.lists(
                st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True
            ).map(tuple),
        )
    )


REDUCTIONS = {
    "sum": lambda m, x, d, k: m.sum(x) if d is None else m.sum(x, d, keepdim=k),
    "mean": lambda m, x, d, k: m.mean(x) if d is None else m.mean(x, d, keepdim=k),
    "amax": lambda m, x, d, k: m.amax(x, () if d is None else d, keepdim=k),
    "amin": lambda m, x, d, k: m.amin(x, () if d is None else d, keepdim=k),
    "var": lambda m, x, d, k: m.var(x, d, keepdim=k),
    "std": lambda m, x, d, k: m.std(x, d, keepdim=k, correction=0),
    "logsumexp": lambda m, x, d, k: m.logsumexp(
        x, tuple(range(x.ndim)) if d is None else d, keepdim=k
    ),
    "norm": lambda m, x, d, k: m.linalg.vector_norm(x, 2, d, keepdim=k),
    "norm1": lambda m, x, d, k: m.linalg.vector_norm(x, 1, d, keepdim=k),
    "norm3": lambda m, x, d, k: m.linalg.vector_norm(x, 3, d, keepdim=k),
    "norminf": lambda m, x, d, k: m.linalg.vector_norm(x, float("inf"), d, keepdim=k),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(
    shape=array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3),
    data=st.data(),
    keepdim=st.booleans(),
)
@FEW
def test_reduction_gradcheck(name, shape, data, keepdim):
    dims = _dims(shape, data)
    if name in ("var", "std"):
        sizes = [
            shape[d]
            for d in (
                range(len(shape)) if dims is None else ([dims] if isinstance(dims, int) else dims)
            )
        ]
        if int(np.prod(sizes)) < 2:
            return
    x = arrays_for([shape], -2, 2, avoid=(0,), gap=0.2)[0]
    fn = lambda m, t: REDUCTIONS[name](m, t, dims, keepdim)
    check_gradients(fn, [x])
    compare_with_torch(fn, [x])


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction_noncontiguous(name):
    x = arrays_for([(3, 4)], -2, 2, avoid=(0,), gap=0.2)[0]
    fn = lambda m, t: REDUCTIONS[name](m, t, 0, False)
    check_gradients(fn, [x], noncontiguous=True)


def test_sum_and_mean_of_empty_tensors_match_torch():
    x = np.zeros((0, 3))
    compare_with_torch(lambda m, t: t.sum(), [x])
    compare_with_torch(lambda m, t: t.sum(0), [x])
    compare_with_torch(lambda m, t: t.mean(0), [x])
    check_gradients(lambda m, t: t.sum(1), [x])


def test_prod_with_and_without_zeros():
    for x in (
        np.array([[1.5, -2.0, 0.5], [0.7, 1.1, -0.9]]),
        np.array([[1.5, 0.0, 0.5], [0.0, 0.0, 2.0]]),
    ):
        for fn in (lambda m, t: t.prod(), lambda m, t: t.prod(1), lambda m, t: t.prod(0, True)):
            check_gradients(fn, [x])
            compare_with_torch(fn, [x])


def test_cumsum_and_cumprod():
    x = np.array([[1.5, -2.0, 0.5], [0.7, 1.1, -0.9]])
    z = np.array([[1.5, 0.0, 0.5, 2.0], [0.0, 3.0, 0.0, 2.0]])
    for fn in (
        lambda m, t: t.cumsum(1),
        lambda m, t: m.cumsum(t, 0),
        lambda m, t: t.cumprod(1),
        lambda m, t: t.cumprod(0),
    ):
        check_gradients(fn, [x])
        compare_with_torch(fn, [x])
    check_gradients(lambda m, t: t.cumprod(1), [z])
    compare_with_torch(lambda m, t: t.cumprod(1), [z])


def test_max_min_with_dim_return_values_and_indices():
    x = arrays_for([(3, 4)], -2, 2)[0]
    for fn in (
        lambda m, t: t.max(1),
        lambda m, t: t.min(0, keepdim=True),
        lambda m, t: m.max(t, dim=-1),
        lambda m, t: t.max(),
        lambda m, t: t.min(),
    ):
        check_gradients(lambda m, t: fn(m, t)[0] if isinstance(fn(m, t), tuple) else fn(m, t), [x])
        compare_with_torch(fn, [x])
    values, indices = ember.tensor(x).max(dim=1)
    assert indices.dtype == ember.int64
    np.testing.assert_array_equal(indices.numpy(), x.argmax(1))


def test_max_ties_share_gradient_like_torch():
    x = np.array([1.0, 3.0, 3.0, 2.0])
    compare_with_torch(lambda m, t: t.max(), [x])
    compare_with_torch(lambda m, t: t.amax(0), [x])
    compare_with_torch(lambda m, t: m.linalg.vector_norm(t, float("inf")), [x])


def test_argmax_argmin_all_any_count_nonzero_match_torch():
    x = np.array([[1.0, 5.0, 0.0], [7.0, -1.0, 0.0]])
    for fn in (
        lambda m, t: t.argmax(),
        lambda m, t: t.argmin(1),
        lambda m, t: t.argmax(0, keepdim=True),
        lambda m, t: (t > 0).all(),
        lambda m, t: (t > 0).any(1),
        lambda m, t: m.count_nonzero(t),
        lambda m, t: m.count_nonzero(t, 1),
        lambda m, t: t.all(dim=1),
    ):
        compare_with_torch(fn, [x], grad=False)


def test_reduction_dtypes_match_torch(torch_mod):
    for dtype in (np.int32, np.bool_, np.float16, np.uint8):
        x = np.array([[1, 0, 3], [4, 5, 0]]).astype(dtype)
        for fn in (
            lambda m, t: t.sum(),
            lambda m, t: t.sum(1),
            lambda m, t: t.prod(),
            lambda m, t: t.cumsum(0),
        ):
            compare_with_torch(fn, [x], grad=False, dtype=dtype, rtol=1e-3)


def test_mean_of_integers_raises_like_torch():
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        ember.tensor([1, 2]).mean()


def test_var_std_correction_and_unbiased_match_torch():
    x = arrays_for([(3, 5)], -2, 2)[0]
    for fn in (
        lambda m, t: t.var(),
        lambda m, t: t.var(1, unbiased=False),
        lambda m, t: t.std(0, correction=2),
        lambda m, t: m.var_mean(t, 1)[0],
        lambda m, t: m.std_mean(t, 1)[1],
        lambda m, t: t.var(False),
    ):
        compare_with_torch(fn, [x])
        check_gradients(fn, [x])


def test_norm_variants_match_torch():
    x = arrays_for([(3, 4)], -2, 2, avoid=(0,))[0]
    for fn in (
        lambda m, t: t.norm(),
        lambda m, t: t.norm(dim=1),
        lambda m, t: t.norm(1, 0),
        lambda m, t: m.norm(t, p=3, dim=1, keepdim=True),
        lambda m, t: m.linalg.vector_norm(t, 0.5),
    ):
        compare_with_torch(fn, [x])
        check_gradients(fn, [x])


def test_norm_of_zero_vector_has_zero_gradient():
    x = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    x.norm().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 0])


def test_logsumexp_is_stable():
    x = ember.tensor([1e4, 1e4, -1e4])
    np.testing.assert_allclose(x.logsumexp(0).item(), 1e4 + np.log(2), rtol=1e-6)


def test_reduction_errors_match_torch_phrases():
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.ones(2, 3).sum(5)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        ember.ones(2, 3).sum((0, 0))
    with pytest.raises(RuntimeError, match="Expected reduction dim"):
        ember.ones(0).max()


def test_amax_amin_over_zero_size_dims_match_torch(torch_mod):
    for name in ("amax", "amin"):
        kept = getattr(ember, name)(ember.zeros(2, 0), 0)
        assert tuple(kept.shape) == tuple(getattr(torch_mod, name)(torch_mod.zeros(2, 0), 0).shape)
        with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
            getattr(ember, name)(ember.zeros(2, 0), 1)


def test_sum_and_mean_over_dims_have_pytorchs_node_names():
    x = ember.randn(3, 4, requires_grad=True)
    names = [t.grad_fn.name() for t in (x.sum(), x.sum(1), x.mean(), x.mean((0, 1)))]
    assert names == ["SumBackward0", "SumBackward1", "MeanBackward0", "MeanBackward1"]
    y = ember.nn.functional.adaptive_avg_pool2d(x.reshape(1, 1, 3, 4), 1)  # a mean, as torch's
    assert y.grad_fn.name() == "MeanBackward1"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 4), 1 / 12))


@pytest.mark.parametrize("name", ["var", "std"])
def test_correction_beyond_the_sample_size_gives_inf_and_torch_gradients(torch_mod, name):
    results = []
    for m in (ember, torch_mod):
        out = []
        for data in ([1.0, 2.0], [3.0, 3.0], [[1.0, 2.0, 2.0], [1.0, 1.0, 1.0]]):
            size = np.size(data)
            for correction, dim in ((size, None), (size + 1, None), (3, -1), (5, -1)):
                x = m.tensor(data, dtype=m.float64, requires_grad=True)
                with pytest.warns(UserWarning, match=rf"{name}\(\): degrees of freedom is <= 0"):
                    y = getattr(m, name)(x, dim=dim, correction=correction)
                (g,) = m.autograd.grad(y.sum(), x)
                out.append((y.detach().numpy(), g.numpy()))
        results.append(out)
    for (ey, eg), (ty, tg) in zip(*results):
        np.testing.assert_array_equal(ey, ty)  # inf, or NaN for 0/0
        np.testing.assert_array_equal(eg, tg)
    with pytest.warns(UserWarning, match=r"var_mean\(\): degrees of freedom"):
        assert ember.var_mean(ember.tensor([1.0, 2.0]), correction=3)[0].item() == float("inf")


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
def test_complex_variance_is_real_like_torchs(torch_mod, name):
    values = [[1 + 2j, 3 - 1j, 0.5j], [2.0, -1j, 4 + 4j]]
    results = []
    for m in (ember, torch_mod):
        x = m.tensor(values, dtype=m.complex64)
        out = getattr(m, name)(x, dim=1)
        first = out[0] if isinstance(out, tuple) else out
        results.append((str(first.dtype).split(".")[-1], first.numpy()))
    assert results[0][0] == results[1][0] == "float32"
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "bool"])
@pytest.mark.parametrize("shape, size", [((), ()), ((5,), (1,)), ((2, 3), ())])
def test_sum_to_size_of_integers_sums_in_int64_as_torch(dtype, shape, size):
    torch = pytest.importorskip("torch")
    data = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dtype)
    got = ember.tensor(data).sum_to_size(size)
    want = torch.tensor(data).sum_to_size(size)
    assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_mean_and_vector_norm_name_an_integral_dtype_argument_as_torch():
    with pytest.raises(RuntimeError, match=r"Optional dtype must be either a floating point"):
        ember.mean(ember.ones(2), dtype=ember.int64)
    with pytest.raises(RuntimeError, match=r"Input dtype must be either a floating point"):
        ember.mean(ember.ones(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match=r"dtype should be floating point or complex, but got"):
        ember.linalg.vector_norm(ember.ones(2), dtype=ember.int64)
