"""Fuzzing shape ops, matrix products and a few selection ops against torch: reshape/view with
-1 and impossible sizes, permute/transpose/squeeze/unsqueeze/expand with dims out of range,
cat/stack of mismatched shapes and dtypes, split/chunk of empty dims, matmul/mm/bmm/mv/dot of
mismatched shapes and dtypes, clamp with min > max, where with broadcasting, sort/topk/kthvalue
on empty dims, cumsum/cumprod of integers and bools."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import broadcastable_shapes

from ._compare import ALL_DTYPES, FUZZ, arrays, pick, rng_of, same, shapes


def _dim(rng, ndim: int, extra: int = 1) -> int:
    """A dim of a tensor of ``ndim`` dims, now and then out of range."""
    bound = max(ndim, 1) + extra
    return int(rng.integers(-bound, bound))


def _size_list(rng, numel: int, n: int) -> tuple:
    sizes = [int(v) for v in rng.integers(0, 5, n)]
    if rng.random() < 0.5 and n:  # usually a -1 (or two) to infer
        sizes[int(rng.integers(n))] = -1
    if rng.random() < 0.3 and numel:  # now and then exactly the numel
        sizes = [numel] if rng.random() < 0.5 else [-1, 1]
    return tuple(sizes)


@FUZZ
@given(data=st.data())
def test_reshape_permute_squeeze_expand_match_torch(data):
    rng = rng_of(data.draw)
    x = data.draw(arrays(dtypes=["float32", "int64"]))
    shape = x.array.shape
    ndim, numel = len(shape), x.array.size
    sizes = _size_list(rng, numel, int(rng.integers(0, 4)))
    same(lambda m, t: t.reshape(sizes), x)
    same(lambda m, t: t.view(sizes), x)
    perm = tuple(int(v) for v in rng.permutation(ndim))
    if rng.random() < 0.3 and ndim:  # a duplicate, a missing or an out-of-range dim
        perm = perm[:-1] + (pick(rng, [perm[0], ndim, -ndim - 1]),)
    same(lambda m, t: t.permute(perm), x)
    d0, d1, d, d2 = _dim(rng, ndim), _dim(rng, ndim), _dim(rng, ndim), _dim(rng, ndim, 0)
    same(lambda m, t: t.transpose(d0, d1), x)
    same(lambda m, t: t.squeeze(d), x)
    same(lambda m, t: t.squeeze((d, d2)), x)
    new_dim = _dim(rng, ndim + 1)
    same(lambda m, t: t.unsqueeze(new_dim), x)
    target = list(
        data.draw(broadcastable_shapes(shape, min_dims=0, max_dims=4, min_side=0, max_side=4))
    )
    if ndim and len(target) >= ndim and rng.random() < 0.4:  # -1 keeps a size (not leading)
        target[len(target) - 1 - int(rng.integers(ndim))] = -1
    same(lambda m, t: t.expand(tuple(target)), x)
    same(lambda m, t: m.flatten(t, d2, -1), x)


@FUZZ
@given(data=st.data())
def test_cat_stack_split_chunk_match_torch(data):
    rng = rng_of(data.draw)
    x = data.draw(arrays(dtypes=ALL_DTYPES, special=False))
    shape = list(x.array.shape)
    other = list(shape)
    if other and rng.random() < 0.7:  # differ along one dim (or, rarely, elsewhere)
        other[int(rng.integers(len(other)))] = int(rng.integers(0, 4))
    y = data.draw(arrays(tuple(other), dtypes=ALL_DTYPES, special=False))
    d = _dim(rng, len(shape))
    same(lambda m, a, b: m.cat([a, b], d), x, y)
    same(lambda m, a, b: m.stack([a, b], d), x, y)
    same(lambda m, a, b: m.cat([a, m.zeros(0, dtype=m.float64), b], d), x, y)
    pieces = int(rng.integers(0, 4))
    same(lambda m, a: m.split(a, pieces, d), x)
    same(lambda m, a: m.chunk(a, max(pieces, 1), d), x)
    size = shape[d] if shape and -len(shape) <= d < len(shape) else 0
    sections = [int(v) for v in rng.multinomial(size, [0.5, 0.5])] if rng.random() < 0.8 else [1]
    same(lambda m, a: m.split(a, sections, d), x)


PRODUCTS = ["matmul", "mm", "bmm", "mv", "dot", "inner"]


@FUZZ
@given(data=st.data())
def test_matrix_products_of_mismatched_shapes_and_dtypes_match_torch(data):
    rng = rng_of(data.draw)
    name = pick(rng, PRODUCTS)
    a_shape = tuple(int(v) for v in rng.integers(0, 4, int(rng.integers(0, 4))))
    b_shape = list(rng.integers(0, 4, int(rng.integers(0, 4))))
    if a_shape and len(b_shape) >= 2 and rng.random() < 0.7:  # inner sizes usually agree
        b_shape[-2] = a_shape[-1]
    elif a_shape and len(b_shape) == 1 and rng.random() < 0.7:
        b_shape[0] = a_shape[-1]
    dtypes = ["float32", "float32", "float64", "int64"]
    a = data.draw(arrays(a_shape, dtypes=dtypes, special=False))
    b = data.draw(arrays(tuple(int(v) for v in b_shape), dtypes=dtypes, special=False))
    same(lambda m, x, y: getattr(m, name)(x, y), a, b)


@FUZZ
@given(data=st.data())
def test_clamp_where_and_scans_match_torch(data):
    rng = rng_of(data.draw)
    x = data.draw(arrays(dtypes=ALL_DTYPES))
    lo, hi = pick(rng, [-1, 0, 2, -1.5, 0.5, None]), pick(rng, [-2, 1, 3, 0.25, None])
    if lo is not None or hi is not None:
        same(lambda m, t: m.clamp(t, lo, hi), x)
    bound_shape = data.draw(broadcastable_shapes(x.array.shape, min_dims=0, max_dims=3, min_side=0))
    low = data.draw(arrays(bound_shape, dtypes=["float32", "int64", "float64"], special=False))
    same(lambda m, t, b: m.clamp(t, b, b - 1), x, low)  # min > max everywhere: all max
    same(lambda m, t, b: m.where(t > 0, t, b), x, low)
    same(lambda m, t, b: m.where(b > 0, 1.5, t), x, low)
    d = _dim(rng, len(x.array.shape))
    same(lambda m, t: m.cumsum(t, d), x)
    same(lambda m, t: m.cumprod(t, d), x)
    same(lambda m, t: m.cumsum(t, d, dtype=m.float64), x)


@FUZZ
@given(data=st.data())
def test_sort_topk_kthvalue_on_empty_and_small_dims_match_torch(data):
    rng = rng_of(data.draw)
    x = data.draw(arrays(data.draw(shapes(max_side=3)), dtypes=["float32", "int64", "bool"]))
    ndim = len(x.array.shape)
    d = _dim(rng, ndim)
    k = int(rng.integers(-1, 4))
    # indices among ties are implementation-defined: compared by shape and dtype only
    same(lambda m, t: m.sort(t, dim=d, stable=True), x)
    same(lambda m, t: m.topk(t, k, d), x, indices_of=(1,))
    same(lambda m, t: m.kthvalue(t, k, d), x, indices_of=(1,))
    same(lambda m, t: m.argsort(t, dim=d, stable=True), x)
