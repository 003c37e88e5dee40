"""Fuzzing type promotion against torch: binary ops over every pair of dtypes, with 0-d tensors
(which only promote within a higher category) and Python numbers ("wrapped numbers": bool <
int < float, and only across categories) on either side."""

from __future__ import annotations

import operator

from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import broadcastable_shapes

from ._compare import ALL_DTYPES, FUZZ, arrays, pick, rng_of, same, shapes

OPS = {
    "add": lambda m, x, y: m.add(x, y),
    "sub": lambda m, x, y: m.sub(x, y),
    "mul": lambda m, x, y: x * y,
    "div": lambda m, x, y: x / y,
    "floor_divide": lambda m, x, y: x // y,
    "remainder": lambda m, x, y: x % y,
    "pow": lambda m, x, y: x**y,
    "maximum": lambda m, x, y: m.maximum(x, y),
    "eq": lambda m, x, y: x == y,
    "lt": lambda m, x, y: x < y,
    "where": lambda m, x, y: m.where(x != 0, x, y),
    "cat": lambda m, x, y: m.cat([x.reshape(-1), y.reshape(-1)]),
}


@FUZZ
@given(data=st.data())
def test_mixed_dtype_binary_ops_promote_as_torch(data):
    name = pick(rng_of(data.draw), sorted(OPS))
    shape = data.draw(st.one_of(st.just(()), shapes(max_dims=2)))  # 0-d half of the time
    other = data.draw(
        st.one_of(st.just(()), broadcastable_shapes(shape, min_dims=0, max_dims=2, max_side=4))
    )
    x = data.draw(arrays(shape, dtypes=ALL_DTYPES))
    y = data.draw(arrays(other, dtypes=ALL_DTYPES))
    # torch divides half floats in float32: floor division and remainder of two nearly equal
    # values may then land on the other side of an integer than ember's half-float division
    halves = {x.dtype, y.dtype} & {"float16", "bfloat16"}
    same(OPS[name], x, y, values=not (halves and name in ("floor_divide", "remainder")))


# ints outside a small dtype's range wrap into it, as torch
SCALARS = [True, False, 0, 1, 2, 3, -1, -2, -3, 300, -129, 0.5, -2.0, 0.0, 1e-3, 3.25, float("inf")]
OPERATORS = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.pow,
    operator.lt,
    operator.eq,
]


@FUZZ
@given(data=st.data())
def test_python_numbers_with_tensors_promote_as_wrapped_numbers(data):
    rng = rng_of(data.draw)
    op, scalar = pick(rng, OPERATORS), pick(rng, SCALARS)
    x = data.draw(arrays(data.draw(shapes(max_dims=2)), dtypes=ALL_DTYPES))
    if rng.random() < 0.5:
        same(lambda m, t: op(t, scalar), x)
    else:
        same(lambda m, t: op(scalar, t), x)
