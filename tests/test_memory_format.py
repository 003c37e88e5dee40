"""Memory formats against torch: reprs, strides of contiguous/clone/to/*_like, values, errors."""

import itertools
import pickle
import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

FORMATS = ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]


def _pair(shape, view):
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return view(ember.tensor(data)), view(torch.tensor(data))


def _views(ndim):
    yield lambda t: t
    for perm in list(itertools.permutations(range(ndim)))[1:6]:
        yield lambda t, p=perm: t.permute(*p)
    yield lambda t: t[..., ::2]
    if ndim >= 2:
        yield lambda t: t.transpose(0, 1)[:, ::2]
    if ndim == 4:
        yield lambda t: t.contiguous(memory_format=_fmt(t, "channels_last"))
        yield lambda t: t.contiguous(memory_format=_fmt(t, "channels_last"))[:, :, ::2]


def _fmt(t, name):
    module = ember if isinstance(t, ember.Tensor) else torch
    return getattr(module, name)


SHAPES = [(2, 3, 4, 5), (1, 3, 1, 2), (2, 1, 3, 1), (3, 4), (2, 3, 2, 2, 3), (4,)]


def _cases():
    for shape in SHAPES:
        for i, view in enumerate(_views(len(shape))):
            yield pytest.param(shape, view, id=f"{shape}-{i}")


def test_reprs_and_types():
    for name in FORMATS:
        f = getattr(ember, name)
        assert repr(f) == repr(getattr(torch, name)).replace("torch.", "ember.")
        assert isinstance(f, ember.memory_format)
        assert pickle.loads(pickle.dumps(f)) is f
    assert repr(ember.strided) == "ember.strided" and isinstance(ember.strided, ember.layout)
    assert isinstance(ember.sparse_coo, ember.layout)
    assert ember.zeros(2).layout is ember.strided
    assert repr(ember.zeros(2).layout) == repr(torch.zeros(2).layout).replace("torch.", "ember.")


def test_constants():
    for name in ["pi", "e", "inf"]:
        assert getattr(ember, name) == getattr(torch, name)
    assert ember.nan != ember.nan and ember.newaxis is None is torch.newaxis
    assert issubclass(ember.OutOfMemoryError, RuntimeError)
    assert issubclass(ember.AcceleratorError, RuntimeError)
    assert ember.has_lapack is torch.has_lapack and ember.has_spectral is torch.has_spectral
    assert ember.GradScaler is ember.amp.GradScaler and ember.Future is ember.futures.Future


@pytest.mark.parametrize(("shape", "view"), list(_cases()))
def test_is_contiguous_clone_contiguous_to(shape, view):
    a, b = _pair(shape, view)
    assert a.stride() == b.stride()
    for name in FORMATS:
        fa, fb = getattr(ember, name), getattr(torch, name)
        assert a.is_contiguous(memory_format=fa) == b.is_contiguous(memory_format=fb), name
        for k, call in enumerate(
            [
                lambda t, f: t.clone(memory_format=f),
                lambda t, f: t.contiguous(memory_format=f),
                lambda t, f: t.to(memory_format=f),
                lambda t, f: t.to(t.dtype, copy=True, memory_format=f),
                lambda t, f: t.to(ember.float64 if isinstance(t, ember.Tensor) else torch.float64),
                lambda t, f: (ember if isinstance(t, ember.Tensor) else torch).empty_like(
                    t, memory_format=f
                ),
                lambda t, f: (ember if isinstance(t, ember.Tensor) else torch).zeros_like(
                    t, memory_format=f
                ),
                lambda t, f: (ember if isinstance(t, ember.Tensor) else torch).full_like(
                    t, 2.0, memory_format=f
                ),
            ]
        ):
            try:
                expected = call(b, fb)
            except RuntimeError as err:
                with pytest.raises(RuntimeError, match=str(err)):
                    call(a, fa)
                continue
            got = call(a, fa)
            assert got.stride() == expected.stride(), (name, k)
            assert (got is a) == (expected is b), (name, k)
            if k != 5:  # empty_like's values are undefined
                np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 2, 4, 5), (3, 4)])
@pytest.mark.parametrize("name", FORMATS)
def test_empty_with_format(shape, name):
    try:
        expected = torch.empty(*shape, memory_format=getattr(torch, name))
    except RuntimeError as err:
        with pytest.raises(RuntimeError, match=str(err)):
            ember.empty(*shape, memory_format=getattr(ember, name))
        return
    assert ember.empty(*shape, memory_format=getattr(ember, name)).stride() == expected.stride()


def test_channels_last_errors_and_grad():
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        ember.zeros(2, 3).contiguous(memory_format=ember.channels_last)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        ember.zeros(2, 3).to(memory_format=ember.channels_last_3d)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported"):
        ember.zeros(2, 3).t().contiguous(memory_format=ember.preserve_format)
    with pytest.raises(TypeError, match="must be torch.memory_format, not str"):
        ember.zeros(2, 3).contiguous(memory_format="channels_last")
    x = ember.randn(2, 3, 4, 5, requires_grad=True)
    y = x.contiguous(memory_format=ember.channels_last)
    (y * ember.arange(120.0).reshape(2, 3, 4, 5)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.arange(120.0).reshape(2, 3, 4, 5))
    z = ember.clone(y)
    assert z.stride() == (60, 1, 15, 3) and z.grad_fn is not None


@pytest.mark.parametrize(
    ("size", "stride"),
    [
        ((2, 3), (1, 2)),
        ((2, 3), (0, 1)),
        ((2, 3, 4), (1, 8, 2)),
        ((2, 1), (5, 7)),
        ((2, 3), (-1, 1)),
    ],
)
def test_empty_strided_has_the_strides(size, stride):
    try:
        expected = torch.empty_strided(size, stride)
    except RuntimeError as err:
        with pytest.raises(RuntimeError, match=re.escape(str(err))):
            ember.empty_strided(size, stride)
        return
    got = ember.empty_strided(size, stride)
    assert got.stride() == expected.stride() and got.shape == expected.shape
    got.fill_(3.0)
    assert got.sum().item() == 3.0 * got.numel()


def test_empty_strided_rank_mismatch():
    with pytest.raises(RuntimeError, match=r"dimensionality of sizes \(2\) must match"):
        ember.empty_strided((2, 3), (3,))
