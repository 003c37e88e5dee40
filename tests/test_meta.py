"""ember._meta: arrays with a shape and a dtype and no data. Each shape rule is checked against
NumPy computing the same call on real arrays of the same shapes and dtypes."""

import tracemalloc

import numpy as np
import pytest

from ember import _backend, _meta


def _real(shape, dtype="float32"):
    return np.ones(shape, dtype)


def _pair(shape, dtype="float32"):
    return _meta.empty(shape, dtype), _real(shape, dtype)


def _check(meta_result, real_result):
    assert type(meta_result) is _meta.MetaArray
    assert meta_result.shape == np.shape(real_result)
    assert meta_result.dtype == np.asarray(real_result).dtype


def test_an_array_views_one_element_whatever_its_shape():
    tracemalloc.start()
    try:
        a = _meta.empty((100_000, 100_000, 100), "float64")
        views = [a.T, a.reshape(-1), a[1:, ::3], a[None, ..., 0], np.swapaxes(a, 0, 2)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert a.shape == (100_000, 100_000, 100) and a.nbytes == 8 * 10**12
    assert all(type(v) is _meta.MetaArray and not any(v.strides) for v in views)
    assert views[2].shape == (99_999, 33_334, 100)
    assert peak < 100_000


# --- ufuncs ------------------------------------------------------------------------------------
UFUNC_CASES = {
    "add_broadcast": (np.add, [((3, 1), "float32"), ((4,), "float32")]),
    "multiply_promote": (np.multiply, [((2, 3), "int32"), ((3,), "float64")]),
    "true_divide_int": (np.true_divide, [((5,), "int64"), ((5,), "int64")]),
    "greater": (np.greater, [((2, 2), "float32"), ((2, 1), "float16")]),
    "exp_half": (np.exp, [((4,), "float16")]),
    "matmul": (np.matmul, [((2, 1, 3, 4), "float32"), ((5, 4, 6), "float32")]),
    "matmul_vector_left": (np.matmul, [((4,), "float64"), ((3, 4, 2), "float64")]),
    "matmul_vector_right": (np.matmul, [((3, 4), "float32"), ((4,), "float32")]),
    "matmul_vectors": (np.matmul, [((4,), "float32"), ((4,), "float32")]),
    "divmod": (np.divmod, [((3,), "int32"), ((3,), "int32")]),
}


@pytest.mark.parametrize("name", sorted(UFUNC_CASES))
def test_ufunc_call_shape_and_dtype_as_numpy(name):
    ufunc, operands = UFUNC_CASES[name]
    metas = [_meta.empty(s, d) for s, d in operands]
    reals = [_real(s, d) for s, d in operands]
    ours, theirs = ufunc(*metas), ufunc(*reals)
    if isinstance(theirs, tuple):
        for o, t in zip(ours, theirs, strict=True):
            _check(o, t)
    else:
        _check(ours, theirs)


def test_python_numbers_keep_numpys_weak_scalar_dtypes():
    a, r = _pair((3,), "float16")
    _check(a * 2.5, r * 2.5)
    b, s = _pair((3,), "int8")
    _check(b + 3, s + 3)
    _check(b / 2, s / 2)


def test_mixing_with_a_plain_array_gives_a_meta_array():
    a, r = _pair((2, 3))
    _check(a + np.ones(3), r + np.ones(3))
    _check(np.ones((2, 1)) * a, np.ones((2, 1)) * r)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"axis": 1}, {"axis": (0, 2)}, {"axis": None}, {"axis": -1, "keepdims": True}],
)
def test_reductions_as_numpy(kwargs):
    a, r = _pair((3, 4, 5), "int32")
    _check(np.add.reduce(a, **kwargs), np.add.reduce(r, **kwargs))
    _check(
        a.sum(**{**kwargs, "axis": kwargs.get("axis")}),
        r.sum(**{**kwargs, "axis": kwargs.get("axis")}),
    )
    b, s = _pair((3, 4, 5), "float32")
    _check(np.maximum.reduce(b, **kwargs), np.maximum.reduce(s, **kwargs))


def test_methods_that_reduce_as_numpy():
    a, r = _pair((3, 4), "float32")
    for name in ("mean", "std", "var", "max", "min", "prod", "any", "all"):
        _check(getattr(a, name)(axis=0), getattr(r, name)(axis=0))
    _check(a.argmax(axis=1), r.argmax(axis=1))
    _check(a.argmin(), r.argmin())
    _check(a.cumsum(axis=1), r.cumsum(axis=1))
    _check(a.cumsum(), r.cumsum())
    _check(np.cumsum(_meta.empty((3,), "int32")), np.cumsum(_real((3,), "int32")))


def test_reduction_errors_as_numpy():
    with pytest.raises(np.exceptions.AxisError):
        _meta.empty((3, 4)).sum(axis=2)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        _meta.empty((0, 4)).max(axis=0)


def test_ufunc_outputs_and_in_place_writes_change_nothing():
    a = _meta.empty((3, 4))
    out = _meta.empty((3, 4))
    assert np.add(a, 1, out=out) is out
    a += 1
    np.add.at(a, [0, 1], 1.0)
    a[0] = 5.0
    a.fill(3.0)
    assert type(a) is _meta.MetaArray and a.shape == (3, 4)


