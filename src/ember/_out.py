"""``out=`` for the top-level functions that take it in PyTorch.

The function runs as usual; its result is written into ``out`` with PyTorch's rules: the
result's dtype must cast to ``out``'s (same category or wider), an ``out`` of another shape is
resized (with PyTorch's deprecation warning unless it was empty), and ``out=`` refuses to
take part in autograd.
"""

from __future__ import annotations

import functools
import warnings

from ._backend import array_module
from ._dtype import LEGACY_NAMES, to_dtype
from ._tensor import Tensor
from .autograd import grad_mode

# torch's top-level functions that accept out= (from their documented signatures)
OUT_FUNCTIONS = frozenset(
    """abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr all amax amin aminmax
    any arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argsort asin
    asinh atan atan2 atanh baddbmm bernoulli bitwise_and bitwise_left_shift bitwise_not
    bitwise_or bitwise_right_shift bitwise_xor bmm bucketize cat ceil chain_matmul cholesky
    cholesky_inverse cholesky_solve clamp clamp_max clamp_min clip column_stack concat
    concatenate copysign cos cosh count_nonzero cross cummax cummin cumprod cumsum deg2rad diag
    diff digamma div divide dot dstack empty erf erfc erfinv exp exp2 expm1 eye fix
    float_power floor floor_divide fmax fmin fmod frac frexp full gather gcd ge ger greater
    greater_equal gt heaviside histc histogram hstack hypot i0 igamma igammac index_select
    inner inverse isneginf isposinf kron kthvalue lcm ldexp le lerp less less_equal lgamma
    linspace log log10 log1p log2 logaddexp logaddexp2 logcumsumexp logical_and logical_not
    logical_or logical_xor logit logspace logsumexp lt lu_solve lu_unpack masked_select
    matmul matrix_power max maximum mean median min minimum mm mode msort mul multinomial
    multiply mv mvlgamma nan_to_num nanmean nanmedian nanquantile nansum ne neg negative
    nextafter nonzero norm normal not_equal ones outer polygamma pow prod quantile rad2deg rand
    randint randn randperm reciprocal remainder renorm round row_stack rsqrt searchsorted sgn
    sigmoid sign signbit sin sinc sinh sort sqrt square stack std sub subtract sum svd
    take_along_dim tan tanh topk triangular_solve tril triu true_divide trunc var vdot vstack
    where xlogy zeros""".split()
)

NO_AUTOGRAD = (
    "{}(): functions with out=... arguments don't support automatic differentiation, but one "
    "of the arguments requires grad."
)


def _requires_grad(values) -> bool:
    for v in values:
        if isinstance(v, Tensor) and v.requires_grad:
            return True
        if isinstance(v, (list, tuple)) and _requires_grad(v):
            return True
    return False


def _write(name: str, out: Tensor, value: Tensor) -> None:
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if not isinstance(value, Tensor):
        from ._creation import tensor

        value = tensor(value)
    have, want = value.dtype, out.dtype
    if have.category > want.category:
        raise RuntimeError(
            f"result type {have.legacy_name} can't be cast to the desired output type "
            f"{want.legacy_name}"
        )
    if value.device != out.device:
        raise RuntimeError(
            f"Expected out tensor to have device {value.device}, but got {out.device} instead"
        )
    data, new = out._data, value._data
    if tuple(data.shape) != tuple(new.shape):
        if data.size:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(data.shape)}, which does not match the required output shape "
                f"{list(new.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).",
                UserWarning,
                stacklevel=4,
            )
        out._data = array_module(new).asarray(new, dtype=want.np).copy()
    else:
        array_module(data).copyto(data, new, casting="unsafe")
    out._vc[0] += 1


# functions whose out= must have one dtype, whatever the result casts to (torch's checks)
EXACT_OUT_DTYPES = {"multinomial": "int64"}

# factories that make their values in out='s dtype when given no dtype (torch takes the
# tensor options from out)
FACTORY_OUT = frozenset("arange empty eye full linspace logspace ones zeros".split())


def _factory_dtype(out, kwargs: dict) -> None:
    given = kwargs.get("dtype")
    if given is None:
        kwargs["dtype"] = out.dtype
    elif to_dtype(given) is not out.dtype:
        raise RuntimeError(
            f"dtype {to_dtype(given).legacy_name} does not match dtype of out parameter "
            f"({out.dtype.legacy_name})"
        )


