"""grid_sample as one fused node (src/ember/ops/grid_sample.py): its values and both gradients
against the composite of ember ops it replaced (``_composite_grid_sample``, still the formula
under ``create_graph``) and against torch, on random points, on a lattice of points exactly on
pixel centres, half-way between them and on the image's edges, on non-contiguous and empty
tensors; its graph against torch's; gradcheck and gradgradcheck."""

import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.ops.grid_sample import _composite_grid_sample
from tests import _fake_cupy
from tests.autograd._graph_programs import signature

F = ember.nn.functional
MODES = ("bilinear", "nearest", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
CASES = [
    (nd, mode, padding, corners)
    for nd in (2, 3)
    for mode in MODES
    for padding in PADDINGS
    for corners in (False, True)
    if not (nd == 3 and mode == "bicubic")  # bicubic is 4-D only
]
CASE_IDS = [
    f"{nd}d-{mode}-{padding}-{'corners' if c else 'edges'}" for nd, mode, padding, c in CASES
]
# spatial sizes whose unnormalising scales ((size - 1) / 2 with align_corners, size / 2
# without) are powers of two, so that lattice points land exactly on integers and halves
LATTICE_SIZES = {
    (2, False): (4, 8),
    (2, True): (5, 9),
    (3, False): (2, 4, 4),
    (3, True): (3, 5, 5),
}
TOLERANCES = {np.float64: (1e-10, 1e-12), np.float32: (2e-5, 2e-5)}


def _random_case(nd, seed=0):
    rng = np.random.default_rng(seed)
    if nd == 2:
        return rng.standard_normal((2, 3, 5, 6)), rng.uniform(-1.3, 1.3, (2, 4, 3, 2))
    return rng.standard_normal((2, 2, 3, 4, 3)), rng.uniform(-1.3, 1.3, (2, 3, 2, 4, 3))


def _lattice_case(nd, corners, seed=1):
    """Every grid coordinate a multiple of 1/8 (1/4 in 3-D) from -1.25 to 1.25: pixel centres,
    half-way points, the image's edges (±1) and points outside it."""
    rng = np.random.default_rng(seed)
    sizes = LATTICE_SIZES[(nd, corners)]
    step = 1 / 8 if nd == 2 else 1 / 4
    values = np.arange(-1.25, 1.25 + step / 2, step)
    mesh = np.meshgrid(*([values] * nd), indexing="ij")
    grid = np.stack(mesh, axis=-1)[None].repeat(2, axis=0)
    x = rng.standard_normal((2, 2) + sizes)
    return x, grid


def _sampled(m, x, grid, mode, padding, corners, weight, dtype):
    """(output, d(Σ output·weight)/d input, .../d grid) as NumPy arrays, by module ``m``."""
    xt = m.tensor(x.astype(dtype), requires_grad=True)
    gt = m.tensor(grid.astype(dtype), requires_grad=True)
    out = F_of(m).grid_sample(xt, gt, mode, padding, corners)
    out.backward(m.tensor(weight.astype(dtype)))
    return out.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()


def _composite(x, grid, mode, padding, corners, weight, dtype):
    xt = ember.tensor(x.astype(dtype), requires_grad=True)
    gt = ember.tensor(grid.astype(dtype), requires_grad=True)
    out = _composite_grid_sample(xt, gt, mode, padding, corners)
    out.backward(ember.tensor(weight.astype(dtype)))
    return out.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()


def F_of(m):  # noqa: N802 - torch.nn.functional or ember.nn.functional
    return m.nn.functional


def _weight(x, grid, seed=2):
    shape = x.shape[:2] + grid.shape[1:-1]
    return np.random.default_rng(seed).standard_normal(shape)


def _assert_close(got, want, dtype, names=("output", "grad_input", "grad_grid")):
    rtol, atol = TOLERANCES[dtype]
    for name, a, b in zip(names, got, want):
        assert a.dtype == b.dtype, name
        scale = max(1.0, float(np.abs(b).max(initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol * scale, err_msg=name)


@pytest.mark.parametrize("nd,mode,padding,corners", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_random_points_match_torch_and_the_composite(torch_mod, nd, mode, padding, corners, dtype):
    x, grid = _random_case(nd)
    weight = _weight(x, grid)
    got = _sampled(ember, x, grid, mode, padding, corners, weight, dtype)
    _assert_close(got, _sampled(torch_mod, x, grid, mode, padding, corners, weight, dtype), dtype)
    _assert_close(got, _composite(x, grid, mode, padding, corners, weight, dtype), dtype)


@pytest.mark.parametrize("nd,mode,padding,corners", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_points_on_pixels_halves_and_edges_match_torch(
    torch_mod, nd, mode, padding, corners, dtype
):
    x, grid = _lattice_case(nd, corners)
    weight = _weight(x, grid)
    got = _sampled(ember, x, grid, mode, padding, corners, weight, dtype)
    _assert_close(got, _sampled(torch_mod, x, grid, mode, padding, corners, weight, dtype), dtype)
    composite = _composite(x, grid, mode, padding, corners, weight, dtype)
    # the grid's gradient is one-sided at these kinks: torch's kernel (and the node) take the
    # clip's slope as zero on the borders, the composite's clamp and abs differ there
    names = (
        ("output", "grad_input", "grad_grid") if padding == "zeros" else ("output", "grad_input")
    )
    _assert_close(got[: len(names)], composite[: len(names)], dtype, names)


def test_integer_pixel_coordinates_read_the_pixels_exactly():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)
    cols, rows = np.meshgrid(np.arange(5), np.arange(4))
    # align_corners: pixel i of n sits at 2i/(n-1) - 1
    grid = np.stack([2 * cols / 4 - 1, 2 * rows / 3 - 1], axis=-1)[None].repeat(2, axis=0)
    for mode in MODES:
        out = F.grid_sample(ember.tensor(x), ember.tensor(grid), mode, align_corners=True)
        np.testing.assert_allclose(out.numpy(), x, atol=1e-12, err_msg=mode)


@pytest.mark.parametrize(
    "mode,padding",
    [
        ("bilinear", "zeros"),
        ("bicubic", "reflection"),
        ("nearest", "border"),
        ("bilinear", "reflection"),
    ],
)
def test_non_contiguous_input_and_grid_match_torch(torch_mod, mode, padding):
    rng = np.random.default_rng(3)
    x_last = rng.standard_normal((2, 5, 6, 3))  # (N, H, W, C): permuted to (N, C, H, W)
    grid_t = rng.uniform(-1.2, 1.2, (2, 3, 4, 2))  # (N, Wo, Ho, 2): transposed to (N, Ho, Wo)
    weight = rng.standard_normal((2, 3, 4, 3))
    results = []
    for m in (ember, torch_mod):
        x = m.tensor(x_last, requires_grad=True)
        grid = m.tensor(grid_t, requires_grad=True)
        xv, gv = x.permute(0, 3, 1, 2), grid.transpose(1, 2)
        assert not xv.is_contiguous() and not gv.is_contiguous()
        out = F_of(m).grid_sample(xv, gv, mode, padding, align_corners=False)
        out.backward(m.tensor(weight))
        results.append((out.detach().numpy(), x.grad.numpy(), grid.grad.numpy()))
    _assert_close(results[0], results[1], np.float64)


@pytest.mark.parametrize(
    "x_shape,grid_shape",
    [((2, 16, 32, 32), (2, 32, 32, 2)), ((1, 512, 8, 8), (1, 8, 16, 2))],
    ids=["many-pixels", "many-channels"],
)
def test_large_tensors_transposed_in_blocks_match_torch(torch_mod, x_shape, grid_shape):
    # past 2**14 elements the channels-last copies go through runs and tiles (both layouts)
    rng = np.random.default_rng(6)
    x, grid = rng.standard_normal(x_shape), rng.uniform(-1.1, 1.1, grid_shape)
    weight = _weight(x, grid)
    for mode in MODES:
        got = _sampled(ember, x, grid, mode, "zeros", False, weight, np.float32)
        want = _sampled(torch_mod, x, grid, mode, "zeros", False, weight, np.float32)
        _assert_close(got, want, np.float32)


@pytest.mark.parametrize(
    "x_shape,grid_shape",
    [
        ((0, 2, 4, 4), (0, 3, 3, 2)),  # no images
        ((1, 2, 4, 4), (1, 0, 3, 2)),  # no output points
        ((2, 0, 3, 4), (2, 3, 3, 2)),  # no channels
        ((0, 2, 2, 3, 4), (0, 1, 2, 2, 3)),
        ((1, 2, 2, 3, 4), (1, 2, 0, 2, 3)),
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_zero_size_batch_points_or_channels_match_torch(torch_mod, x_shape, grid_shape, mode):
    if mode == "bicubic" and len(x_shape) == 5:
        pytest.skip("bicubic is 4-D only")
    shapes = []
    for m in (ember, torch_mod):
        x = m.zeros(*x_shape, requires_grad=True)
        grid = m.zeros(*grid_shape, requires_grad=True)
        out = F_of(m).grid_sample(x, grid, mode, "border", align_corners=False)
        out.sum().backward()
        shapes.append((tuple(out.shape), tuple(x.grad.shape), tuple(grid.grad.shape)))
        assert not x.grad.numpy().any() and not grid.grad.numpy().any()
    assert shapes[0] == shapes[1]


def test_empty_spatial_input_raises_torchs_error(torch_mod):
    for m in (ember, torch_mod):
        with pytest.raises(RuntimeError) as raised:
            F_of(m).grid_sample(m.zeros(1, 1, 0, 3), m.zeros(1, 2, 2, 2), align_corners=False)
        assert str(raised.value) == (
            "grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
            "sizes [1, 1, 0, 3] with dimension 2 being empty"
        )


def _node_names(fn):
    return (
        type(fn).__name__,
        [None if f is None else (type(f).__name__, i) for f, i in fn.next_functions],
    )


@pytest.mark.parametrize("nd", [2, 3])
def test_one_node_with_torchs_name_edges_and_saved_fields(torch_mod, nd):
    x_shape, grid_shape = (
        ((1, 2, 3, 4), (1, 2, 2, 2)) if nd == 2 else ((1, 2, 2, 3, 4), (1, 1, 2, 2, 3))
    )
    for needs in [(True, True), (True, False), (False, True)]:
        seen = []
        for m in (ember, torch_mod):
            x = m.rand(*x_shape, requires_grad=needs[0])
            grid = m.rand(*grid_shape, requires_grad=needs[1]) * 2 - 1  # a MulBackward0 or none
            out = F_of(m).grid_sample(
                x, grid, "bicubic" if nd == 2 else "nearest", "reflection", align_corners=True
            )
            fn = out.grad_fn
            seen.append(
                (
                    _node_names(fn),
                    fn._saved_interpolation_mode,
                    fn._saved_padding_mode,
                    fn._saved_align_corners,
                )
            )
            assert fn._saved_input is x or fn._saved_input.data_ptr() == x.data_ptr()
        assert seen[0] == seen[1], needs
    name = "GridSampler2DBackward0" if nd == 2 else "GridSampler3DBackward0"
    assert seen[0][0][0] == name


def test_graph_around_the_node_matches_torchs(torch_mod):
    def program(m):
        x = m.randn(2, 3, 6, 5, requires_grad=True)
        offsets = m.randn(2, 4, 4, 2, requires_grad=True)
        out = F_of(m).grid_sample(x * 2, offsets.tanh(), align_corners=False)
        return F_of(m).grid_sample(out, offsets.detach(), "bicubic", align_corners=True).sum()

    assert signature(program(ember).grad_fn) == signature(program(torch_mod).grad_fn)


def test_no_node_without_grad_or_under_no_grad():
    x, grid = ember.rand(1, 1, 3, 3), ember.rand(1, 2, 2, 2)
    assert F.grid_sample(x, grid, align_corners=False).grad_fn is None
    with ember.no_grad():
        out = F.grid_sample(x.requires_grad_(), grid, align_corners=False)
    assert out.grad_fn is None and not out.requires_grad


# grid points kept off integer pixel positions (and half-way points: nearest's jumps), where
# the gradients jump
GRID_2D = np.array([[[[0.13, -0.41], [0.77, 0.29]], [[-0.93, 0.61], [1.1, -0.2]]]])
GRID_3D = np.array(
    [[[[[0.13, -0.41, 0.37], [0.77, 0.29, -0.62]], [[-0.93, 0.61, 0.05], [1.1, -0.2, -1.15]]]]]
)


@pytest.mark.parametrize("nd,mode,padding,corners", CASES, ids=CASE_IDS)
def test_gradcheck_and_gradgradcheck_in_float64(nd, mode, padding, corners):
    rng = np.random.default_rng(4)
    x_shape = (1, 2, 3, 4) if nd == 2 else (1, 1, 2, 3, 3)
    x = ember.tensor(rng.standard_normal(x_shape), requires_grad=True)
    grid = ember.tensor(GRID_2D if nd == 2 else GRID_3D, requires_grad=True)

    def fn(x, grid):
        return F.grid_sample(x, grid, mode, padding, corners)

    assert gradcheck(fn, (x, grid), eps=1e-6, atol=1e-6)
    assert gradgradcheck(fn, (x, grid), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_create_graph_gradients_equal_the_fused_ones_and_reach_both_inputs(mode):
    x, grid = _random_case(2)
    weight = ember.tensor(_weight(x, grid))
    fused = _sampled(ember, x, grid, mode, "reflection", False, weight.numpy(), np.float64)
    xt = ember.tensor(x, requires_grad=True)
    gt = ember.tensor(grid, requires_grad=True)
    out = F.grid_sample(xt, gt, mode, "reflection", align_corners=False)
    gx, gg = ember.autograd.grad(out, (xt, gt), weight, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), fused[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gg.detach().numpy(), fused[2], rtol=1e-10, atol=1e-12)
    assert gx.grad_fn is not None
    if mode != "nearest":  # d grad_input / d grid: the weights move with the grid
        (second,) = ember.autograd.grad((gx * gx).sum(), gt)
        assert np.abs(second.numpy()).max() > 0


def test_retain_graph_backward_twice_and_freed_graph_raises():
    x = ember.rand(1, 2, 4, 4, requires_grad=True)
    grid = ember.rand(1, 3, 3, 2, requires_grad=True)
    out = F.grid_sample(x, grid * 2 - 1, align_corners=False).sum()
    out.backward(retain_graph=True)
    first = x.grad.numpy().copy(), grid.grad.numpy().copy()
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first[0])
    np.testing.assert_allclose(grid.grad.numpy(), 2 * first[1])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


def test_input_changed_in_place_after_forward_raises():
    x = ember.rand(1, 2, 4, 4, requires_grad=True)
    y = x * 1
    out = F.grid_sample(y, ember.rand(1, 3, 3, 2), align_corners=False)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("nd", [2, 3])
def test_half_types_round_every_step_as_torch_and_the_composite(torch_mod, dtype, nd):
    x, grid = _random_case(nd)
    weight = _weight(x, grid)
    results = []
    for m in (ember, torch_mod):
        half = getattr(m, dtype)
        xt = m.tensor(x).to(half).requires_grad_()
        gt = m.tensor(grid).to(half).requires_grad_()
        out = F_of(m).grid_sample(xt, gt, "bilinear", "border", align_corners=False)
        out.backward(m.tensor(weight).to(half))
        results.append([t.float().numpy() for t in (out.detach(), xt.grad, gt.grad)])
        if m is ember:
            assert type(out.grad_fn).__name__.startswith("GridSampler") and out.dtype == half
            composite = _composite_grid_sample(
                xt.detach(), gt.detach(), "bilinear", "border", False
            )
            np.testing.assert_array_equal(results[0][0], composite.float().numpy())
    np.testing.assert_allclose(
        results[0][0], results[1][0], atol=1e-2 if dtype == "float16" else 6e-2
    )
    np.testing.assert_allclose(
        results[0][1], results[1][1], atol=2e-2 if dtype == "float16" else 1e-1
    )


def test_meta_tensors_give_shapes_and_gradient_shapes():
    x = ember.zeros(1, 2, 4, 4, device="meta", requires_grad=True)
    grid = ember.zeros(1, 3, 5, 2, device="meta", requires_grad=True)
    out = F.grid_sample(x, grid, align_corners=False)
    assert out.shape == (1, 2, 3, 5) and out.device.type == "meta"
    out.sum().backward()
    assert x.grad.shape == x.shape and grid.grad.shape == grid.shape


@pytest.mark.parametrize("mode", MODES)
def test_array_module_without_scipy_gathers_and_scatters_tap_by_tap(monkeypatch, mode):
    _fake_cupy.install(monkeypatch, lenient_flags=True)  # NumPy behind CuPy's interface
    x, grid = _random_case(2)
    results = []
    for device in ("cpu", "cuda"):
        xt = ember.tensor(x).to(device).requires_grad_()
        gt = ember.tensor(grid).to(device).requires_grad_()
        out = F.grid_sample(xt, gt, mode, "zeros", align_corners=True)
        (out * out).sum().backward()
        assert xt.grad.device.type == device and gt.grad.device.type == device
        results.append([t.cpu().numpy() for t in (out.detach(), xt.grad, gt.grad)])
    _assert_close(results[1], results[0], np.float64)


@pytest.mark.parametrize("mode", MODES)
def test_compiled_step_replays_forward_and_backward_to_the_bit(mode):
    rng = np.random.default_rng(5)
    # large enough for the blocked channels-last copies
    x = ember.nn.Parameter(ember.tensor(rng.standard_normal((2, 16, 32, 32)), dtype=ember.float32))
    grid = ember.nn.Parameter(
        ember.tensor(rng.uniform(-1.2, 1.2, (2, 32, 32, 2)), dtype=ember.float32)
    )

    def step(weight):
        loss = (F.grid_sample(x, grid, mode, "reflection", align_corners=False) * weight).sum()
        loss.backward()
        return loss

    compiled = ember.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager execution fails the test
        for _ in range(3):
            weight = ember.tensor(rng.standard_normal((2, 16, 32, 32)), dtype=ember.float32)
            with ember.no_grad():
                x.mul_(1.01)
                grid.mul_(0.99)
            x.grad = grid.grad = None
            replayed = compiled(weight), x.grad.numpy().copy(), grid.grad.numpy().copy()
            x.grad = grid.grad = None
            eager = step(weight), x.grad.numpy(), grid.grad.numpy()
            assert float(replayed[0]) == float(eager[0])
            np.testing.assert_array_equal(replayed[1], eager[1])
            np.testing.assert_array_equal(replayed[2], eager[2])
    assert compiled.recordings == 1


def test_argument_checks_keep_their_errors():
    x, grid = ember.zeros(1, 1, 3, 3), ember.zeros(1, 2, 2, 2)
    calls = [
        (
            ValueError,
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            "'bicubic', but got: 'area'",
            lambda: F.grid_sample(x, grid, "area", align_corners=False),
        ),
        (
            ValueError,
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', "
            "or 'reflection', but got: 'circular'",
            lambda: F.grid_sample(x, grid, padding_mode="circular", align_corners=False),
        ),
        (
            RuntimeError,
            "grid_sampler(): expected 4D or 5D input and grid with same number of "
            "dimensions, but got input with sizes [1, 1, 3, 3] and grid with sizes [1, 2, 2, 2, 3]",
            lambda: F.grid_sample(x, ember.zeros(1, 2, 2, 2, 3), align_corners=False),
        ),
        (
            RuntimeError,
            "grid_sampler(): expected grid and input to have same batch size, but got "
            "input with sizes [1, 1, 3, 3] and grid with sizes [2, 2, 2, 2]",
            lambda: F.grid_sample(x, ember.zeros(2, 2, 2, 2), align_corners=False),
        ),
        (
            RuntimeError,
            "grid_sampler(): expected grid to have size 2 in last dimension, but got "
            "grid with sizes [1, 2, 2, 3]",
            lambda: F.grid_sample(x, ember.zeros(1, 2, 2, 3), align_corners=False),
        ),
        (
            RuntimeError,
            "grid_sampler(): bicubic interpolation only supports 4D input",
            lambda: F.grid_sample(
                ember.zeros(1, 1, 2, 2, 2),
                ember.zeros(1, 1, 1, 1, 3),
                "bicubic",
                align_corners=False,
            ),
        ),
        (
            RuntimeError,
            "grid_sampler(): expected input and grid to have same dtype, but input "
            "has ember.float32 and grid has ember.float64",
            lambda: F.grid_sample(x, grid.double(), align_corners=False),
        ),
        (
            NotImplementedError,
            "\"grid_sampler\" not implemented for 'Long'",
            lambda: F.grid_sample(x.long(), grid.long(), align_corners=False),
        ),
    ]
    for kind, message, call in calls:
        with pytest.raises(kind) as raised:
            call()
        assert str(raised.value) == message
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(x, grid)
