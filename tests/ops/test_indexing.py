import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch

X = arrays_for([(3, 4)], -2, 2)[0]


def _idx(m, values):
    return m.tensor(values)


INDEX_OPS = {
    "int": lambda m, t: t[1],
    "neg_int": lambda m, t: t[-1, 2],
    "slice": lambda m, t: t[1:, ::2],
    "none_ellipsis": lambda m, t: t[None, ..., 1],
    "list": lambda m, t: t[[0, 2, 0]],
    "tensor_repeat": lambda m, t: t[_idx(m, [[0, 0], [2, 1]])],
    "two_tensors": lambda m, t: t[_idx(m, [0, 1, 1]), _idx(m, [3, 0, 0])],
    "bool_mask": lambda m, t: t[t > 0],
    "bool_rows": lambda m, t: t[_idx(m, [True, False, True])],
    "mixed": lambda m, t: t[1:, _idx(m, [0, 0, 3])],
    "gather": lambda m, t: t.gather(1, _idx(m, [[0, 0], [1, 3], [2, 2]])),
    "gather_small": lambda m, t: m.gather(t, 0, _idx(m, [[2, 0, 1]])),
    "scatter": lambda m, t: t.scatter(1, _idx(m, [[0], [3], [1]]), t[:, :1] * 2),
    "scatter_value": lambda m, t: t.scatter(0, _idx(m, [[1, 2, 0, 1]]), 0.5),
    "scatter_add": lambda m, t: t.scatter_add(1, _idx(m, [[0, 0], [1, 1], [3, 3]]), t[:, :2] * 3),
    "index_select": lambda m, t: t.index_select(1, _idx(m, [3, 0, 3])),
    "index_add": lambda m, t: t.index_add(0, _idx(m, [0, 0]), t[1:] * 2, alpha=1.5),
    "masked_fill": lambda m, t: t.masked_fill(t > 0.5, 0.25),
    "masked_fill_bcast": lambda m, t: t.masked_fill(_idx(m, [True, False, True, False]), -1.0),
    "masked_select": lambda m, t: t.masked_select(t < 0),
    "masked_scatter": lambda m, t: t.masked_scatter(t > 0, t.flip(0) * 2),
    "take_along_dim": lambda m, t: m.take_along_dim(t, t.argsort(1), 1),
    "take": lambda m, t: m.take(t, _idx(m, [0, 5, 11])),
    "sort_values": lambda m, t: t.sort(1).values,
    "sort_desc": lambda m, t: m.sort(t, 0, descending=True)[0],
    "topk": lambda m, t: t.topk(2, 1).values,
    "topk_smallest": lambda m, t: t.topk(2, 0, largest=False)[0],
    "kthvalue": lambda m, t: t.kthvalue(2, 1)[0],
    "index_put": lambda m, t: m.index_put(
        t, (_idx(m, [0, 0]), _idx(m, [1, 1])), t[2, :2] * 2, accumulate=True
    ),
    "pad_constant": lambda m, t: m.nn.functional.pad(t, (1, 2, 0, 1), value=0.5),
    "pad_crop": lambda m, t: m.nn.functional.pad(t, (-1, 1)),
    "pad_reflect": lambda m, t: m.nn.functional.pad(t[None], (2, 1), mode="reflect"),
    "pad_replicate": lambda m, t: m.nn.functional.pad(t[None], (2, 3, 1, 0), mode="replicate"),
    "pad_circular": lambda m, t: m.nn.functional.pad(t[None], (1, 2), mode="circular"),
}


@pytest.mark.parametrize("name", sorted(INDEX_OPS))
def test_indexing_op_gradcheck_and_torch(name):
    fn = INDEX_OPS[name]
    check_gradients(fn, [X])
    if name not in ("bool_mask", "masked_select", "masked_scatter"):
        check_gradients(fn, [X], noncontiguous=True)
    compare_with_torch(fn, [X])


def test_repeated_indices_accumulate_in_backward():
    x = ember.zeros(3, requires_grad=True)
    x[ember.tensor([0, 0, 2, 0])].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3, 0, 1])


def test_setitem_is_recorded_as_index_put():
    w = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = w * 1
    y[1] = w[0] * 10
    assert y.grad_fn.name() == "IndexPutBackward0"
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [11, 0, 1])


def test_setitem_with_slices_tensors_and_broadcast_matches_torch(torch_mod):
    def run(m):
        a = m.zeros(3, 4, dtype=m.float64)
        v = m.tensor([1.0, 2.0, 3.0, 4.0], dtype=m.float64, requires_grad=True)
        a[1:] = v * 2
        a[0, m.tensor([0, 2])] = 7.0
        a[a > 7] = -1.0
        (a * a).sum().backward()
        return a.detach().numpy().copy(), v.grad.numpy().copy()

    e, t = run(ember), run(torch_mod)
    np.testing.assert_allclose(e[0], t[0])
    np.testing.assert_allclose(e[1], t[1])