def test_matmul_core_dimension_mismatch_raises_as_numpy():
    with pytest.raises(ValueError, match="mismatch in its core dimension 0") as ours:
        np.matmul(_meta.empty((3, 4)), _meta.empty((5, 2)))
    with pytest.raises(ValueError) as theirs:
        np.matmul(_real((3, 4)), _real((5, 2)))
    assert str(ours.value) == str(theirs.value)


# --- NumPy functions -----------------------------------------------------------------------------
FUNCTION_CASES = {
    "concatenate": lambda m: np.concatenate([m((2, 3)), m((4, 3))]),
    "concatenate_axis1": lambda m: np.concatenate([m((2, 3)), m((2, 1))], axis=1),
    "concatenate_none": lambda m: np.concatenate([m((2, 3)), m((4,))], axis=None),
    "stack": lambda m: np.stack([m((2, 3)), m((2, 3))], axis=-1),
    "dot_2d": lambda m: np.dot(m((3, 4)), m((4, 5))),
    "dot_nd": lambda m: np.dot(m((2, 3, 4)), m((6, 4, 5))),
    "dot_vector": lambda m: np.dot(m((3, 4)), m((4,))),
    "tensordot": lambda m: np.tensordot(m((3, 4, 5)), m((5, 4, 2)), axes=([1, 2], [1, 0])),
    "einsum": lambda m: np.einsum("bij,bjk->bik", m((2, 3, 4)), m((2, 4, 5))),
    "einsum_implicit": lambda m: np.einsum("ij,jk", m((3, 4)), m((4, 5))),
    "einsum_ellipsis": lambda m: np.einsum("...ij,...jk->...ik", m((7, 1, 3, 4)), m((6, 4, 5))),
    "einsum_trace": lambda m: np.einsum("ii->i", m((3, 3))),
    "where": lambda m: np.where(m((3, 1), "bool"), m((4,)), 0.0),
    "take": lambda m: np.take(m((4, 5)), np.zeros((2, 3), int), axis=1),
    "take_flat": lambda m: np.take(m((4, 5)), np.zeros(3, int)),
    "take_along_axis": lambda m: np.take_along_axis(m((4, 5)), m((4, 2), "int64"), axis=1),
    "repeat": lambda m: np.repeat(m((2, 3)), 3, axis=1),
    "pad": lambda m: np.pad(m((2, 3)), ((1, 2), (0, 3))),
    "sort": lambda m: np.sort(m((3, 4)), axis=0),
    "partition": lambda m: np.partition(m((3, 4)), 2),
    "argpartition": lambda m: np.argpartition(m((3, 4)), 2, axis=0),
    "triu": lambda m: np.triu(m((3, 4)), 1),
    "argsort": lambda m: np.argsort(m((3, 4))),
    "clip": lambda m: np.clip(m((3, 4)), 0, 1),
    "clip_array_bound": lambda m: np.clip(m((3, 4)), m((2, 1, 4)), 1.0),
    "round": lambda m: np.round(m((3, 4), "float16"), 2),
    "sort_flat": lambda m: np.sort(m((3, 4)), axis=None),
    "moveaxis": lambda m: np.moveaxis(m((2, 3, 4)), 0, -1),
    "broadcast_to": lambda m: np.broadcast_to(m((3, 1)), (2, 3, 5)),
    "expand_dims": lambda m: np.expand_dims(m((2, 3)), (0, 3)),
    "split": lambda m: np.split(m((6, 3)), 3)[1],
    "zeros_like": lambda m: np.zeros_like(m((2, 3), "int16")),
    "full_like": lambda m: np.full_like(m((2, 3)), 7, dtype="float64"),
    "copy": lambda m: np.copy(m((2, 3))),
    "sliding_window_view": lambda m: np.lib.stride_tricks.sliding_window_view(
        m((2, 8, 8)), (3, 3), axis=(1, 2)
    ),
    "tril": lambda m: np.tril(m((4, 4))),
    "count_nonzero": lambda m: np.count_nonzero(m((3, 4)), axis=1, keepdims=True),
    "isclose": lambda m: np.isclose(m((3, 1)), m((4,))),
    "searchsorted": lambda m: np.searchsorted(m((5,)), m((2, 3))),
    "diagonal": lambda m: np.diagonal(m((3, 4, 5)), axis1=1, axis2=2),
    "astype": lambda m: m((2, 3)).astype("float16"),
    "view_dtype": lambda m: m((2, 4), "float32").view("int32"),
    "view_narrower": lambda m: m((2, 4), "float32").view("int16"),
}


@pytest.mark.parametrize("name", sorted(FUNCTION_CASES))
def test_function_shape_and_dtype_as_numpy(name):
    case = FUNCTION_CASES[name]
    _check(case(lambda s, d="float32": _meta.empty(s, d)), case(_real))


def test_concatenate_mismatch_raises_as_numpy():
    for make in (_meta.empty, _real):
        with pytest.raises(ValueError, match="along dimension 1, the array at index 0 has size 3"):
            np.concatenate([make((2, 3)), make((2, 4))])


