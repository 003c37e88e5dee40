"""Top-level names PyTorch keeps for its layers' kernels: ``torch.conv2d``, ``torch.layer_norm``,
``torch.dropout`` ... Each forwards to
``ember.nn.functional`` (imported on first call, so ``import ember`` stays quick), adapting
the argument order where ATen's differs. Also the ``*_copy`` forms of the view ops, ``gradient``,
``vander``, and the functions PyTorch removed in 1.9 (which raise PyTorch's message; defined
with the Tensor methods of the same names, in ``_tensor_misc_methods``).
"""

from __future__ import annotations

import builtins
import warnings

from ._tensor import Tensor
from ._tensor_misc_methods import eig, lstsq, matrix_rank, solve, symeig  # noqa: F401


def _F():
    from .nn import functional

    return functional


def _forward(name: str):
    def function(*args, **kwargs):
        return getattr(_F(), name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"``ember.nn.functional.{name}``."
    return function


# same signature as the functional form
_SAME = (
    "adaptive_avg_pool1d adaptive_max_pool1d avg_pool1d bilinear celu channel_shuffle conv1d "
    "conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d cosine_similarity "
    "hardshrink max_pool1d max_pool1d_with_indices max_pool2d "
    "max_pool3d pairwise_distance pdist pixel_shuffle pixel_unshuffle prelu rms_norm selu "
    "threshold"
).split()
globals().update({name: _forward(name) for name in _SAME})


def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    return _F().channel_shuffle(input, groups)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return input.copy_(_F().celu(input, alpha))


def selu_(input: Tensor) -> Tensor:
    return input.copy_(_F().selu(input))


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return input.copy_(_F().threshold(input, threshold, value))


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    generator=None,
) -> Tensor:
    return _F().rrelu(input, lower, upper, training)


def rrelu_(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    generator=None,
) -> Tensor:
    return input.copy_(_F().rrelu(input, lower, upper, training))


# --- ATen's argument orders -----------------------------------------------------------------
def batch_norm(
    input,
    weight,
    bias,
    running_mean,
    running_var,
    training: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool = True,
) -> Tensor:
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm(
    input: Tensor,
    normalized_shape,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enable: bool = True,
) -> Tensor:
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
    cudnn_enabled: bool = True,
) -> Tensor:
    return _F().group_norm(input, num_groups, weight, bias, eps)


def instance_norm(
    input,
    weight,
    bias,
    running_mean,
    running_var,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    cudnn_enabled: bool = True,
) -> Tensor:
    return _F().instance_norm(
        input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps
    )


def embedding(
    weight: Tensor,
    indices: Tensor,
    padding_idx: int = -1,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    padding = None if padding_idx == -1 else padding_idx
    return _F().embedding(indices, weight, padding, None, 2.0, scale_grad_by_freq, sparse)


def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    return _F().pad(input, tuple(pad), "constant", value)


def convolution(
    input, weight, bias, stride, padding, dilation, transposed: bool, output_padding, groups: int
) -> Tensor:
    F = _F()
    n = weight.dim() - 2
    if transposed:
        fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[n]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def grid_sampler(input, grid, interpolation_mode: int, padding_mode: int, align_corners: bool):
    modes = ("bilinear", "nearest", "bicubic")
    paddings = ("zeros", "border", "reflection")
    return _F().grid_sample(
        input, grid, modes[interpolation_mode], paddings[padding_mode], align_corners
    )


def grid_sampler_2d(input, grid, interpolation_mode: int, padding_mode: int, align_corners: bool):
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


grid_sampler_3d = grid_sampler_2d


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float):
    """Rescale in place the rows of ``weight`` named by ``indices`` whose ``norm_type``-norm
    exceeds ``max_norm`` (what ``nn.Embedding(max_norm=...)`` does before a lookup)."""
    from .autograd.grad_mode import no_grad

    with no_grad():
        rows = indices.reshape(-1).unique()
        picked = weight.index_select(0, rows)
        norms = picked.norm(norm_type, dim=1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
        weight.index_copy_(0, rows, picked * scale)
    return weight


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dim but ``dim`` (kept, the others of size 1); over
    all of ``v`` for ``dim=-1`` (weight normalisation's norm)."""
    if dim == -1:
        return v.norm(pow)
    others = tuple(d for d in builtins.range(v.dim()) if d != dim % v.dim())
    return v.norm(pow, dim=others, keepdim=True)


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)`` (eager, as PyTorch
    runs ``torch.cond`` outside compilation)."""
    value = bool(pred.item() if isinstance(pred, Tensor) else pred)
    return (true_fn if value else false_fn)(*operands)


def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """The Q of a QR from Householder reflectors (``linalg.householder_product``)."""
    from . import linalg

    return linalg.householder_product(input, tau)


def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (a view for real tensors)."""
    return input.mH


def _view_as_real(x):
    from .ops.complex import view_as_real

    return view_as_real(x)


def _view_as_complex(x):
    from .ops.complex import view_as_complex

    return view_as_complex(x)


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    return _F().affine_grid(theta, list(size), align_corners)


def _dropout(name: str, functional: str):
    def function(input: Tensor, p: float, train: bool) -> Tensor:
        from .ops import dropout as ops

        return getattr(ops, functional)(input, p, train)

    def in_place(input: Tensor, p: float, train: bool) -> Tensor:
        from .ops import dropout as ops

        return getattr(ops, functional)(input, p, train, True)

    function.__name__ = function.__qualname__ = name
    in_place.__name__ = in_place.__qualname__ = name + "_"
    return function, in_place


dropout, dropout_ = _dropout("dropout", "dropout")
alpha_dropout, alpha_dropout_ = _dropout("alpha_dropout", "alpha_dropout")
feature_alpha_dropout, feature_alpha_dropout_ = _dropout(
    "feature_alpha_dropout", "feature_alpha_dropout"
)
feature_dropout, feature_dropout_ = _dropout("feature_dropout", "feature_dropout")


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode=None) -> Tensor:
    from .ops.distance import cdist as _cdist

    if compute_mode is None:
        return _cdist(x1, x2, p)
    return _cdist(x1, x2, p, compute_mode)


