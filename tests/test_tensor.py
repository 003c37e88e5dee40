import copy

import numpy as np
import pytest

import ember


def test_creation_dtypes_follow_torch(torch_mod):
    cases = [
        lambda m: m.tensor([1, 2]),
        lambda m: m.tensor([1.0, 2]),
        lambda m: m.tensor([True]),
        lambda m: m.tensor(3),
        lambda m: m.tensor(np.array([1.0], dtype=np.float64)),
        lambda m: m.tensor(np.array([1], dtype=np.int32)),
        lambda m: m.zeros(2, 3),
        lambda m: m.ones((2,), dtype=m.int64),
        lambda m: m.full((2,), 7),
        lambda m: m.full((2,), 1.5),
        lambda m: m.full((2,), True),
        lambda m: m.arange(5),
        lambda m: m.arange(0, 1, 0.25),
        lambda m: m.arange(1, 4, dtype=m.float64),
        lambda m: m.linspace(0, 1, 5),
        lambda m: m.logspace(0, 2, 3),
        lambda m: m.eye(3, 2),
        lambda m: m.empty(2, 2),
        lambda m: m.zeros_like(m.tensor([1, 2])),
        lambda m: m.ones_like(m.tensor([1.0]), dtype=m.float64),
        lambda m: m.full_like(m.tensor([1, 2]), 3),
        lambda m: m.tensor([[1, 2], [3, 4]]).float(),
        lambda m: m.tensor([]),
        lambda m: m.randint(0, 5, (3,)),
        lambda m: m.randperm(4),
        lambda m: m.rand(2),
        lambda m: m.randn(2, dtype=m.float64),
    ]
    for make in cases:
        e, t = make(ember), make(torch_mod)
        assert e.dtype.name == str(t.dtype).split(".")[-1]
        assert tuple(e.shape) == tuple(t.shape)
        if "rand" not in str(make.__code__.co_names) and "empty" not in make.__code__.co_names:
            np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_from_numpy_shares_memory_and_as_tensor_avoids_copy():
    a = np.arange(4.0)
    t = ember.from_numpy(a)
    a[0] = 10
    assert t[0].item() == 10
    t[1] = 20
    assert a[1] == 20
    assert ember.as_tensor(a).numpy() is a
    c = ember.tensor(a)
    a[2] = -1
    assert c[2].item() == 2.0


def test_dlpack_round_trip_with_numpy_and_torch(torch_mod):
    a = np.arange(6.0).reshape(2, 3)
    t = ember.from_dlpack(a)
    a[0, 0] = 5
    assert t[0, 0].item() == 5
    back = np.from_dlpack(t)
    back[1, 1] = -3
    assert t[1, 1].item() == -3
    tt = torch_mod.from_dlpack(t)
    tt[0, 1] = 9
    assert t[0, 1].item() == 9
    e = ember.from_dlpack(torch_mod.arange(3.0))
    assert e.tolist() == [0.0, 1.0, 2.0]


def test_attributes():
    x = ember.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and x.size() == ember.Size([2, 3, 4]) and x.size(-1) == 4
    assert x.dim() == x.ndim == 3 and x.numel() == 24 and len(x) == 2
    assert x.element_size() == 4 and x.nbytes == 96
    assert x.stride() == (12, 4, 1) and x.transpose(0, 2).stride() == (1, 4, 12)
    assert x.is_contiguous() and not x.transpose(0, 1).is_contiguous()
    assert x.device == ember.device("cpu") and str(x.device) == "cpu"
    assert x.is_leaf and x.grad_fn is None and not x.requires_grad
    assert repr(x.shape) == "ember.Size([2, 3, 4])"
    assert x.T.shape == (4, 3, 2) and x.mT.shape == (2, 4, 3)


def test_conversions():
    x = ember.tensor([[1.5, 2.0]])
    assert x.tolist() == [[1.5, 2.0]]
    assert float(x[0, 0]) == 1.5 and int(x[0, 1]) == 2 and x[0, 0].item() == 1.5
    assert bool(ember.tensor([1])) is True
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value"):
        bool(x)
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted"):
        x.item()
    assert np.asarray(x).dtype == np.float32
    assert x.long().dtype == ember.int64 and x.double().dtype == ember.float64
    assert x.half().dtype == ember.float16 and x.bool().dtype == ember.bool
    assert x.int().dtype == ember.int32 and x.to(ember.float64).dtype == ember.float64
    assert x.type() == "ember.FloatTensor" and x.type(ember.int64).dtype == ember.int64
    assert x.to("cpu") is x and x.cpu() is x
    assert x.to(ember.zeros(1, dtype=ember.float64)).dtype == ember.float64
    assert [list(r.shape) for r in ember.ones(2, 3)] == [[3], [3]]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ember.tensor(1.0))


