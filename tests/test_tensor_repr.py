"""Printing large tensors: summarised as PyTorch prints them, reading only the edge items."""

import tracemalloc

import numpy as np
import pytest

import ember

EDGE_CASES = [
    (1001,),
    (2000,),
    (10, 101),
    (40, 40),
    (3, 400),
    (400, 3),
    (11, 11, 11),
    (6, 6, 6, 6),
    (7, 6, 6, 6),
    (2, 3, 200),
    (1, 1, 2000),
    (2000, 1),
    (8, 9, 10, 3),
]

VALUE_KINDS = {
    "normal": lambda rng, shape: rng.standard_normal(shape),
    "integral": lambda rng, shape: rng.integers(-50, 50, shape).astype(float),
    "huge": lambda rng, shape: rng.standard_normal(shape) * 1e9,
    "tiny": lambda rng, shape: rng.standard_normal(shape) * 1e-6,
    "nan_and_spread": lambda rng, shape: np.where(
        rng.random(shape) < 0.1,
        np.nan,
        rng.standard_normal(shape) * 10.0 ** rng.integers(-5, 5, shape),
    ),
    "inf": lambda rng, shape: np.where(rng.random(shape) < 0.3, np.inf, rng.standard_normal(shape)),
}

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]


def _both(torch_mod, array, dtype_name):
    return (
        ember.tensor(array, dtype=getattr(ember, dtype_name)),
        torch_mod.tensor(array, dtype=getattr(torch_mod, dtype_name)),
    )


@pytest.mark.parametrize("shape", EDGE_CASES, ids=str)
@pytest.mark.parametrize("kind", sorted(VALUE_KINDS))
def test_summarised_float_repr_matches_torch(shape, kind, torch_mod):
    rng = np.random.default_rng([*shape, sorted(VALUE_KINDS).index(kind)])
    values = VALUE_KINDS[kind](rng, shape)
    for dtype_name in ("float32", "float64", "float16", "bfloat16"):
        ours, theirs = _both(torch_mod, values, dtype_name)
        assert repr(ours) == repr(theirs).replace("torch.", "ember.")


@pytest.mark.parametrize("shape", EDGE_CASES, ids=str)
def test_summarised_integer_bool_and_complex_repr_matches_torch(shape, torch_mod):
    rng = np.random.default_rng(7)
    integers = rng.integers(-100, 100, shape)
    for dtype_name in ("int64", "int32", "int8", "bool"):
        ours, theirs = _both(torch_mod, integers, dtype_name)
        assert repr(ours) == repr(theirs).replace("torch.", "ember.")
    ours, theirs = _both(torch_mod, np.abs(integers), "uint8")
    assert repr(ours) == repr(theirs).replace("torch.", "ember.")
    complex_values = rng.standard_normal(shape) + 1j * rng.standard_normal(shape) * 100
    for dtype_name in ("complex64", "complex128"):
        ours, theirs = _both(torch_mod, complex_values, dtype_name)
        assert repr(ours) == repr(theirs).replace("torch.", "ember.")


def test_summarised_views_and_grad_suffixes_match_torch(torch_mod):
    base = np.arange(15000, dtype=np.float32).reshape(5000, 3)
    ours, theirs = ember.tensor(base), torch_mod.tensor(base)
    for view in (
        lambda t: t.t(),
        lambda t: t[::7],
        lambda t: t.expand(2, 5000, 3),
        lambda t: t[:, 1:],
    ):
        assert repr(view(ours)) == repr(view(theirs))
    leaf = ember.tensor(base, requires_grad=True)
    torch_leaf = torch_mod.tensor(base, requires_grad=True)
    assert repr(leaf) == repr(torch_leaf)
    assert repr(leaf * 2) == repr(torch_leaf * 2)


def test_repr_of_a_huge_expanded_view_reads_only_its_edges():
    # 10^10 logical elements over one stored float: materialising it would need 40 GB.
    huge = ember.ones(1).expand(100_000, 100_000)
    text = repr(huge)
    assert text.startswith("tensor([[1., 1., 1.,  ..., 1., 1., 1.],")
    assert text.count("\n") == 6