def test_dot_mismatch_raises_as_numpy():
    for make in (_meta.empty, _real):
        with pytest.raises(ValueError, match=r"shapes \(3,4\)|shapes \(3, 4\)"):
            np.dot(make((3, 4)), make((5, 2)))


# --- indexing ------------------------------------------------------------------------------
INDEX_KEYS = {
    "slices": lambda i: (slice(1, None), slice(None, None, 2)),
    "int_and_none": lambda i: (None, 2, Ellipsis, None),
    "one_array": lambda i: i((2, 3)),
    "array_then_slice": lambda i: (i((4,)), slice(1, 3)),
    "slice_then_arrays": lambda i: (slice(None), i((2, 1)), i((3,))),
    "separated_arrays": lambda i: (i((2,)), slice(None), i((2,))),
    "int_with_array": lambda i: (1, slice(None), i((3,))),
    "list": lambda i: [0, 1, 1],
    "ellipsis_array": lambda i: (Ellipsis, i((2, 2))),
}


@pytest.mark.parametrize("name", sorted(INDEX_KEYS))
def test_indexing_shape_as_numpy(name):
    key = INDEX_KEYS[name]
    ours = _meta.empty((5, 6, 7), "float32")[key(lambda s: _meta.empty(s, "int64"))]
    theirs = _real((5, 6, 7))[key(lambda s: np.zeros(s, "int64"))]
    _check(ours, theirs)


def test_index_errors_as_numpy():
    for make in (_meta.empty, _real):
        with pytest.raises(IndexError, match="too many indices"):
            make((2, 3))[0, 0, 0]
        with pytest.raises(IndexError, match="out of bounds"):
            make((2, 3))[5]


# --- what needs values ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "call",
    [
        lambda a: a.nonzero(),
        lambda a: np.nonzero(a),
        lambda a: np.unique(a),
        lambda a: a[a > 0],
        lambda a: np.where(a > 0),
        lambda a: np.bincount(a.astype("int64").reshape(-1)),
    ],
)
def test_data_dependent_shapes_raise_not_implemented(call):
    with pytest.raises(NotImplementedError, match="depends on the tensor's values"):
        call(_meta.empty((3, 4)))


def test_reading_values_raises_torchs_errors():
    a = _meta.empty(())
    with pytest.raises(RuntimeError, match=r"Tensor.item\(\) cannot be called on meta tensors"):
        a.item()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        a.tolist()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        a.tobytes()


def test_an_ops_own_value_checks_find_nothing():
    a = _meta.empty((3,), "int64")
    assert not (a < 0).any() and (a >= 0).all()
    assert int(a.max()) == 0 and float(a.min()) == 0.0


# --- the device's array module and the backend's map ----------------------------------------------
def test_module_makes_meta_arrays():
    xp = _meta.MODULE
    for made, shape, dtype in [
        (xp.zeros((2, 3), dtype="int32"), (2, 3), "int32"),
        (xp.ones(4), (4,), "float64"),
        (xp.full((2,), 1.5), (2,), "float64"),
        (xp.arange(2, 11, 3), (3,), "int64"),
        (xp.arange(0.0, 1.0, 0.25, dtype="float32"), (4,), "float32"),
        (xp.eye(3, 2), (3, 2), "float64"),
        (xp.asarray([[1, 2], [3, 4]]), (2, 2), "int64"),
        (xp.ascontiguousarray(_meta.empty((3, 4)).T), (4, 3), "float64"),
        (xp.lib.stride_tricks.as_strided(xp.empty(12), (3, 4), (32, 8)), (3, 4), "float64"),
    ]:
        assert type(made) is _meta.MetaArray and made.shape == shape and made.dtype == dtype
    assert xp.float32 is np.float32 and xp.add is np.add


def test_backend_maps_meta_arrays_to_the_meta_device():
    a = _meta.empty((2,))
    assert _backend.array_module(a) is _meta.MODULE
    assert _backend.device_of(a) == _backend.device("meta")
    assert _backend.require_module(_backend.device("meta")) is _meta.MODULE
    moved = _backend.move(np.ones((2, 3), "float32"), _backend.device("meta"))
    assert type(moved) is _meta.MetaArray and moved.shape == (2, 3) and moved.dtype == "float32"
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        _backend.move(a, _backend.CPU)
    assert _backend.device_of(np.ones(2)) == _backend.CPU


def test_copies_and_pickles_keep_shape_and_dtype():
    import copy
    import pickle

    a = _meta.empty((1000, 1000, 1000), "float16")
    for b in (a.copy(), copy.copy(a), copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert type(b) is _meta.MetaArray and b.shape == a.shape and b.dtype == a.dtype


def test_a_decomposition_without_a_meta_rule_says_so_rather_than_looking_for_cupy():
    import ember

    a = ember.empty(3, 3, device="meta")
    for call in (ember.linalg.lu, ember.linalg.lu_factor):
        with pytest.raises(NotImplementedError, match="not supported on meta tensors"):
            call(a)
