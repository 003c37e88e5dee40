"""The functions, dtypes and constants of the ``torch`` namespace that the Tensor/op layer
defines: what ``import ember`` re-exports from the layers below the namespaces.

The namespaces built on the op layer (``distributions``, ``nn``, ...) reach these as
``from .. import _op_namespace as ember`` instead of importing the root package, which sits
above every layer (it gathers them all, ``amp``, ``cuda`` and the systems included), so that
the layers stay apart; ``ember.where`` is the same function object either way.
"""

import builtins as _builtins

from . import _dtype, _tensor_methods, _tensor_misc_methods, autograd
from ._backend import (
    device,
    get_default_device,
    get_num_threads,
    set_default_device,
    set_num_threads,
)
from ._creation import *
from ._dtype import (
    bfloat16,
    cdouble,
    cfloat,
    complex64,
    complex128,
    double,
    dtype,
    float,
    float16,
    float32,
    float64,
    get_default_complex_dtype,
    get_default_dtype,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    promote_types,
    result_type,
    set_default_dtype,
    short,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._dtype import (
    bool_ as bool,
)
from ._errors import AcceleratorError, OutOfMemoryError
from ._factories import *
from ._host_functions import histogramdd, to_dlpack
from ._legacy import *
from ._memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    memory_format,
    preserve_format,
)
from ._method_functions import *
from ._settings import *
from ._tensor import Size, Tensor
from ._tensor_repr import set_printoptions
from ._type_info import finfo, iinfo
from ._windows import *
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.anomaly import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .autograd.anomaly import set_detect_anomaly as set_anomaly_enabled
from .autograd.grad_mode import is_inference_mode_enabled
from .ops.complex import complex, polar, sgn, view_as_complex, view_as_real
from .ops.elementwise import *
from .ops.elementwise import abs, pow, round
from .ops.indexing import (
    argsort,
    argwhere,
    gather,
    index_add,
    index_fill,
    index_put,
    index_select,
    kthvalue,
    masked_fill,
    masked_scatter,
    masked_select,
    msort,
    nonzero,
    scatter,
    scatter_add,
    sort,
    take,
    take_along_dim,
    topk,
    unique,
    unique_consecutive,
)
from .ops.linalg import addmm, bmm, dot, einsum, ger, matmul, mm, mv, outer, tensordot, vdot
from .ops.linalg import inner_product as inner
from .ops.linalg_decompositions import cholesky_legacy as cholesky
from .ops.linalg_decompositions import geqrf, logdet, lu_unpack
from .ops.linalg_decompositions import lu_legacy as lu
from .ops.linalg_decompositions import qr_legacy as qr
from .ops.linalg_decompositions import slogdet_legacy as slogdet
from .ops.linalg_decompositions import svd_legacy as svd
from .ops.linalg_functions import chain_matmul, matrix_exp, matrix_power, ormqr
from .ops.linalg_functions import cross_legacy as cross
from .ops.linalg_products import addbmm, addmv, addr, baddbmm, block_diag, kron, trace
from .ops.linalg_solvers import cholesky_inverse, cholesky_solve, pinverse, triangular_solve
from .ops.linalg_solvers import lu_solve_legacy as lu_solve
from .ops.numeric import (
    bitwise_left_shift,
    bitwise_right_shift,
    copysign,
    deg2rad,
    fix,
    frexp,
    gcd,
    heaviside,
    isreal,
    lcm,
    ldexp,
    logaddexp2,
    nextafter,
    rad2deg,
)
from .ops.reduction import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    cumprod,
    cumsum,
    logsumexp,
    max,
    mean,
    min,
    norm,
    prod,
    std,
    std_mean,
    sum,
    var,
    var_mean,
)
from .ops.scatter_reduce import index_reduce, scatter_reduce
from .ops.shape import (
    atleast_1d,
    atleast_2d,
    broadcast_shapes,
    broadcast_tensors,
    broadcast_to,
    cat,
    chunk,
    concat,
    concatenate,
    diag,
    diag_embed,
    diagonal,
    diagonal_scatter,
    flatten,
    flip,
    fliplr,
    flipud,
    hstack,
    matrix_transpose,
    moveaxis,
    movedim,
    narrow,
    permute,
    repeat_interleave,
    reshape,
    roll,
    select,
    select_scatter,
    slice_scatter,
    split,
    squeeze,
    stack,
    swapaxes,
    swapdims,
    t,
    tile,
    transpose,
    tril,
    triu,
    unbind,
    unflatten,
    unsqueeze,
    vstack,
)
from .ops.shape_composites import (
    as_strided,
    as_strided_scatter,
    atleast_3d,
    cartesian_prod,
    column_stack,
    combinations,
    cumulative_trapezoid,
    diagflat,
    diff,
    dsplit,
    dstack,
    hsplit,
    index_copy,
    meshgrid,
    nonzero_static,
    put,
    ravel,
    rot90,
    row_stack,
    split_with_sizes,
    tensor_split,
    trapezoid,
    trapz,
    tril_indices,
    triu_indices,
    unravel_index,
    vsplit,
)
from .ops.special import (
    digamma,
    erfinv,
    i0,
    igamma,
    igammac,
    lgamma,
    mvlgamma,
    polygamma,
    sinc,
    xlogy,
)
from .ops.statistics import (
    aminmax,
    bincount,
    corrcoef,
    cov,
    cummax,
    cummin,
    hash_tensor,
    histc,
    histogram,
    logcumsumexp,
    median,
    mode,
    nanmean,
    nanmedian,
    nanquantile,
    nansum,
    quantile,
    renorm,
)


