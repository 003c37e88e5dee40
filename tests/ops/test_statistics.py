"""Order statistics, NaN-aware reductions, running extremes, histograms (ops/statistics.py)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.helpers import arrays_for, check_gradients, compare_with_torch


def _with_nan(shape, seed=0):
    a = arrays_for([shape], seed=seed)[0]
    a.flat[3] = np.nan
    return a


SELECTIONS = [
    lambda m, x: m.median(x),
    lambda m, x: m.median(x, 1),
    lambda m, x: m.median(x, 0, keepdim=True),
    lambda m, x: m.nanmedian(x),
    lambda m, x: m.nanmedian(x, -1),
    lambda m, x: m.mode(x.round(), 1),
    lambda m, x: m.cummax(x, 1),
    lambda m, x: m.cummin(x, 0),
    lambda m, x: m.aminmax(x, dim=1),
    lambda m, x: m.nansum(x, 1),
    lambda m, x: m.nanmean(x, 0),
]


@pytest.mark.parametrize("fn", SELECTIONS)
def test_selections_match_torch_with_and_without_nan(fn):
    compare_with_torch(fn, [arrays_for([(4, 6)], seed=3)[0]])
    if fn is not SELECTIONS[5]:  # torch's mode has no defined answer for rows with NaN
        compare_with_torch(fn, [_with_nan((4, 6))], grad=False)


@pytest.mark.parametrize("fn", SELECTIONS[:3] + SELECTIONS[6:8])
def test_selection_gradients(fn):
    check_gradients(
        lambda m, x: fn(m, x)[0] if isinstance(fn(m, x), tuple) else fn(m, x),
        arrays_for([(3, 5)], seed=1),
        noncontiguous=True,
    )


def test_mode_prefers_smallest_value_and_reports_last_index(torch_mod):
    data = np.array([[1, 2, 2, 3, 3, 0], [5, 5, 1, 1, 2, 2]], dtype=np.float64)
    e, t = ember.mode(ember.tensor(data), 1), torch_mod.mode(torch_mod.tensor(data), 1)
    assert e.values.tolist() == t.values.tolist() == [2.0, 1.0]
    assert e.indices.tolist() == t.indices.tolist()


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (1, False), (0, True)])
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_matches_torch(torch_mod, name, interpolation, dim, keepdim):
    for q in (0.3, [0.0, 0.25, 1.0]):
        for a in (arrays_for([(4, 5)], seed=2)[0], _with_nan((4, 5))):
            eq = q if isinstance(q, float) else ember.tensor(q, dtype=ember.float64)
            tq = q if isinstance(q, float) else torch_mod.tensor(q, dtype=torch_mod.float64)
            e = getattr(ember, name)(ember.tensor(a), eq, dim, keepdim, interpolation=interpolation)
            t = getattr(torch_mod, name)(
                torch_mod.tensor(a), tq, dim, keepdim, interpolation=interpolation
            )
            assert tuple(e.shape) == tuple(t.shape)
            np.testing.assert_allclose(e.numpy(), t.numpy(), equal_nan=True)


def test_quantile_gradients_and_errors(torch_mod):
    check_gradients(lambda m, x: m.quantile(x, 0.4, dim=1), arrays_for([(3, 6)], seed=4))
    compare_with_torch(
        lambda m, x: m.quantile(x, m.tensor([0.2, 0.7], dtype=m.float64), dim=0),
        arrays_for([(5, 3)], seed=5),
    )
    with pytest.raises(RuntimeError, match="in the range"):
        ember.quantile(ember.rand(4), 1.5)
    with pytest.raises(RuntimeError, match="float or double"):
        ember.quantile(ember.arange(4), 0.5)


def test_logcumsumexp_matches_torch_and_is_stable():
    compare_with_torch(lambda m, x: m.logcumsumexp(x, 1), arrays_for([(3, 7)]))
    check_gradients(lambda m, x: m.logcumsumexp(x, 0), arrays_for([(4, 3)]), noncontiguous=True)
    big = ember.tensor([1000.0, 1000.0, -1000.0])
    assert np.allclose(
        ember.logcumsumexp(big, 0).numpy(), [1000.0, 1000.0 + np.log(2)] * 1 + [1000.0 + np.log(2)]
    )


def test_cummax_of_empty_and_scalar():
    assert ember.cummax(ember.zeros(0, 3), 0).values.shape == (0, 3)
    assert ember.cummax(ember.tensor(2.0), 0).indices.item() == 0


def test_histograms_and_counts_match_torch(torch_mod):
    x = np.array([1.0, 5.0, 2.0, 8.0, 3.0, 8.0])
    assert (
        ember.histc(ember.tensor(x), 4).tolist() == torch_mod.histc(torch_mod.tensor(x), 4).tolist()
    )
    assert (
        ember.histc(ember.tensor(x), 3, min=0, max=6).tolist()
        == torch_mod.histc(torch_mod.tensor(x), 3, min=0, max=6).tolist()
    )
    e, t = ember.histogram(ember.tensor(x), 3), torch_mod.histogram(torch_mod.tensor(x), 3)
    assert e.hist.tolist() == t.hist.tolist()
    np.testing.assert_allclose(e.bin_edges.numpy(), t.bin_edges.numpy())
    idx = [0, 1, 1, 3]
    assert ember.bincount(ember.tensor(idx)).tolist() == [1, 2, 0, 1]
    assert ember.bincount(ember.tensor(idx), minlength=6).shape == (6,)
    w = ember.bincount(ember.tensor(idx), ember.tensor([0.5, 1.0, 1.0, 2.0]))
    assert w.dtype == ember.float32 and w.tolist() == [0.5, 2.0, 0.0, 2.0]
    with pytest.raises(RuntimeError, match="non-negative integral"):
        ember.bincount(ember.tensor([-1, 2]))


def test_cov_corrcoef_renorm_match_torch(torch_mod):
    a = arrays_for([(3, 6)], seed=6)[0]
    compare_with_torch(lambda m, x: m.cov(x), [a])
    compare_with_torch(lambda m, x: m.cov(x, correction=0), [a])
    compare_with_torch(lambda m, x: m.corrcoef(x), [a])
    compare_with_torch(lambda m, x: m.renorm(x, 2, 0, 1.0), [a])
    compare_with_torch(lambda m, x: x.renorm(1, 1, 0.5), [a])
    fw, aw = np.array([1, 2, 1, 3, 1, 1]), np.linspace(0.1, 1.0, 6)
    e = ember.cov(ember.tensor(a), fweights=ember.tensor(fw), aweights=ember.tensor(aw))
    t = torch_mod.cov(
        torch_mod.tensor(a), fweights=torch_mod.tensor(fw), aweights=torch_mod.tensor(aw)
    )
    np.testing.assert_allclose(e.numpy(), t.numpy())
    check_gradients(lambda m, x: m.cov(x), [a[:, :4]])


def test_cov_of_one_variable_is_zero_dimensional():
    c = ember.cov(ember.tensor([[1.0, 2.0, 4.0]]))
    assert c.shape == () and c.item() == pytest.approx(7 / 3)
    r = ember.corrcoef(ember.tensor([[1.0, 2.0, 4.0]]))
    assert r.shape == () and r.item() == 1.0
    x = ember.tensor([[1.0, 2.0, 4.0]], requires_grad=True)
    ember.cov(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[-4 / 3, -1 / 3, 5 / 3]], rtol=1e-6)


def test_cov_dtype_follows_torch_promotion_of_weights_and_integers():
    half = ember.tensor([1.0, 3.0], dtype=ember.float16)
    assert ember.cov(half).dtype == ember.float16
    weighted = ember.cov(half, correction=0, aweights=ember.tensor([1.0, 3.0]))
    assert weighted.dtype == ember.float32 and weighted.item() == pytest.approx(0.75)
    assert ember.cov(ember.tensor([1.0, 3.0], dtype=ember.bfloat16)).dtype == ember.bfloat16
    ints = ember.cov(ember.tensor([[1, 2], [3, 5]]), fweights=ember.tensor([1, 2]))
    assert ints.dtype == ember.float32
    np.testing.assert_allclose(ints.numpy(), [[1 / 3, 2 / 3], [2 / 3, 4 / 3]], rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fweights": ember.ones(5, 5, dtype=ember.int64)}, "fweights to have one or fewer"),
        ({"aweights": ember.ones(5, 5)}, "aweights to have one or fewer"),
        ({"fweights": ember.ones(5)}, "fweights to have integral dtype"),
        ({"aweights": ember.ones(5, dtype=ember.int64)}, "aweights to have floating point"),
        ({"fweights": ember.ones(1, dtype=ember.int64)}, "fweights to have the same numel"),
        ({"aweights": ember.ones(2)}, "aweights to have the same numel"),
        ({"fweights": -ember.ones(5, dtype=ember.int64)}, "fweights cannot be negative"),
        ({"aweights": -ember.ones(5)}, "aweights cannot be negative"),
        ({"aweights": ember.zeros(5)}, "weights sum to zero"),
    ],
)
def test_cov_rejects_bad_weights_with_torch_messages(kwargs, message):
    with pytest.raises(RuntimeError, match=message):
        ember.cov(ember.arange(5.0), **kwargs)


def test_cov_rejects_three_dimensions_and_bool():
    with pytest.raises(RuntimeError, match="two or fewer dimensions but got an input with 3"):
        ember.cov(ember.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="bool dtype is not supported"):
        ember.cov(ember.tensor([True, False]))
    with pytest.raises(RuntimeError, match="corrcoef.*two or fewer"):
        ember.corrcoef(ember.ones(2, 2, 2))


def test_corrcoef_of_complex_rows_keeps_the_imaginary_part():
    x = ember.tensor([[1 + 1j, 2, 3j], [3, 5j, 1 - 2j]])
    r = ember.corrcoef(x)
    assert r.dtype == ember.complex64
    np.testing.assert_allclose(r.numpy()[0, 0], 1.0, atol=1e-6)
    assert abs(r.numpy()[0, 1].imag) > 0.1


def test_zero_size_reductions():
    assert ember.nansum(ember.zeros(0)).item() == 0.0
    with pytest.raises(IndexError, match="non-zero size"):
        ember.median(ember.zeros(2, 0), 1)


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_of_all_elements_splits_the_gradient_among_ties_like_torch(torch_mod, name):
    nan = float("nan")
    for data in ([1.0, 2.0, 2.0, 2.0, 3.0], [2.0, 2.0, 1.0, 5.0], [1.0, 2.0, 2.0, nan, 3.0]):
        fn = lambda m, x, name=name: getattr(m, name)(x)  # noqa: E731
        compare_with_torch(fn, [np.array(data)])
    x = ember.tensor([1.0, 2.0, 2.0, 2.0, 3.0], requires_grad=True)
    ember.median(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [0, 1 / 3, 1 / 3, 1 / 3, 0])
    assert ember.median(x).grad_fn.name() == "MedianBackward0"


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", ["linear", "lower", "midpoint"])
def test_quantile_gradient_reaches_q_through_the_linear_weight(torch_mod, name, interpolation):
    nan = float("nan")
    rows = np.array([[1.0, 4.0, 2.0, 8.0], [3.0, nan, 1.0, 0.0], [nan, nan, nan, nan]])
    for data, q, dim in (
        (rows[0], np.array([0.3, 0.5]), None),
        (rows[0], np.array(0.3), None),
        (rows, np.array([0.0, 0.7, 1.0]), 1),
    ):
        fn = lambda m, x, p, dim=dim: getattr(m, name)(  # noqa: E731
            x, p, dim=dim, interpolation=interpolation
        )
        compare_with_torch(fn, [data, q])
    if interpolation == "linear":
        check_gradients(
            lambda m, x, p: getattr(m, name)(x, p, dim=1),
            [np.array([[1.0, 4.0, 2.0, 8.0], [3.0, 5.0, 1.0, 0.0]]), np.array([0.3, 0.55])],
        )


def test_hash_tensor_xors_the_64_bit_patterns_like_torch(torch_mod):
    values = [[1.0, -0.0, 2.5], [3.0, 4.0, 1e-3]]
    for dtype in ("float32", "float16", "bfloat16", "int8", "uint8", "bool", "int64"):
        for kwargs in ({}, {"dim": 0}, {"dim": (0, 1)}, {"dim": 1, "keepdim": True}):
            got = ember.hash_tensor(ember.tensor(values).to(getattr(ember, dtype)), **kwargs)
            want = torch_mod.hash_tensor(
                torch_mod.tensor(values).to(getattr(torch_mod, dtype)), **kwargs
            )
            assert got.dtype == ember.uint64 and got.shape == tuple(want.shape)
            assert got.tolist() == want.tolist(), (dtype, kwargs)
    nan = [float("nan"), float("-inf")]
    assert (
        ember.hash_tensor(ember.tensor(nan)).item()
        == torch_mod.hash_tensor(torch_mod.tensor(nan)).item()
    )
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    assert x.hash_tensor().item() == 0x7FF0000000000000 and not x.hash_tensor().requires_grad


def test_hash_tensor_refusals_are_torchs():
    with pytest.raises(RuntimeError, match="Unknown hash_tensor mode: 1"):
        ember.hash_tensor(ember.ones(2), mode=1)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        ember.hash_tensor(ember.zeros(0, 3))
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        ember.hash_tensor(ember.zeros(0, 3), 0)
    assert ember.hash_tensor(ember.zeros(0, 3), 1).shape == (0,)
    with pytest.raises(NotImplementedError, match="xor_sum_cpu"):
        ember.hash_tensor(ember.ones(2, dtype=ember.complex64))


def test_bfloat16_histc_frexp_and_logit_keep_torchs_dtypes(torch_mod):
    values = [0.1, 0.25, 0.7, 0.9, 0.9]
    for m in (ember, torch_mod):
        x = m.tensor(values, dtype=m.bfloat16)
        h, (mantissa, exponent), z = m.histc(x, 4, 0, 1), m.frexp(x), m.logit(x, 0.2)
        assert [str(t.dtype).split(".")[1] for t in (h, mantissa, exponent, z)] == [
            "bfloat16",
            "bfloat16",
            "int32",
            "bfloat16",
        ]
        if m is ember:
            ours = [t.float().tolist() for t in (h, mantissa, exponent)], z.float().numpy()
        else:
            assert ours[0] == [t.float().tolist() for t in (h, mantissa, exponent)]
            # torch rounds logit's intermediates to bfloat16: within two of its ulps
            np.testing.assert_allclose(ours[1], z.float().numpy(), rtol=2 * 2**-8)


def test_histogram_weights_accumulate_in_the_input_dtype_as_torch():
    # float32: 1e8 + 1 rounds to 1e8, so the bin sums to 0 (NumPy's float64 sum gives 1)
    x, w = ember.tensor([0.5, 0.5, 0.5]), ember.tensor([1e8, 1.0, -1e8])
    assert ember.histogram(x, 2, range=(0.0, 1.0), weight=w).hist.tolist() == [0.0, 0.0]
    wide = ember.histogram(x.double(), 2, range=(0.0, 1.0), weight=w.double())
    assert wide.hist.tolist() == [0.0, 1.0]


def test_histogram_density_counts_the_last_edge_and_skips_outside_and_nan():
    x = ember.tensor([0.0, 0.25, 1.0, 2.0, float("nan")])
    out = ember.histogram(x, 2, range=(0.0, 1.0), density=True)
    assert out.hist.dtype == ember.float32
    np.testing.assert_allclose(out.hist.numpy(), [4 / 3, 2 / 3], rtol=1e-6)


def test_logcumsumexp_of_complex_values_as_torch():
    x = ember.tensor(
        [[1 + 2j, -1 + 0.5j, 3 - 1j], [0j, complex(float("-inf"), 0), 2 + 3j]],
        dtype=ember.complex128,
    )
    torch_dim1 = [  # torch 2.13's values
        [
            1 + 2j,
            1.0183887295219523 + 1.8670723373569185j,
            2.8585738863402836 - 0.9569416058143232j,
        ],
        [0j, 0j, 1.856394780842109 + 2.977950346200897j],
    ]
    torch_dim0_row1 = [
        0.9063238361688761 + 1.6238286306222882j,
        -1 + 0.5j,
        2.787990297777198 - 1.3513459464160056j,
    ]
    np.testing.assert_allclose(np.array(ember.logcumsumexp(x, 1).tolist()), torch_dim1, rtol=1e-12)
    np.testing.assert_allclose(
        np.array(ember.logcumsumexp(x, 0).tolist()[1]), torch_dim0_row1, rtol=1e-12
    )


def test_histc_bins_as_atens_arithmetic_in_the_inputs_precision():
    # (0.6 + 1.5) * 100 / 3.5 is 59.99999 in float32: bin 59, where NumPy's float64 edges say 60
    t = ember.tensor([[0.6, -1.5], [2.0, 0.25]])
    assert ember.histc(t).nonzero().flatten().tolist() == [0, 50, 59, 99]
    assert ember.histc(t.double()).nonzero().flatten().tolist() == [0, 50, 60, 99]
    assert ember.histc(ember.tensor([1.0, 2.0]), bins=4, min=2.5, max=2.5).tolist() == [
        1.0,
        0.0,
        0.0,
        1.0,
    ]
    with pytest.raises(RuntimeError, match=r"range of \[nan, nan\] is not finite"):
        ember.histc(ember.tensor([float("nan"), 1.0]))
    with pytest.raises(RuntimeError, match=r"range of \[0, inf\] is not finite"):
        ember.histc(ember.tensor([1.0]), min=0, max=float("inf"))
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 0"):
        ember.histc(ember.tensor([1.0]), bins=0)


def test_histogram_edges_are_torchs_linspace_and_bins_agree_with_them(torch_mod):
    rng = np.random.default_rng(1)
    for trial in range(200):
        dtype = ("float32", "float64", "float16", "bfloat16")[trial % 4]
        values = np.round(rng.standard_normal(int(rng.integers(0, 40))) * 3, trial % 3)
        bins = int(rng.integers(1, 120))
        options = ({}, {"min": -1.5, "max": 2.0}, {"min": 0.5, "max": 0.5})[trial % 3]
        got, want = (
            m.histc(m.tensor(values, dtype=getattr(m, dtype)), bins, **options).float().tolist()
            for m in (ember, torch_mod)
        )
        assert got == want, (dtype, bins, options, values)
        if dtype in ("float16", "bfloat16"):
            continue
        for extra in ({}, {"range": (-1.5, 2.0)}, {"range": (1.0, 1.0)}, {"density": True}):
            weight = np.linspace(0.1, 2.0, values.size)
            (gh, ge), (th, te) = (
                m.histogram(
                    m.tensor(values, dtype=getattr(m, dtype)),
                    bins,
                    weight=m.tensor(weight, dtype=getattr(m, dtype)) if trial % 2 else None,
                    **extra,
                )
                for m in (ember, torch_mod)
            )
            assert ge.tolist() == te.tolist(), (dtype, bins, extra, values)
            np.testing.assert_allclose(gh.tolist(), th.tolist(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="min should not exceed max, but got min 3 max 1"):
        ember.histogram(ember.tensor([1.0, 2.0]), 4, range=(3.0, 1.0))