def test_bfloat16_through_ml_dtypes():
    x = ember.tensor([1.0, 2.5], dtype=ember.bfloat16)
    assert x.dtype == ember.bfloat16 and x.element_size() == 2
    np.testing.assert_allclose((x * 2).float().numpy(), [2.0, 5.0])
    assert "dtype=ember.bfloat16" in repr(x)


def test_numpy_of_tensor_requiring_grad_raises_like_torch():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]


def test_repr_matches_torch(torch_mod):
    cases = [
        lambda m: m.tensor([1.0, 2.0]),
        lambda m: m.tensor([1.0, 2.0], requires_grad=True),
        lambda m: m.tensor([1.5, -2.25]) * m.tensor([1.0, 2.0], requires_grad=True),
        lambda m: m.tensor([[1, 2], [3, 40]]),
        lambda m: m.tensor(3.5),
        lambda m: m.tensor([True, False]),
        lambda m: m.tensor([1.0], dtype=m.float64),
        lambda m: m.tensor([1, 2], dtype=m.int32),
        lambda m: m.tensor([]),
        lambda m: m.zeros(0, 3),
        lambda m: m.tensor([1e-5, 1.0]),
        lambda m: m.tensor([1e9, 1.0]),
        lambda m: m.tensor([[0.1234567, 2.0], [3.0, 4.0]]),
        lambda m: m.tensor([float("nan"), float("inf"), 1.0]),
        lambda m: m.arange(12.0).reshape(2, 2, 3),
        lambda m: (m.tensor([1.0, 2.0], requires_grad=True) + 1).sum(),
    ]
    for make in cases:
        assert repr(make(ember)) == repr(make(torch_mod)).replace("torch.", "ember.")


def test_deepcopy_of_leaf_and_error_for_non_leaf():
    x = ember.ones(2, requires_grad=True)
    y = copy.deepcopy(x)
    assert y is not x and y.requires_grad and y.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(x * 2)


def test_default_dtype_switch():
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1.0]).dtype == ember.float64
        assert ember.tensor([1]).dtype == ember.int64
        assert (ember.tensor([1, 2]) / 2).dtype == ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(TypeError):
        ember.set_default_dtype(ember.int64)


def test_manual_seed_reproducible_and_generator():
    ember.manual_seed(3)
    a = ember.randn(4)
    ember.manual_seed(3)
    b = ember.randn(4)
    assert a.tolist() == b.tolist()
    g = ember.Generator().manual_seed(7)
    c = ember.rand(3, generator=g)
    state = g.get_state()
    d = ember.rand(3, generator=g)
    g.set_state(state)
    assert ember.rand(3, generator=g).tolist() == d.tolist()
    assert c.tolist() != d.tolist()
    assert g.initial_seed() == 7


def test_random_distributions_have_the_right_moments():
    ember.manual_seed(0)
    n = ember.normal(2.0, 3.0, (20000,))
    assert abs(n.mean().item() - 2.0) < 0.1 and abs(n.std().item() - 3.0) < 0.1
    u = ember.empty(20000).uniform_(-1, 1)
    assert -1 <= u.min().item() and u.max().item() < 1 and abs(u.mean().item()) < 0.03
    r = ember.randint(3, 6, (1000,))
    assert set(r.tolist()) == {3, 4, 5}
    p = ember.randperm(10)
    assert sorted(p.tolist()) == list(range(10))
    m = ember.multinomial(ember.tensor([0.0, 1.0, 0.0]), 4, replacement=True)
    assert m.tolist() == [1, 1, 1, 1]
    b = ember.bernoulli(ember.full((1000,), 0.25))
    assert 0.2 < b.mean().item() < 0.3


def test_tensor_constructor_like_torch():
    assert ember.Tensor([1, 2]).dtype == ember.float32
    assert ember.Tensor(2, 3).shape == (2, 3)


def test_negative_size_is_an_error():
    with pytest.raises(RuntimeError, match="Dimension size must be non-negative"):
        ember.zeros(2, -1)


def test_to_reads_non_blocking_and_copy_positionally_like_torch(torch_mod):
    for m in (ember, torch_mod):
        x = m.arange(6.0)
        assert x.to("cpu", m.float64, False, True).dtype == m.float64
        assert x.to(m.float64, False, True).dtype == m.float64
        assert x.to(m.device("cpu"), m.int32, True).dtype == m.int32
        assert x.to("cpu", m.float32, False, True) is not x  # copy=True
        assert x.to("cpu", m.float32, False, False) is x
        assert x.to(x.double(), False, True).dtype == m.float64


def test_rdiv_is_reflected_true_division(torch_mod):
    for m in (ember, torch_mod):
        assert m.tensor([1.0, 2.0]).__rdiv__(2).tolist() == [2.0, 1.0]
        out = m.tensor([1, 2]).__rdiv__(2)
        assert out.tolist() == [2.0, 1.0] and out.dtype == m.float32