# functions whose out= must have the result's dtype (their kernels do not cast), with
# torch's message for another
_EXPECTED_DTYPE = "Expected out tensor to have dtype {have.c_name}, but got {want.c_name} instead"
_SAME_SCALAR_TYPE = "{name}(): self and result must have the same scalar type"
RESULT_DTYPE_OUT = {
    "gather": _EXPECTED_DTYPE,
    "scatter": _EXPECTED_DTYPE,
    "scatter_add": _EXPECTED_DTYPE,
    "take": "take(): self and out expected to have the same dtype, but got self.dtype = "
    "{have.legacy_name} and out.dtype = {want.legacy_name}",
    "index_select": _SAME_SCALAR_TYPE,
    "complex": "Expected object of scalar type {have.legacy_name} but got scalar type "
    "{want.legacy_name} for argument 'out'",
    "masked_select": _SAME_SCALAR_TYPE,
}

# functions whose out= tensor torch refuses when it overlaps itself (an expanded tensor) or
# shares any memory with an input (their kernels read the input while writing out)
NO_OVERLAP_OUT = frozenset("cat gather index_select kthvalue masked_select take".split())
# functions whose out= torch refuses only when it overlaps itself (it may be the input)
NO_INTERNAL_OVERLAP_OUT = frozenset({"bernoulli"})

# functions whose out= is a list of tensors that torch fills and returns None for (the *_copy
# versions of the splitting views), with the name torch's length check gives
LIST_OUT = {
    "split_copy": "split_copy_Tensor_out",
    "split_with_sizes_copy": "split_with_sizes_copy_out",
    "unbind_copy": "unbind_copy_int_out",
}

# functions whose out= must be one tensor, even where the result is a tuple
SINGLE_TENSOR_OUT = frozenset({"nonzero"})

INTERNAL_OVERLAP = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)
INPUT_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation."
)


def _check_no_overlap(out, args, kwargs) -> None:
    """torch's ``assert_no_internal_overlap(out)`` and ``assert_no_overlap(out, input)``."""
    for o in out if isinstance(out, (list, tuple)) else (out,):
        if not isinstance(o, Tensor) or o._data.size == 0:
            continue
        data = o._data
        if any(stride == 0 and size > 1 for stride, size in zip(data.strides, data.shape)):
            raise RuntimeError(INTERNAL_OVERLAP)
        xp = array_module(data)
        for value in (*args, *kwargs.values()):
            for t in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(t, Tensor) and xp.may_share_memory(data, t._data):
                    raise RuntimeError(INPUT_OVERLAP)


def _resized_out_is_input(out, value, args, kwargs) -> bool:
    """An empty ``out`` that is also an input: torch resizes it for a non-empty result before
    its overlap check, and then the input is the written-to tensor."""
    if not isinstance(out, Tensor) or out._data.size or not isinstance(value, Tensor):
        return False
    if not value._data.size:
        return False
    for v in (*args, *kwargs.values()):
        if any(t is out for t in (v if isinstance(v, (list, tuple)) else (v,))):
            return True
    return False


