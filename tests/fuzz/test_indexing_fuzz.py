"""Fuzzing indexing against torch: gather/scatter/index_select/index_add/take/take_along_dim,
tensor keys in ``[]`` and ``[]=``, F.embedding and F.one_hot, with negative, out-of-range and
empty indices of several dtypes, on 0-d, empty and ordinary tensors. Each call matches torch or
raises torch's exception type."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from ._compare import FUZZ, INTEGER, Input, arrays, pick, rng_of, same, shapes

INDEX_DTYPES = ["int64", "int64", "int64", "int32", "int16", "uint8", "float32", "bool"]


def _index(rng, shape, size: int, dtype: str | None = None, in_range: bool = False) -> Input:
    """Indices for a dim of ``size``: mostly in range, now and then negative or past the end."""
    dtype = dtype or pick(rng, INDEX_DTYPES)
    if dtype == "bool":
        return Input(rng.random(shape) < 0.5, dtype)
    low, high = (-size, size) if in_range else (-size - 2, size + 2)
    values = rng.integers(low, high, shape) if high > low else np.zeros(shape, dtype=np.int64)
    if dtype == "uint8":
        values = np.abs(values)
    return Input(values.astype(dtype), dtype)


def _dim_and_size(rng, shape: tuple):
    dim = int(rng.integers(-max(len(shape), 1), max(len(shape), 1)))
    size = shape[dim] if shape else 1
    return dim, size


@FUZZ
@given(data=st.data())
def test_index_select_and_index_add_match_torch(data):
    rng = rng_of(data.draw)
    x = data.draw(arrays(data.draw(shapes()), dtypes=["float32", "int64", "bool"]))
    dim, size = _dim_and_size(rng, x.array.shape)
    index = _index(rng, data.draw(shapes(max_dims=2, max_side=3)), size)
    same(lambda m, t, i: m.index_select(t, dim, i), x, index)
    n = index.array.size
    src_shape = list(x.array.shape)
    if src_shape:
        src_shape[dim] = n if rng.random() < 0.9 else n + 1
    source = Input(np.ones(src_shape, dtype=x.array.dtype), x.dtype)
    same(lambda m, t, i, s: t.index_add(dim, i, s), x, index, source)


@FUZZ
@given(data=st.data())
def test_gather_scatter_and_scatter_add_match_torch(data):
    rng = rng_of(data.draw)
    x = data.draw(arrays(data.draw(shapes()), dtypes=["float32", "float64", "int64"]))
    shape = x.array.shape
    dim, size = _dim_and_size(rng, shape)
    # an index of the same rank, each size at most the input's (sometimes one more)
    index_shape = tuple(int(rng.integers(0, s + 2)) for s in shape)
    if rng.random() < 0.2:
        index_shape = index_shape + (1,)  # a rank mismatch
    index = _index(rng, index_shape, size, pick(rng, ["int64", "int64", "int32", "float32"]))
    same(lambda m, t, i: m.gather(t, dim, i), x, index)
    src_dtype = x.dtype if rng.random() < 0.8 else "float64"
    src = Input(np.full(index_shape, 7).astype(src_dtype), src_dtype)
    same(lambda m, t, i, s: t.scatter(dim, i, s), x, index, src)
    same(lambda m, t, i, s: t.scatter_add(dim, i, s), x, index, src)
    same(lambda m, t, i: t.scatter(dim, i, 2.5), x, index)
    reduce = pick(rng, ["sum", "prod", "mean", "amax", "amin"])
    same(lambda m, t, i, s: t.scatter_reduce(dim, i, s, reduce), x, index, src)


@FUZZ
@given(data=st.data())
def test_take_and_take_along_dim_match_torch(data):
    rng = rng_of(data.draw)
    x = data.draw(arrays(data.draw(shapes()), dtypes=["float32", "int64"]))
    shape = x.array.shape
    flat = _index(rng, data.draw(shapes(max_dims=2, max_side=3)), x.array.size)
    same(lambda m, t, i: m.take(t, i), x, flat)
    same(lambda m, t, i: m.take_along_dim(t, i), x, flat)
    dim, size = _dim_and_size(rng, shape)
    along = list(shape)
    if along:
        along[dim] = int(rng.integers(0, 4))
    # with a dim torch does not check the bounds (it reads past the end): stay in range
    index = _index(rng, tuple(along), size, pick(rng, ["int64", "int64", "int32"]), True)
    assume(size > 0 or index.array.size == 0)
    same(lambda m, t, i: m.take_along_dim(t, i, dim), x, index)


KEYS = {
    "i": lambda i: i,
    "(i,)": lambda i: (i,),
    "(..., i)": lambda i: (Ellipsis, i),
    "(i, i)": lambda i: (i, i),
    "(0, i)": lambda i: (0, i),
    "(:, i)": lambda i: (slice(None), i),
    "(None, i)": lambda i: (None, i),
}


@FUZZ
@given(data=st.data())
def test_getitem_and_setitem_with_tensor_keys_match_torch(data):
    rng = rng_of(data.draw)
    x = data.draw(arrays(data.draw(shapes(min_dims=1)), dtypes=["float32", "int64", "bool"]))
    key = KEYS[pick(rng, sorted(KEYS))]
    size = x.array.shape[0]
    index = _index(rng, data.draw(shapes(max_dims=2, max_side=3)), size)
    if index.dtype == "bool" and rng.random() < 0.7:  # a mask of the input's shape
        index = Input(rng.random(x.array.shape) < 0.5, "bool")
    # torch skips the bounds check when the result is empty; ember raises (see the header)
    assume(x.array.size > 0 or index.dtype in ("bool", "uint8"))
    same(lambda m, t, i: t[key(i)], x, index)
    value_dtype = x.dtype if rng.random() < 0.8 else "float64"
    value_shape = () if rng.random() < 0.5 else (int(rng.integers(1, 4)),)
    value = Input(np.ones(value_shape).astype(value_dtype), value_dtype)

    def assign(m, t, i, v):
        t = t.clone()
        t[key(i)] = v
        return t

    same(assign, x, index, value)


@FUZZ
@given(data=st.data())
def test_embedding_and_one_hot_match_torch(data):
    rng = rng_of(data.draw)
    # mostly 2-d weights; 0-d, 1-d and 3-d ones are refused
    ndim = 2 if rng.random() < 0.8 else int(rng.integers(0, 4))
    weight = data.draw(arrays(data.draw(shapes(min_dims=ndim, max_dims=ndim)), dtypes=["float32"]))
    rows = weight.array.shape[0] if ndim else 1
    dtype = pick(rng, ["int64", "int64", "int32", "float32"] + INTEGER[2:])
    index = _index(rng, data.draw(shapes(max_dims=2, max_side=3)), rows, dtype)
    padding_idx = pick(rng, [None, None, 0, 1, -1, rows, -rows - 1])
    same(lambda m, i, w: m.nn.functional.embedding(i, w, padding_idx), index, weight)
    classes = int(rng.integers(-2, 6))
    labels = _index(rng, data.draw(shapes(max_dims=2, max_side=3)), 4, dtype)
    same(lambda m, i: m.nn.functional.one_hot(i, classes), labels)