def test_index_errors_name_the_index_and_dimension():
    x = ember.ones(2, 3)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 3"):
        x[0, 5]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 2"):
        x[ember.tensor([0, 4])]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="tensors used as indices must be long"):
        x[ember.tensor([0.0])]
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 1 with size 3"):
        x.gather(1, ember.tensor([[7]]))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions"):
        x.gather(1, ember.tensor([0]))


def test_sort_argsort_topk_indices_match_torch():
    x = np.array([[3.0, 1.0, 2.0, 1.0], [0.5, 0.5, -1.0, 4.0]])
    for fn in (
        lambda m, t: t.sort(dim=1, stable=True).indices,
        lambda m, t: t.argsort(0),
        lambda m, t: t.sort(descending=True, stable=True)[1],
    ):
        compare_with_torch(fn, [x], grad=False)
    # PyTorch does not define the order of tied elements in topk: compare without ties
    distinct = np.array([[3.0, 1.0, 2.0, 1.5], [0.5, 0.7, -1.0, 4.0]])
    compare_with_torch(lambda m, t: t.topk(3).indices, [distinct], grad=False)


def test_nonzero_unique_match_torch():
    x = np.array([[0.0, 1.0, 2.0], [2.0, 0.0, 2.0]])
    for fn in (
        lambda m, t: m.nonzero(t),
        lambda m, t: t.nonzero(as_tuple=True)[1],
        lambda m, t: m.unique(t),
        lambda m, t: t.unique(return_counts=True)[1],
        lambda m, t: t.unique(return_inverse=True)[1],
        lambda m, t: m.argwhere(t),
        lambda m, t: m.where(t > 0)[0],
    ):
        compare_with_torch(fn, [x], grad=False)


def test_empty_index_results():
    x = arrays_for([(3, 4)], -2, 2)[0]
    for fn in (
        lambda m, t: t[t > 100],
        lambda m, t: t[m.tensor([], dtype=m.int64)],
        lambda m, t: t[:, 2:2],
    ):
        compare_with_torch(fn, [x])
        check_gradients(fn, [x])


@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3), data=st.data())
@settings(max_examples=20, deadline=None)
def test_gather_and_index_select_over_generated_shapes(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(len(shape) + dim)
    index = rng.integers(0, shape[dim], size=shape)
    rows = rng.integers(0, shape[dim], size=4)
    x = arrays_for([shape], -1, 1)[0]
    gather = lambda m, t: t.gather(dim, m.tensor(index))
    select = lambda m, t: t.index_select(dim, m.tensor(rows))
    for fn in (gather, select):
        check_gradients(fn, [x])
        compare_with_torch(fn, [x])


@pytest.mark.parametrize(
    "shape,dim,k", [((64, 300), -1, 10), ((12, 90, 5), 1, 7), ((400,), 0, 3), ((80, 6), 0, 20)]
)
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8"])
def test_topk_of_a_few_equals_the_head_of_a_stable_sort(shape, dim, k, largest, dtype):
    """A few of many are selected by partition: the same positions as the stable sort's head,
    ties included (few distinct integers), and torch's values (and indices without ties)."""
    rng = np.random.default_rng(k)
    if dtype in ("int64", "uint8"):
        x = rng.integers(0, 6, shape).astype(dtype)
    else:
        x = rng.standard_normal(shape).astype(dtype)
    values, indices = ember.tensor(x).topk(k, dim, largest)
    head = ember.tensor(x).sort(dim, descending=largest).indices.numpy()
    np.testing.assert_array_equal(indices.numpy(), head.take(range(k), axis=dim))
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(x, indices.numpy(), dim))
    torch = pytest.importorskip("torch")
    want = torch.tensor(x).topk(k, dim, largest)
    np.testing.assert_array_equal(values.numpy(), want.values.numpy())
    if dtype.startswith("float"):
        np.testing.assert_array_equal(indices.numpy(), want.indices.numpy())


def test_topk_of_a_few_with_nan_and_gradient():
    x = np.random.default_rng(1).standard_normal((6, 40))
    x[2, 5] = np.nan
    t = ember.tensor(x, requires_grad=True)
    values, indices = t.topk(3, 1)
    assert indices[2, 0].item() == 5 and np.isnan(values[2, 0].item())  # NaN is the largest
    values.sum().backward()
    expected = np.zeros_like(x)
    np.put_along_axis(expected, indices.numpy(), 1.0, 1)
    np.testing.assert_array_equal(t.grad.numpy(), expected)