# --- the *_copy forms of view ops: the view's values in new memory --------------------------
def _copy_of(name: str, view):
    def function(input: Tensor, *args, **kwargs):
        result = view(input, *args, **kwargs)
        if isinstance(result, (tuple, list)):
            return type(result)(r.clone() for r in result)
        return result.clone()

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"A copy of ``{name[:-5]}``'s result (never a view)."
    return function


_COPY_VIEWS = {
    "alias_copy": lambda x: x,
    "as_strided_copy": lambda x, *a, **k: x.as_strided(*a, **k),
    "detach_copy": lambda x: x.detach(),
    "diagonal_copy": lambda x, *a, **k: x.diagonal(*a, **k),
    "expand_copy": lambda x, *a, **k: x.expand(*a, **k),
    "permute_copy": lambda x, *a: x.permute(*a),
    "select_copy": lambda x, *a: x.select(*a),
    "slice_copy": lambda x, dim=0, start=None, end=None, step=1: x[
        (builtins.slice(None),) * (dim % builtins.max(x.dim(), 1))
        + (builtins.slice(start, end, step),)
    ],
    "split_copy": lambda x, *a, **k: x.split(*a, **k),
    "split_with_sizes_copy": lambda x, *a, **k: x.split_with_sizes(*a, **k),
    "squeeze_copy": lambda x, *a: x.squeeze(*a),
    "t_copy": lambda x: x.t(),
    "transpose_copy": lambda x, *a: x.transpose(*a),
    "unbind_copy": lambda x, *a: x.unbind(*a),
    "unfold_copy": lambda x, *a: x.unfold(*a),
    "unsqueeze_copy": lambda x, *a: x.unsqueeze(*a),
    "view_copy": lambda x, *a: x.view(*a),
    "indices_copy": lambda x: x.indices(),
    "values_copy": lambda x: x.values(),
    "view_as_real_copy": lambda x: _view_as_real(x),
    "view_as_complex_copy": lambda x: _view_as_complex(x),
}
globals().update({name: _copy_of(name, view) for name, view in _COPY_VIEWS.items()})


