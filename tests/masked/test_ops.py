"""ember.masked's reductions and normalizations against torch.masked: values, dtypes and
float64 gradients, with partial masks, fully masked-out slices, dim tuples and keepdim."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
DATA = RNG.standard_normal((3, 4, 5))
MASK = RNG.random((3, 4, 5)) > 0.4
MASK[1, 2, :] = False  # one fully masked-out slice along the last dim
MASK[2, :, :] = False  # and one along (1, 2)


def both(array):
    return ember.tensor(array), torch.tensor(array)


def compare(ember_result, torch_result):
    assert str(ember_result.dtype).split(".")[-1] == str(torch_result.dtype).split(".")[-1]
    np.testing.assert_allclose(
        ember_result.detach().numpy(), torch_result.detach().numpy(), rtol=1e-6, atol=1e-7
    )


REDUCTIONS = [
    ("sum", {}),
    ("prod", {}),
    ("amax", {}),
    ("amin", {}),
    ("mean", {}),
    ("logsumexp", {}),
    ("var", {}),
    ("std", {"correction": 0}),
    ("var", {"unbiased": False}),
]


@pytest.mark.parametrize("name, extra", REDUCTIONS)
@pytest.mark.parametrize("dim", [None, -1, (1, 2), (0, -1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reduction_matches_torch_with_fully_masked_slices(name, extra, dim, keepdim):
    (x, tx), (m, tm) = both(DATA), both(MASK)
    result = getattr(ember.masked, name)(x, dim, keepdim=keepdim, mask=m, **extra)
    expected = getattr(torch.masked, name)(tx, dim, keepdim=keepdim, mask=tm, **extra)
    compare(result, expected)


@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "mean", "norm", "var"])
def test_reduction_without_mask_is_the_plain_reduction(name):
    (x, tx) = both(DATA)
    args = (2.0, (0, 2)) if name == "norm" else ((0, 2),)
    compare(getattr(ember.masked, name)(x, *args), getattr(torch.masked, name)(tx, *args))


def test_mask_broadcasts_to_the_input():
    (x, tx), (m, tm) = both(DATA), both(MASK[0, 0])  # shape (5,) against (3, 4, 5)
    compare(ember.masked.sum(x, 1, mask=m), torch.masked.sum(tx, 1, mask=tm))


def test_integer_sum_and_prod_promote_to_int64_and_dtype_is_honoured():
    ints = RNG.integers(-3, 4, (4, 5)).astype(np.int32)
    (x, tx), (m, tm) = both(ints), both(MASK[0])
    compare(ember.masked.sum(x, 0, mask=m), torch.masked.sum(tx, 0, mask=tm))
    compare(ember.masked.prod(x, 1, mask=m), torch.masked.prod(tx, 1, mask=tm))
    compare(
        ember.masked.sum(x, 1, mask=m, dtype=ember.float64),
        torch.masked.sum(tx, 1, mask=tm, dtype=torch.float64),
    )
    compare(ember.masked.amax(x, 1, mask=m), torch.masked.amax(tx, 1, mask=tm))


def test_argmax_and_argmin_cast_indices_to_the_input_dtype_as_torch_does():
    (x, tx), (m, tm) = both(DATA[0]), both(MASK[0])
    for name in ("argmax", "argmin"):
        compare(
            getattr(ember.masked, name)(x, 1, mask=m), getattr(torch.masked, name)(tx, 1, mask=tm)
        )
        compare(
            getattr(ember.masked, name)(x, 0, keepdim=True, mask=m, dtype=ember.int64),
            getattr(torch.masked, name)(tx, 0, keepdim=True, mask=tm, dtype=torch.int64),
        )


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("dim", [0, -1])
def test_normalizations_match_torch(name, dim):
    (x, tx), (m, tm) = both(DATA), both(MASK)
    compare(
        getattr(ember.masked, name)(x, dim, mask=m), getattr(torch.masked, name)(tx, dim, mask=tm)
    )


@pytest.mark.parametrize("ord", [1.0, 2.0, 3.5, float("inf"), float("-inf"), 0.0])
def test_norm_and_normalize_match_torch(ord):
    (x, tx), (m, tm) = both(DATA), both(MASK)
    compare(ember.masked.norm(x, ord, 1, mask=m), torch.masked.norm(tx, ord, 1, mask=tm))
    if ord != 0.0:
        compare(
            ember.masked.normalize(x, ord, -1, mask=m), torch.masked.normalize(tx, ord, -1, mask=tm)
        )


def test_median_of_float_and_of_integers():
    (x, tx), (m, tm) = both(DATA[0]), both(MASK[0])
    compare(ember.masked.median(x, 1, mask=m), torch.masked.median(tx, 1, mask=tm))
    ints = RNG.integers(0, 9, (4, 5))
    keep = np.ones((4, 5), dtype=bool)
    keep[:, 0] = False
    (xi, txi), (mi, tmi) = both(ints), both(keep)
    compare(ember.masked.median(xi, 1, mask=mi), torch.masked.median(txi, 1, mask=tmi))
    with pytest.raises(ValueError, match="no fully masked out rows"):
        ember.masked.median(xi, 0, mask=ember.tensor(~keep))


def test_logaddexp_masks_each_side():
    (a, ta), (b, tb) = both(DATA[0]), both(DATA[1])
    (m, tm), (n, tn) = both(MASK[0]), both(MASK[1])
    compare(
        ember.masked.logaddexp(a, b, input_mask=m, other_mask=n),
        torch.masked.logaddexp(ta, tb, input_mask=tm, other_mask=tn),
    )


def test_errors_follow_torch():
    x = ember.tensor(DATA)
    with pytest.raises(ValueError, match="Could not infer output dtype"):
        ember.masked.mean(ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="appears multiple times"):
        ember.masked.sum(x, (1, 1))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.masked.sum(x, 3)
    with pytest.raises(IndexError, match="broadcastable mask"):
        ember.masked.sum(ember.tensor(DATA[0]), mask=ember.tensor(MASK))


GRADIENT_CASES = [
    ("sum", ((1, 2),), {}),
    ("prod", (1,), {}),
    ("amax", (-1,), {}),
    ("amin", ((0, 1),), {}),
    ("mean", (1,), {}),
    ("logsumexp", (2,), {}),
    ("var", (1,), {}),
    ("std", (2,), {}),
    ("norm", (2.0, 1), {}),
    ("softmax", (1,), {}),
    ("log_softmax", (2,), {}),
    ("softmin", (0,), {}),
    ("cumsum", (1,), {}),
    ("cumprod", (2,), {}),
    ("normalize", (2.0, 1), {}),
    ("median", (2,), {}),
]


@pytest.mark.parametrize("name, args, extra", GRADIENT_CASES)
def test_float64_vjp_matches_torch(name, args, extra):
    keep = MASK.copy()
    keep[1, 2, :] = True  # no fully masked-out slice: their non-finite values have no gradient
    keep[2, :, :] = True
    x = ember.tensor(DATA, requires_grad=True)
    tx = torch.tensor(DATA, requires_grad=True)
    out = getattr(ember.masked, name)(x, *args, mask=ember.tensor(keep), **extra)
    tout = getattr(torch.masked, name)(tx, *args, mask=torch.tensor(keep), **extra)
    cotangent = RNG.standard_normal(tuple(tout.shape))
    out.backward(ember.tensor(cotangent))
    tout.backward(torch.tensor(cotangent))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert np.all(x.grad.numpy()[~keep] == 0) or name in ("var", "std", "normalize")


def test_norm_of_order_zero_has_no_gradient_and_a_zero_tangent_as_in_torch():
    x = ember.tensor(DATA[0], requires_grad=True)
    tx = torch.tensor(DATA[0], requires_grad=True)
    (grad,) = ember.autograd.grad(ember.masked.norm(x, 0.0, 1).sum(), x, allow_unused=True)
    (tgrad,) = torch.autograd.grad(torch.masked.norm(tx, 0.0, 1).sum(), tx, allow_unused=True)
    assert grad is None and tgrad is None
    from ember.autograd import forward_ad

    with forward_ad.dual_level():
        dual = forward_ad.make_dual(ember.tensor(DATA[0]), ember.ones(4, 5, dtype=ember.float64))
        tangent = forward_ad.unpack_dual(ember.masked.norm(dual, 0.0, 1)).tangent
    np.testing.assert_array_equal(tangent.numpy(), np.zeros(4))