PAD_CASES = [
    ((2, 3, 7), (2, 3)),
    ((3, 7), (1, 0)),
    ((2, 3, 5, 6), (1, 2, 3, 1)),
    ((3, 5, 6), (0, 2, 2, 0)),
    ((1, 2, 4, 5, 6), (1, 1, 2, 0, 3, 3)),
    ((2, 4, 5, 6), (3, 1, 1, 2, 2, 1)),
]


@pytest.mark.parametrize("shape,amounts", PAD_CASES)
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes_match_torch_values_gradients_and_names(shape, amounts, mode):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    results = []
    for m in (ember, torch):
        t = m.tensor(x, requires_grad=True)
        y = m.nn.functional.pad(t, amounts, mode=mode)
        weights = np.random.default_rng(9).standard_normal(tuple(y.shape))
        (y * m.tensor(weights)).sum().backward()
        names = (y.grad_fn.name(), type(y.grad_fn).__name__)  # (CopySlices: they differ)
        results.append((y.detach().numpy(), t.grad.numpy(), names))
    (got, got_grad, got_name), (want, want_grad, want_name) = results
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-12, atol=1e-12)
    assert got_name == want_name


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes_second_order_and_cropping(mode):
    x = ember.tensor(np.random.default_rng(2).standard_normal((2, 4, 5)), requires_grad=True)

    def padded(t):
        return ember.nn.functional.pad(t, (2, 1, 1, 3), mode=mode)

    assert ember.autograd.gradcheck(padded, (x,))
    assert ember.autograd.gradgradcheck(padded, (x,))
    cropped = ember.nn.functional.pad(x, (-1, 2), mode=mode)  # negative: the indexed path
    assert cropped.shape == (2, 4, 6)