def real(input: Tensor) -> Tensor:
    return input.real


def imag(input: Tensor) -> Tensor:
    return input.imag


def fill(input: Tensor, value) -> Tensor:
    return input.clone().fill_(value)


def is_complex(input: Tensor) -> bool:
    return input.dtype.is_complex


def is_storage(obj) -> bool:
    """ember has no Storage objects."""
    return False


def is_distributed(input: Tensor) -> bool:
    return False


def is_tensor(obj) -> bool:
    """True when ``obj`` is an ember Tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def numel(input: Tensor) -> int:
    return input.numel()


def can_cast(from_: dtype, to: dtype) -> bool:
    """PyTorch's same-kind casting rule: never to a lower category (float -> int, int -> bool)."""
    return from_.category <= to.category


def typename(obj) -> str:
    return obj.type() if isinstance(obj, Tensor) else type(obj).__name__


def clone(input: Tensor, *, memory_format=None) -> Tensor:  # noqa: F811
    """A copy of ``input``; ``preserve_format`` (the default) keeps a dense tensor's strides."""
    return input.clone(memory_format=memory_format)


# torch's constants
pi = 3.141592653589793
e = 2.718281828459045
inf = _builtins.float("inf")
nan = _builtins.float("nan")
newaxis = None
has_lapack = True  # linalg runs on NumPy's (or CuPy's) LAPACK
has_spectral = True  # ember.fft

from . import _out  # noqa: E402
from .ops.activation import log_softmax, softmax  # after the aliases' softmax
from .ops.complex import sgn  # noqa: E402, F811 - z/|z|, not elementwise's real sign

_out.install(globals())  # out= on the functions that take it in PyTorch

# Families no Tensor method needs load on first use (``import ember`` stays quick): name ->
# its module under ``ember.ops``
_FIRST_USE = {
    **dict.fromkeys(
        """binary_cross_entropy_with_logits cosine_embedding_loss ctc_loss
        hinge_embedding_loss kl_div margin_ranking_loss poisson_nll_loss
        triplet_margin_loss""".split(),
        "loss_enum",
    ),
    **dict.fromkeys(("pca_lowrank", "svd_lowrank"), "linalg_lowrank"),
    **dict.fromkeys(("bucketize", "isin", "searchsorted"), "search"),
}


def __getattr__(name: str):
    family = _FIRST_USE.get(name)
    if family is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".ops.{family}", __package__), name)
    if name in _out.OUT_FUNCTIONS:
        value = _out.with_out(value, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_FIRST_USE))
