"""inner, mv and batched products of mixed dtypes where torch answers without computing:
shapes, dtypes and errors as torch's."""

import numpy as np
import pytest

import ember


def _outcome(fn, lib):
    try:
        out = fn(lib)
    except Exception as exc:  # noqa: BLE001 - the exception type is what is compared
        return type(exc).__name__
    return tuple(out.shape), str(out.dtype).split(".")[-1], out.numpy().tolist()


def _same(torch_mod, fn):
    assert _outcome(fn, ember) == _outcome(fn, torch_mod)


@pytest.mark.parametrize(
    "a,b",
    [
        ((), (3,)),
        ((2, 3), ()),
        ((), ()),
        ((3,), (3,)),
        ((2, 3), (4, 3)),
        ((3,), (2, 4, 3)),
        ((2, 1, 3), (3,)),
        ((3, 0), (2, 0)),
        ((2, 3), (4,)),
        ((0, 3), (2, 3)),
    ],
)
def test_inner_matches_torch(torch_mod, a, b):
    rng = np.random.default_rng(0)
    x, y = rng.integers(-3, 4, a).astype("float64"), rng.integers(-3, 4, b).astype("float64")
    _same(torch_mod, lambda m: m.inner(m.tensor(x), m.tensor(y)))
    _same(torch_mod, lambda m: m.inner(m.tensor(x).long(), m.tensor(y).float()))


def test_inner_of_a_zero_dim_operand_multiplies_and_promotes_as_torch(torch_mod):
    _same(torch_mod, lambda m: m.inner(m.tensor(2, dtype=m.uint8), m.ones(3, dtype=m.int8)))
    _same(torch_mod, lambda m: m.inner(m.ones(2, 3, dtype=m.float64), m.tensor(2.0)))
    with pytest.raises(RuntimeError, match="inner\\(\\) the last dimension must match"):
        ember.inner(ember.ones(2, 3), ember.ones(4))
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        ember.inner(ember.ones(2, 3), ember.ones(4, 3, dtype=ember.float64))


@pytest.mark.parametrize(
    "a,b", [((), (3,)), ((2, 3), ()), ((), ()), ((2, 3, 4), ()), ((3,), (2,)), ((2, 3), (3,))]
)
def test_mv_errors_match_torch(torch_mod, a, b):
    _same(torch_mod, lambda m: m.mv(m.ones(a), m.ones(b)))
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        ember.mv(ember.tensor(2.0), ember.ones(3))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 1, 2, 0"):
        ember.mv(ember.ones(2, 3), ember.tensor(2.0))


@pytest.mark.parametrize(
    "a,b",
    [
        ((2, 3), (0, 3, 2)),
        ((3,), (0, 3, 2)),
        ((0, 2, 3), (3, 2)),
        ((2, 0, 2, 3), (2, 0, 3, 2)),
        ((0, 2, 3), (1, 3, 2)),
        ((2, 2, 0), (2, 0, 2)),
        ((2, 2, 0), (0, 2)),
        ((2, 0), (2, 0, 2)),
        ((2, 1, 2, 0), (3, 0, 2)),
        ((4, 2, 3), (4, 3, 0)),
        ((4, 0, 3), (3, 2)),
        ((2, 4), (0, 3, 2)),
    ],
)
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("int64", "float32"), ("bool", "int8")])
def test_empty_batched_products_of_mixed_dtypes_match_torch(torch_mod, a, b, dtypes):
    """torch's bmm returns zeros in the second operand's dtype before checking dtypes when
    nothing is computed; products it folds into mm or mv refuse."""
    da, db = dtypes
    _same(
        torch_mod,
        lambda m: m.matmul(m.ones(a, dtype=getattr(m, da)), m.ones(b, dtype=getattr(m, db))),
    )
    if len(a) == 3 and len(b) == 3:
        _same(
            torch_mod,
            lambda m: m.bmm(m.ones(a, dtype=getattr(m, da)), m.ones(b, dtype=getattr(m, db))),
        )