# --- numerical helpers -----------------------------------------------------------------------
def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """Central differences inside, one-sided (first or second order) at the edges, along each
    dim, for unit, scalar, per-dim or coordinate spacings (NumPy's and PyTorch's rule)."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = (
        list(builtins.range(input.dim()))
        if dim is None
        else ([dim] if isinstance(dim, int) else list(dim))
    )
    dims = [d % input.dim() for d in dims]
    if spacing is None:  # torch's default: unit spacing
        spacing = 1
    if isinstance(spacing, (int, float)) or (isinstance(spacing, Tensor) and spacing.dim() == 0):
        spacings = [spacing] * len(dims)
    else:
        spacings = list(spacing)
        if len(spacings) == 1 and len(dims) > 1:
            spacings = spacings * len(dims)
        if len(spacings) != len(dims):
            raise RuntimeError(
                f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing "
                f"and dim arguments to have the same length, but got a spacing argument of "
                f"length {len(spacings)} and a dim argument of length {len(dims)}."
            )
    x = input if input.is_floating_point() or input.is_complex() else input.to(_default_float())
    return tuple(_gradient_along(x, d, h, edge_order) for d, h in zip(dims, spacings))


def _default_float():
    from ._dtype import get_default_dtype

    return get_default_dtype()


def _gradient_along(x: Tensor, d: int, h, edge_order: int) -> Tensor:
    n = x.shape[d]
    if n < edge_order + 1:
        raise RuntimeError(
            "torch.gradient expected each dimension size to be at least edge_order+1"
        )
    take = lambda start, length: x.narrow(d, start, length)  # noqa: E731
    if isinstance(h, Tensor) and h.dim() == 1:
        shape = [1] * x.dim()
        shape[d] = n
        c = h.to(x.dtype).reshape(shape)
        dx = c.narrow(d, 1, n - 1) - c.narrow(d, 0, n - 1)
        left, right = dx.narrow(d, 0, n - 2), dx.narrow(d, 1, n - 2)
        # second-order accurate for uneven spacing: weighted one-sided differences
        interior = (
            take(0, n - 2) * (-right / (left * (left + right)))
            + take(1, n - 2) * ((right - left) / (left * right))
            + take(2, n - 2) * (left / (right * (left + right)))
        )
        first = (take(1, 1) - take(0, 1)) / dx.narrow(d, 0, 1)
        last = (take(n - 1, 1) - take(n - 2, 1)) / dx.narrow(d, n - 2, 1)
        if edge_order == 2:
            a0, a1 = dx.narrow(d, 0, 1), dx.narrow(d, 1, 1)
            first = (
                -take(0, 1) * (2 * a0 + a1) / (a0 * (a0 + a1))
                + take(1, 1) * (a0 + a1) / (a0 * a1)
                - take(2, 1) * a0 / (a1 * (a0 + a1))
            )
            b0, b1 = dx.narrow(d, n - 3, 1), dx.narrow(d, n - 2, 1)
            last = (
                take(n - 3, 1) * b1 / (b0 * (b0 + b1))
                - take(n - 2, 1) * (b0 + b1) / (b0 * b1)
                + take(n - 1, 1) * (2 * b1 + b0) / (b1 * (b0 + b1))
            )
        from .ops.shape import cat

        return cat([first, interior, last], d)
    h = float(h)
    interior = (take(2, n - 2) - take(0, n - 2)) / (2 * h)
    if edge_order == 1:
        first = (take(1, 1) - take(0, 1)) / h
        last = (take(n - 1, 1) - take(n - 2, 1)) / h
    else:
        first = (-1.5 * take(0, 1) + 2 * take(1, 1) - 0.5 * take(2, 1)) / h
        last = (0.5 * take(n - 3, 1) - 2 * take(n - 2, 1) + 1.5 * take(n - 1, 1)) / h
    from .ops.shape import cat

    return cat([first, interior, last], d)


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """Columns are powers of ``x``: x^(N-1) ... x^0 (or increasing)."""
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    from ._creation import ones_like
    from .ops.shape import stack

    if n == 0:
        return x.new_empty(x.shape[0], 0)
    columns = [ones_like(x)] + [x**k for k in builtins.range(1, n)]
    if not increasing:
        columns = columns[::-1]
    return stack(columns, 1)


def frobenius_norm(input: Tensor, dim=(-2, -1), keepdim: bool = False) -> Tensor:
    warnings.warn(
        "at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be "
        "removed in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, "
        "keepdim)` instead",
        UserWarning,
        stacklevel=2,
    )
    from .ops.reduction import vector_norm

    return vector_norm(input, 2.0, dim, keepdim)


def nuclear_norm(input: Tensor, dim=(-2, -1), keepdim: bool = False) -> Tensor:
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = (-2, -1), dim
    warnings.warn(
        "at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be "
        "removed in a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, "
        "keepdim)` instead",
        UserWarning,
        stacklevel=2,
    )
    from . import linalg

    return linalg.matrix_norm(input, "nuc", dim, keepdim)


def get_device_module(device=None):
    """The module for a device type: ``ember.cuda`` for CUDA, ``ember.cpu`` for the CPU."""
    import importlib

    from ._backend import to_device

    kind = "cuda" if device is None else to_device(device).type
    return importlib.import_module(f"ember.{kind}")


def set_default_tensor_type(t) -> None:
    """Deprecated in PyTorch: sets the default floating dtype from a tensor type."""
    warnings.warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    from . import _dtype as dt

    if isinstance(t, str):
        name = t.rsplit(".", 1)[-1].replace("Tensor", "")
        by_legacy = {legacy: dt.BY_NAME[n] for n, legacy in dt.LEGACY_NAMES.items()}
        if name not in by_legacy:
            raise TypeError(f"invalid type: '{t}'")
        dt.set_default_dtype(by_legacy[name])
    else:
        dt.set_default_dtype(t.dtype)


__all__ = sorted(
    [
        n
        for n in globals()
        if not n.startswith("_") and callable(globals()[n]) and n not in ("Tensor", "annotations")
    ]
)
