"""einops' functions on ember tensors (ember._einops.backend), against einops on torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

einops = pytest.importorskip("einops")

X = np.arange(2 * 3 * 4 * 6, dtype=np.float32).reshape(2, 3, 4, 6) / 10


def _both(torch_mod):
    """(ember tensor, torch tensor or None) of X, both requiring grad."""
    ours = ember.tensor(X, requires_grad=True)
    theirs = None if torch_mod is None else torch_mod.tensor(X, requires_grad=True)
    return ours, theirs


@pytest.fixture
def torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch


CASES = [
    (einops.rearrange, ("b c h w -> b (c h w)",), {}),
    (einops.rearrange, ("b c (h p1) (w p2) -> b (h w) (p1 p2 c)",), {"p1": 2, "p2": 3}),
    (einops.rearrange, ("b c h w -> w h c b",), {}),
    (einops.reduce, ("b c (h 2) (w 2) -> b c h w", "max"), {}),
    (einops.reduce, ("b c h w -> b c", "mean"), {}),
    (einops.reduce, ("b c h w -> c", "sum"), {}),
    (einops.reduce, ("b c h w -> b h", "min"), {}),
    (einops.reduce, ("b c h w -> b w", "prod"), {}),
    (einops.repeat, ("b c h w -> b c (h 2) w r",), {"r": 3}),
    (einops.repeat, ("b c h w -> (b n) c h w",), {"n": 2}),
]


@pytest.mark.parametrize("fn, args, kwargs", CASES, ids=lambda c: getattr(c, "__name__", None))
def test_operations_give_torchs_values_and_gradients(fn, args, kwargs, torch_or_none):
    ours, theirs = _both(torch_or_none)
    out = fn(ours, *args, **kwargs)
    assert isinstance(out, ember.Tensor)
    weights = np.random.default_rng(0).standard_normal(tuple(out.shape)).astype(np.float32)
    (out * ember.tensor(weights)).sum().backward()
    if theirs is None:
        expected = fn(X, *args, **kwargs)  # einops' NumPy backend: the same values
        np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-5)
        assert ours.grad is not None and ours.grad.shape == ours.shape
        return
    expected = fn(theirs, *args, **kwargs)
    (expected * torch_or_none.tensor(weights)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_rearrange_is_a_view_and_repeat_expands():
    x = ember.arange(6.0).reshape(2, 3)
    assert einops.rearrange(x, "a b -> b a").tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert einops.repeat(ember.tensor([1.0, 2.0]), "a -> a r", r=2).tolist() == [
        [1.0, 1.0],
        [2.0, 2.0],
    ]


def test_rearrange_of_a_list_of_tensors_stacks_them():
    parts = [ember.full((2,), float(i)) for i in range(3)]
    out = einops.rearrange(parts, "n d -> d n")
    assert out.tolist() == [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]


def test_einsum_pack_unpack_and_parse_shape(torch_or_none):
    a = ember.tensor(X[0])
    b = ember.tensor(X[1])
    out = einops.einsum(a, b, "c h w, c h w -> c")
    np.testing.assert_allclose(out.numpy(), np.einsum("chw,chw->c", X[0], X[1]), rtol=1e-5)
    packed, shapes = einops.pack([a, ember.ones(3, 5)], "c *")
    assert tuple(packed.shape) == (3, 29) and shapes == [(4, 6), (5,)]
    first, second = einops.unpack(packed, shapes, "c *")
    np.testing.assert_array_equal(first.numpy(), X[0])
    assert second.tolist() == [[1.0] * 5] * 3
    assert einops.parse_shape(a, "c h w") == {"c": 3, "h": 4, "w": 6}
    assert isinstance(einops.asnumpy(a), np.ndarray)
    if torch_or_none is not None:
        theirs, _ = einops.pack([torch_or_none.tensor(X[0]), torch_or_none.ones(3, 5)], "c *")
        np.testing.assert_array_equal(packed.numpy(), theirs.numpy())


def test_a_wrong_pattern_raises_einops_error():
    with pytest.raises(einops.EinopsError, match="Shape mismatch"):
        einops.rearrange(ember.zeros(2, 3), "(a b) c -> a b c", a=3)


def test_the_backend_is_embers():
    from einops._backends import get_backend

    backend = get_backend(ember.zeros(1))
    assert backend.framework_name == "ember"
    assert backend.layers().Rearrange.__module__ == "ember._einops.layers"