def test_repr_of_a_large_tensor_allocates_only_the_edges():
    x = ember.randn(2000, 2000, dtype=ember.float64)  # 32 MB
    tracemalloc.start()
    try:
        repr(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, f"repr allocated {peak} bytes"


def test_repr_of_a_large_bfloat16_tensor_converts_only_the_edges():
    x = ember.randn(2000, 2000).to(ember.bfloat16)
    tracemalloc.start()
    try:
        text = repr(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "dtype=ember.bfloat16" in text
    assert peak < 1_000_000, f"repr allocated {peak} bytes"


@pytest.mark.parametrize("dtype_name", ["int64", "float64", "bool", "int8", "complex64"])
@pytest.mark.parametrize("shape", [(0,), (0, 5), (5, 0, 2)], ids=str)
def test_empty_tensor_repr_shows_every_dtype_but_the_default_as_torch(shape, dtype_name, torch_mod):
    ours = ember.zeros(shape, dtype=getattr(ember, dtype_name))
    theirs = torch_mod.zeros(shape, dtype=getattr(torch_mod, dtype_name))
    assert repr(ours) == repr(theirs).replace("torch.", "ember.")


def test_a_suffix_past_the_line_width_starts_a_new_line_as_torch(torch_mod):
    values = [-1.2258e08, 2.1178e09, -1.1120e09, -3.7761e08, 2.0428e09]
    for make in (
        lambda m: m.tensor(values, dtype=m.float64),
        lambda m: m.tensor(values, dtype=m.float64, requires_grad=True),
        lambda m: m.tensor(values, dtype=m.float64, requires_grad=True) * 2,
        lambda m: m.tensor(values[:2], dtype=m.float64, requires_grad=True) * 2,
    ):
        assert repr(make(ember)) == repr(make(torch_mod)).replace("torch.", "ember.")


PRINT_OPTION_CASES = [
    {"precision": 2},
    {"precision": 0},
    {"threshold": 5},
    {"edgeitems": 1, "threshold": 5},
    {"edgeitems": 0, "threshold": 3},
    {"linewidth": 30},
    {"linewidth": 200, "threshold": 50},
    {"sci_mode": True},
    {"sci_mode": False},
    {"precision": 6, "sci_mode": True},
    {"profile": "short"},
    {"profile": "full"},
]
PRINTED_VALUES = [
    [1.12345, 2.5, -3.75],
    [[0.001, 20000.0], [3.0, 4.0]],
    [1e-6, 1.0],
    [0.0, 0.0],
    [float("nan"), 1.5],
    [123456789.0, 1.0],
    [[float(i * j) for i in range(20)] for j in range(30)],
]


def _printed(m, options, values):
    m.set_printoptions(**options)
    try:
        tensors = (
            m.tensor(values),
            m.tensor(values, dtype=m.float64, requires_grad=True) * 2,
            m.arange(40).reshape(4, 10),
            m.zeros(2, 0),
            m.tensor(values).to(m.complex64) * (1 + 1j),
        )
        return "\n".join(repr(t) for t in tensors).replace(m.__name__, "M")
    finally:
        m.set_printoptions(profile="default")


@pytest.mark.parametrize("options", PRINT_OPTION_CASES, ids=str)
def test_print_options_print_as_torchs(options, torch_mod):
    for values in PRINTED_VALUES:
        assert _printed(ember, options, values) == _printed(torch_mod, options, values)


def test_print_options_are_set_read_and_restored():
    assert ember._tensor_str.get_printoptions() == {
        "precision": 4,
        "threshold": 1000,
        "edgeitems": 3,
        "linewidth": 80,
        "sci_mode": None,
    }
    ember.set_printoptions(2)  # positional, as torch's
    try:
        assert repr(ember.tensor([1.12345])) == "tensor([1.12])"
        with ember._tensor_str.printoptions(precision=1, threshold=5):
            assert repr(ember.arange(10.0)) == "tensor([0., 1., 2.,  ..., 7., 8., 9.])"
            assert repr(ember.tensor([1.26])) == "tensor([1.3])"
        assert repr(ember.tensor([1.126])) == "tensor([1.13])"
        ember.set_printoptions(sci_mode=True)
        assert repr(ember.tensor([1.5, 2.0])) == "tensor([1.50e+00, 2.00e+00])"
    finally:
        ember.set_printoptions(profile="default")
    assert repr(ember.tensor([1.12345])) == "tensor([1.1235])"
    assert ember._tensor_str.PRINT_OPTS.sci_mode is None