def with_out(fn, name: str):
    """``fn`` with an ``out=`` keyword (the wrapper consumes it: ``fn`` never sees it)."""
    exact = EXACT_OUT_DTYPES.get(name)
    result_dtype = RESULT_DTYPE_OUT.get(name)
    factory = name in FACTORY_OUT
    no_overlap = name in NO_OVERLAP_OUT
    internal_overlap_only = name in NO_INTERNAL_OVERLAP_OUT
    list_out = LIST_OUT.get(name)
    single_out = name in SINGLE_TENSOR_OUT

    @functools.wraps(fn)
    def function(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if single_out and isinstance(out, (list, tuple)):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if no_overlap:
            _check_no_overlap(out, args, kwargs)
        elif internal_overlap_only:
            _check_no_overlap(out, (), {})
        if factory and isinstance(out, Tensor):
            _factory_dtype(out, kwargs)
        if exact is not None and isinstance(out, Tensor) and out.dtype.name != exact:
            raise RuntimeError(
                f"{name} expects {LEGACY_NAMES[exact]} tensor out, got: "
                f"{LEGACY_NAMES.get(out.dtype.name, out.dtype.name)}"
            )
        if grad_mode.state.enabled and (
            _requires_grad(args)
            or _requires_grad(kwargs.values())
            or _requires_grad(out if isinstance(out, (list, tuple)) else (out,))
        ):
            raise RuntimeError(NO_AUTOGRAD.format(name))
        with grad_mode.no_grad():
            value = fn(*args, **kwargs)
        if no_overlap and _resized_out_is_input(out, value, args, kwargs):
            raise RuntimeError(INPUT_OVERLAP)
        if result_dtype and isinstance(out, Tensor) and out.dtype is not value.dtype:
            raise RuntimeError(result_dtype.format(name=name, have=value.dtype, want=out.dtype))
        if list_out is not None:
            if not isinstance(out, (list, tuple)) or len(out) != len(value):
                size = len(out) if isinstance(out, (list, tuple)) else 1
                raise RuntimeError(
                    f"{list_out} expected an out= argument of size {len(value)}, got size {size}"
                )
            for o, v in zip(out, value):
                _write(name, o, v)
            return None
        if isinstance(out, (list, tuple)):
            if not isinstance(value, tuple) or len(value) != len(out):
                expected = 1 if isinstance(value, Tensor) else len(value)
                raise TypeError(f"{name}(): out= expects {expected} tensor(s)")
            for o, v in zip(out, value):
                _write(name, o, v)
            return type(value)(*out) if hasattr(value, "_fields") else tuple(out)
        if isinstance(value, tuple):
            if single_out:
                raise RuntimeError(f"{name} does not support the out kwarg when as_tuple is True")
            raise TypeError(f"{name}(): out= must be a tuple of {len(value)} tensors")
        _write(name, out, value)
        return out

    return function


# more top-level functions with out= in torch (found by the OpInfo conformance suite)
OUT_FUNCTIONS |= frozenset(
    """alias_copy angle as_strided_copy complex conj_physical diagonal_copy eq expand_copy
    split_copy split_with_sizes_copy unbind_copy
    geqrf hardshrink hash_tensor histogramdd index_add index_copy index_reduce isin log_softmax lu
    narrow_copy native_batch_norm ormqr permute_copy polar qr scatter scatter_add
    scatter_reduce slice_scatter softmax squeeze_copy t_copy take tensordot transpose_copy
    unfold_copy unsqueeze_copy view_copy""".split()
)

# the other namespaces' functions that accept out= in torch, installed by each namespace
LINALG_OUT_FUNCTIONS = frozenset(
    """cholesky cholesky_ex cond cross det diagonal eig eigh eigvals eigvalsh
    householder_product inv inv_ex ldl_factor ldl_factor_ex ldl_solve lstsq lu lu_factor
    lu_factor_ex lu_solve matmul matrix_exp matrix_norm matrix_power matrix_rank multi_dot norm
    pinv qr slogdet solve solve_ex solve_triangular svd svdvals tensorinv tensorsolve vecdot
    vector_norm""".split()
) - {"diagonal", "matrix_exp"}  # torch.linalg's versions of these take no out=
FFT_OUT_FUNCTIONS = frozenset(
    """fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn hfft ihfft hfft2
    ihfft2 hfftn ihfftn fftfreq rfftfreq""".split()
)
SPECIAL_OUT_FUNCTIONS = frozenset(
    """airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 chebyshev_polynomial_t
    chebyshev_polynomial_u chebyshev_polynomial_v chebyshev_polynomial_w digamma entr erf erfc
    erfcx erfinv exp2 expit expm1 gammainc gammaincc gammaln hermite_polynomial_h
    hermite_polynomial_he i0 i0e i1 i1e laguerre_polynomial_l legendre_polynomial_p log1p
    log_ndtr logit logsumexp modified_bessel_i0 modified_bessel_i1 modified_bessel_k0
    modified_bessel_k1 multigammaln ndtr ndtri polygamma psi round scaled_modified_bessel_k0
    scaled_modified_bessel_k1 shifted_chebyshev_polynomial_t shifted_chebyshev_polynomial_u
    shifted_chebyshev_polynomial_v shifted_chebyshev_polynomial_w sinc spherical_bessel_j0
    xlog1py xlogy zeta""".split()
)
NN_FUNCTIONAL_OUT_FUNCTIONS = frozenset(
    "avg_pool2d avg_pool3d gelu hardshrink linear logsigmoid softplus softshrink".split()
)


def install(namespace: dict, names=OUT_FUNCTIONS) -> None:
    """Give every function of ``namespace`` named in ``names`` its ``out=``."""
    for name in names:
        fn = namespace.get(name)
        if fn is not None and callable(fn) and not isinstance(fn, type):
            namespace[name] = with_out(fn, name)
