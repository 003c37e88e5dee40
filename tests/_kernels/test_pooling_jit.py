"""The compiled 2-D max pooling (``ember._kernels.pooling_jit``) against the NumPy path and
PyTorch: values, indices (ties, NaN, -inf, padding, ceil_mode, dilation) and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember._kernels import jit
from ember.autograd import gradcheck, gradgradcheck

pytest.importorskip("numba")

F = ember.nn.functional

# (shape, kernel, stride, padding, dilation, ceil_mode)
GEOMETRIES = [
    ((2, 3, 8, 8), 2, None, 0, 1, False),
    ((2, 3, 9, 7), 2, None, 0, 1, False),  # a leftover row and column
    ((2, 3, 9, 7), 2, None, 0, 1, True),
    ((1, 4, 11, 10), 3, 2, 1, 1, False),  # ResNet's stem pooling: overlapping windows
    ((1, 4, 11, 10), 3, 2, 1, 1, True),
    ((2, 2, 10, 9), (3, 2), (1, 2), (1, 0), (2, 1), False),
    ((2, 2, 10, 9), (2, 3), (3, 1), (1, 1), (1, 2), True),
    ((3, 1, 5, 13), (1, 4), None, 0, 1, False),
    ((1, 2, 6, 6), 3, 1, 1, 1, False),
]


@pytest.fixture(autouse=True)
def kernels_for_small_arrays(monkeypatch):
    """The kernels for these small test arrays too (they start at jit.MIN_WORK elements)."""
    monkeypatch.setattr(jit, "MIN_WORK", 1)


def _pool(x_np, geometry, dtype, disabled=False, transposed=False):
    shape, k, s, p, d, ceil = geometry
    data = x_np.astype(dtype)
    if transposed:  # the same values, as a non-contiguous view
        x = ember.tensor(np.ascontiguousarray(data.transpose(0, 1, 3, 2))).transpose(2, 3)
    else:
        x = ember.tensor(data)
    x.requires_grad_(True)

    def run():
        out, idx = F.max_pool2d(x, k, s, p, d, ceil, return_indices=True)
        grad_out = ember.tensor(
            np.random.default_rng(4).standard_normal(tuple(out.shape)).astype(dtype)
        )
        (out * grad_out).sum().backward()
        return out.detach().numpy(), idx.numpy(), x.grad.numpy()

    if disabled:
        with jit.disabled():
            return run()
    return run()


def _inputs(shape, kind):
    rng = np.random.default_rng(sum(shape))
    if kind == "random":
        return rng.standard_normal(shape)
    if kind == "ties":  # few distinct values: first maximum wins
        return rng.integers(0, 3, shape).astype(float)
    if kind == "nan":
        x = rng.standard_normal(shape)
        x[rng.random(shape) < 0.2] = np.nan
        return x
    x = np.full(shape, -np.inf)  # -inf windows keep their first element inside the input
    x[rng.random(shape) < 0.1] = 1.0
    return x


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("kind", ["random", "ties", "nan", "-inf"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernel_matches_numpy_path(geometry, kind, dtype):
    x = _inputs(geometry[0], kind)
    got = _pool(x, geometry, dtype)
    want = _pool(x, geometry, dtype, disabled=True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert got[0].dtype == np.dtype(dtype) and got[1].dtype == np.int64


@pytest.mark.parametrize("geometry", GEOMETRIES[:4])
def test_non_contiguous_input(geometry):
    x = _inputs(geometry[0], "random")
    for a, b in zip(_pool(x, geometry, "float32", transposed=True), _pool(x, geometry, "float32")):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("kind", ["random", "ties", "nan", "-inf"])
def test_kernel_matches_torch(geometry, kind):
    torch = pytest.importorskip("torch")
    shape, k, s, p, d, ceil = geometry
    x = _inputs(shape, kind)
    values, index, grad = _pool(x, geometry, "float64")
    xt = torch.tensor(x, requires_grad=True)
    out, idx = torch.nn.functional.max_pool2d(xt, k, s, p, d, ceil, return_indices=True)
    grad_out = np.random.default_rng(4).standard_normal(tuple(out.shape))
    (out * torch.tensor(grad_out)).sum().backward()
    np.testing.assert_array_equal(values, out.detach().numpy())
    np.testing.assert_array_equal(index, idx.numpy())
    np.testing.assert_array_equal(grad, xt.grad.numpy())


def test_gradients_first_and_second_order():
    rng = np.random.default_rng(0)
    for shape, k, s, p, d, ceil in GEOMETRIES[:6]:
        # distinct values: the maximum does not move under gradcheck's perturbation
        x = rng.permutation(np.prod(shape)).reshape(shape) / 7.0
        x = ember.tensor(x, requires_grad=True)

        def f(x, k=k, s=s, p=p, d=d, ceil=ceil):
            return F.max_pool2d(x, k, s, p, d, ceil)

        assert gradcheck(f, (x,))
        assert gradgradcheck(f, (x,))


def test_unbatched_and_module():
    x = np.random.default_rng(1).standard_normal((3, 10, 10)).astype("float32")
    got = ember.nn.MaxPool2d(2)(ember.tensor(x))
    with jit.disabled():
        want = ember.nn.MaxPool2d(2)(ember.tensor(x))
    assert got.shape == (3, 5, 5)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.filterwarnings("ignore:ember.compile")
def test_compiled_step_replays_the_kernel():
    x = ember.tensor(np.random.default_rng(2).standard_normal((2, 3, 9, 9)).astype("float32"))

    def run(compiled: bool):
        ember.manual_seed(0)
        model = ember.nn.Sequential(ember.nn.Conv2d(3, 4, 1), ember.nn.MaxPool2d(3, 2, 1))
        opt = ember.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            return loss

        fn = ember.compile(step) if compiled else step
        losses = [float(fn(x)) for _ in range(4)]
        return losses, model[0].weight.detach().numpy().copy()

    compiled = run(True)
    with jit.disabled():
        eager = run(False)
    assert compiled[0] == eager[0]
    np.testing.assert_array_equal(compiled[1], eager[1])


# (shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
AVERAGES = [
    ((2, 3, 8, 8), 2, None, 0, False, True, None),
    ((2, 3, 9, 7), 3, 2, 1, True, True, None),
    ((2, 3, 9, 7), 3, 2, 1, True, False, None),
    ((1, 2, 10, 9), (3, 2), (1, 2), (1, 0), False, False, None),
    ((1, 2, 10, 9), (2, 3), (3, 1), (1, 1), True, True, 3),
    ((3, 1, 5, 13), (1, 4), None, 0, True, False, None),
]


def _average(x_np, case, dtype, m=ember, disabled=False):
    shape, k, s, p, ceil, count_pad, divisor = case
    x = m.tensor(x_np.astype(dtype), requires_grad=True)

    def run():
        y = m.nn.functional.avg_pool2d(x, k, s, p, ceil, count_pad, divisor)
        grad_out = np.random.default_rng(4).standard_normal(tuple(y.shape)).astype(dtype)
        (y * m.tensor(grad_out)).sum().backward()
        return y.detach().numpy(), x.grad.numpy()

    if disabled:
        with jit.disabled():
            return run()
    return run()


@pytest.mark.parametrize("case", AVERAGES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_average_kernel_matches_torch_to_the_bit_and_the_numpy_path(case, dtype):
    x = np.random.default_rng(5).standard_normal(case[0])
    got = _average(x, case, dtype)
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12}
    for a, b in zip(got, _average(x, case, dtype, disabled=True)):  # x·(1/count) summed there
        np.testing.assert_allclose(a, b, **tolerance)
    torch = pytest.importorskip("torch")
    for a, b in zip(got, _average(x, case, dtype, m=torch)):
        np.testing.assert_array_equal(a, b)


def test_average_kernel_gradients_and_node_names():
    rng = np.random.default_rng(6)
    for shape, k, s, p, ceil, count_pad, divisor in AVERAGES:
        x = ember.tensor(rng.standard_normal(shape), requires_grad=True)

        def f(x, k=k, s=s, p=p, ceil=ceil, count_pad=count_pad, divisor=divisor):
            return F.avg_pool2d(x, k, s, p, ceil, count_pad, divisor)

        assert f(x).grad_fn.name() == "AvgPool2DBackward0"
        assert gradcheck(f, (x,))
        assert gradgradcheck(f, (x,))


def test_average_of_a_non_contiguous_input_and_divisor_zero():
    x = np.random.default_rng(7).standard_normal((2, 3, 9, 8)).astype("float32")
    view = ember.tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2))).transpose(2, 3)
    np.testing.assert_array_equal(
        F.avg_pool2d(view, 3, 2, 1).numpy(), F.avg_pool2d(ember.tensor(x), 3, 2, 1).numpy()
    )
    for disabled in (False, True):
        with pytest.raises(RuntimeError, match="divisor must be not zero"):
            if disabled:
                with jit.disabled():
                    F.avg_pool2d(view, 2, divisor_override=0)
            else:
                F.avg_pool2d(view, 2, divisor_override=0)


@pytest.mark.parametrize("shape,size", [((4, 3, 8, 8), (2, 2)), ((2, 5, 6, 9), (3, 1))])
def test_adaptive_average_over_tiling_windows_is_the_kernel(shape, size):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(8).standard_normal(shape).astype("float32")
    results = []
    for m in (ember, torch):
        xt = m.tensor(x, requires_grad=True)
        y = m.nn.functional.adaptive_avg_pool2d(xt, size)
        grad_out = np.random.default_rng(9).standard_normal(tuple(y.shape)).astype("float32")
        (y * m.tensor(grad_out)).sum().backward()
        name = y.grad_fn.name() if m is ember else type(y.grad_fn).__name__
        results.append((y.detach().numpy(), xt.grad.numpy(), name))
    (got, got_grad, got_name), (want, want_grad, want_name) = results
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_grad, want_grad)
    assert got_name == want_name == "AdaptiveAvgPool2DBackward0"