def test_pad_modes_refuse_what_torch_refuses():
    x = ember.zeros(2, 3, 5, 6)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D"):
        ember.nn.functional.pad(x, (1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        ember.nn.functional.pad(x, (6, 0, 0, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="wrapping around more than once"):
        ember.nn.functional.pad(x, (7, 0, 0, 0), mode="circular")


def test_unique_consecutive_along_dim_matches_torch(torch_mod):
    rows = [[1, 2, 1], [1, 2, 1], [3, 0, 0], [1, 2, 1]]
    for dim in (0, 1, -1):
        e = ember.unique_consecutive(ember.tensor(rows), True, True, dim=dim)
        t = torch_mod.unique_consecutive(torch_mod.tensor(rows), True, True, dim=dim)
        for a, b in zip(e, t):
            assert a.tolist() == b.tolist() and str(a.dtype)[-5:] == str(b.dtype)[-5:]
    e = ember.unique_consecutive(ember.tensor(rows), dim=0)
    assert e.tolist() == [[1, 2, 1], [3, 0, 0], [1, 2, 1]]


def test_unique_keeps_each_nan_apart_as_torch(torch_mod):
    nan = float("nan")
    data = [3.0, nan, 1.0, nan, 1.0]
    e = ember.unique(ember.tensor(data), return_inverse=True, return_counts=True)
    t = torch_mod.unique(torch_mod.tensor(data), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(e[0].numpy(), t[0].numpy())  # [1, 3, nan, nan]
    assert e[1].tolist() == t[1].tolist() and e[2].tolist() == t[2].tolist()
    e = ember.unique_consecutive(ember.tensor([1.0, nan, nan]), return_counts=True)
    assert e[1].tolist() == [1, 1, 1]
    e = ember.unique(ember.tensor([[1.0, nan], [1.0, nan], [0.0, 1.0]]), dim=0, return_counts=True)
    assert e[1].tolist() == [1, 1, 1]


def test_unique_dim_edge_cases_match_torch():
    with pytest.raises(IndexError, match="tensor has no dimensions"):
        ember.unique(ember.tensor(5), dim=0)
    out = ember.unique(ember.zeros(0, 3), dim=0, return_inverse=True, return_counts=True)
    assert [tuple(t.shape) for t in out] == [(0, 3), (0,), (0,)]
    with pytest.raises(RuntimeError, match="0 sized dimensions"):
        ember.unique_consecutive(ember.zeros(2, 0), dim=0)


def test_circular_pad_with_a_negative_side_wraps_what_the_crop_kept(torch_mod):
    for shape, amounts in [
        ((1, 2, 3), (-1, 2)),
        ((1, 1, 4), (1, -2)),
        ((1, 1, 3, 4), (-1, 2, 1, -1)),
    ]:
        x = np.arange(float(np.prod(shape))).reshape(shape)
        fn = lambda m, t, amounts=amounts: m.nn.functional.pad(t, amounts, mode="circular")
        compare_with_torch(fn, [x])
        check_gradients(fn, [x])
    with pytest.raises(RuntimeError, match="resulting in an empty dimension"):
        ember.nn.functional.pad(ember.ones(1, 1, 3), (-2, -2), mode="circular")


ZERO_DIM_INDEX = {
    "scatter_src": lambda m, x: x.scatter(0, m.tensor(1), x[2] * 3),
    "scatter_value": lambda m, x: x.scatter(0, m.tensor(1), 7.0),
    "scatter_add": lambda m, x: x.scatter_add(0, m.tensor(1), x[0] * 2),
    "scatter_reduce_amax": lambda m, x: x.scatter_reduce(0, m.tensor(1), x[0] * 5, "amax"),
    "scatter_reduce_mean": lambda m, x: x.scatter_reduce(
        0, m.tensor(2), x[0] + 4, "mean", include_self=False
    ),
    "gather": lambda m, x: x.gather(0, m.tensor(1)),
}


@pytest.mark.parametrize("name", sorted(ZERO_DIM_INDEX))
def test_zero_dim_index_into_a_vector_names_one_element(name):
    fn = ZERO_DIM_INDEX[name]
    x = np.array([1.0, -2.0, 3.0])
    compare_with_torch(fn, [x])
    check_gradients(fn, [x])
    assert ember.zeros(3).scatter(0, ember.tensor(1), 3.0).tolist() == [0.0, 3.0, 0.0]


@pytest.mark.parametrize("value", [7.0, "tensor"])
def test_index_fill_of_a_zero_dim_input_matches_torch(value):
    def fill(m, x):
        v = m.tensor(7.0, dtype=m.float64) if value == "tensor" else value
        return x.index_fill(0, m.tensor([0]), v) * 3

    compare_with_torch(fill, [np.array(2.5)])


def test_scatter_checks_src_rank_before_bounds():
    index = ember.tensor([[34, 1], [1, 2]])
    for op in (ember.scatter, ember.scatter_add):
        with pytest.raises(RuntimeError, match="same number of dimensions as src tensor"):
            op(ember.zeros(3, 5), 0, index, ember.zeros(2, 5, 2))


@pytest.mark.parametrize(
    ("dtype", "value", "type_name"),
    [(ember.float32, 1j, "float"), (ember.int64, ember.tensor(1j), "int64_t"),
     (ember.uint8, 300, "uint8_t"), (ember.uint8, -256, "uint8_t"), (ember.int32, 2**31, "int"),
     (ember.float32, 1e300, "float")],
)  # fmt: skip
def test_masked_fill_refuses_values_that_overflow(dtype, value, type_name):
    with pytest.raises(RuntimeError, match=f"cannot be converted to type {type_name} without"):
        ember.zeros(2, dtype=dtype).masked_fill(ember.tensor(False), value)


def test_masked_fill_wraps_negative_ints_into_unsigned_and_takes_real_complex():
    mask = ember.tensor([True, False])
    assert ember.zeros(2, dtype=ember.uint8).masked_fill(mask, -1).tolist() == [255, 0]
    assert ember.zeros(2).masked_fill(mask, 2 + 0j).tolist() == [2.0, 0.0]


def test_masked_scatter_broadcasts_input_with_mask():
    x = ember.zeros(3, requires_grad=True)
    mask = ember.tensor([[True, False, True], [False, True, True]])
    source = ember.arange(6.0).reshape(2, 3).requires_grad_()
    out = ember.masked_scatter(x, mask, source)
    assert out.tolist() == [[0.0, 0.0, 1.0], [0.0, 2.0, 3.0]]
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 0.0]
    assert source.grad.tolist() == [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]
    with pytest.raises(RuntimeError):
        x.detach().masked_scatter_(mask, source)


@pytest.mark.parametrize(("dtype", "name"), [(ember.float32, "Float"), (ember.uint8, "Byte")])
def test_masked_scatter_refuses_non_bool_masks(dtype, name):
    with pytest.raises(
        RuntimeError, match=f"only supports boolean masks, but got mask with dtype {name}"
    ):
        ember.zeros(1, 3).masked_scatter(ember.ones(1, 3, dtype=dtype), ember.zeros(3, 4))


def test_index_add_converts_alpha_to_the_tensor_type():
    index = ember.tensor([0, 1])
    source = ember.tensor([3, 4], dtype=ember.uint8)
    out = ember.index_add(ember.zeros(3, dtype=ember.uint8), 0, index, source, alpha=-1)
    assert out.tolist() == [253, 252, 0]  # alpha -1 is 255 in uint8
    source = ember.tensor([3, 4], dtype=ember.int8)
    assert ember.index_add(
        ember.zeros(3, dtype=ember.int8), 0, index, source, alpha=1.5
    ).tolist() == [3, 4, 0]
    with pytest.raises(RuntimeError, match="cannot be converted to type int8_t without overflow"):
        ember.index_add(ember.zeros(3, dtype=ember.int8), 0, index, source, alpha=300)
