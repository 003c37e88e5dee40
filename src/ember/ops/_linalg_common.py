"""What the linear-algebra op families share: argument checks, PyTorch's LinAlgError and
named result tuples, the kernel module of a device, and nodes with several outputs.

A decomposition (svd, qr, eigh, lu) returns several differentiable tensors from one node, as
PyTorch does: its backward formula gets one gradient per output (``None`` for unused ones) and
reads the outputs back as tensors of the graph, so that double backward works.
"""

from __future__ import annotations

from .. import _backend, return_types
from .._tensor import Tensor
from ..autograd import _cuts
from ..autograd.node import FREED_MESSAGE, Node, graph_output
from ._dispatch import grad_state, record, record_output, wrap


class LinAlgError(RuntimeError):
    """A linear-algebra kernel failed on the values (singular, not positive-definite)."""


def _result_type(name: str, fields: str):
    return return_types.define(name, fields.split())


SvdResult = _result_type("linalg_svd", "U S Vh")
OldSvdResult = _result_type("svd", "U S V")
QrResult = _result_type("linalg_qr", "Q R")
OldQrResult = _result_type("qr", "Q R")
EighResult = _result_type("linalg_eigh", "eigenvalues eigenvectors")
CholeskyExResult = _result_type("linalg_cholesky_ex", "L info")
SlogdetResult = _result_type("linalg_slogdet", "sign logabsdet")
OldSlogdetResult = _result_type("slogdet", "sign logabsdet")
InvExResult = _result_type("linalg_inv_ex", "inverse info")
SolveExResult = _result_type("linalg_solve_ex", "result info")
LuResult = _result_type("linalg_lu", "P L U")
LuUnpackResult = _result_type("lu_unpack", "P L U")
LuFactorResult = _result_type("linalg_lu_factor", "LU pivots")
LuFactorExResult = _result_type("linalg_lu_factor_ex", "LU pivots info")
LstsqResult = _result_type("linalg_lstsq", "solution residuals rank singular_values")
TriangularSolveResult = _result_type("triangular_solve", "solution cloned_coefficient")
GeqrfResult = _result_type("geqrf", "a tau")
LdlFactorResult = _result_type("linalg_ldl_factor", "LD pivots")
LdlFactorExResult = _result_type("linalg_ldl_factor_ex", "LD pivots info")


def shape_str(t: Tensor) -> str:
    return "x".join(str(s) for s in t._data.shape) or "scalar"


def check_matrix(
    op: str,
    A: Tensor,
    name: str = "A",
    square: bool = False,
    low_precision: bool = False,
    allow_complex: bool = True,
) -> None:
    """At least 2-D, floating or complex (32 bits or more unless ``low_precision``), and
    square when asked (PyTorch's messages)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    shape = A._data.shape
    if len(shape) < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if square and shape[-1] != shape[-2]:
        raise RuntimeError(
            f"{op}: {name} must be batches of square matrices, but they are {shape[-2]} by "
            f"{shape[-1]} matrices"
        )
    dtype = A.dtype
    if not dtype.is_floating_point and not (allow_complex and dtype.is_complex):
        raise RuntimeError(
            f"{op}: Expected a floating point or complex tensor as input. Got {dtype.legacy_name}"
        )
    if A._data.dtype.itemsize < 4 and not low_precision:
        # LAPACK has no half-precision kernels (NotImplementedError is a RuntimeError)
        raise NotImplementedError(
            f"{op}: Low precision dtypes not supported. Got {dtype.legacy_name}"
        )


def check_same_dtype(
    op: str, a: Tensor, b: Tensor, a_name: str = "A", b_name: str = "B", end: str = ""
) -> None:
    if a._data.dtype != b._data.dtype:
        prefix = f"{op}: " if op else ""
        raise RuntimeError(
            f"{prefix}Expected {a_name} and {b_name} to have the same dtype, but found "
            f"{a_name} of type {a.dtype.legacy_name} and {b_name} of type "
            f"{b.dtype.legacy_name} instead{end}"
        )


def real_dtype(array_dtype, xp):
    """The real dtype of a backend dtype: float32 for complex64, itself for a real one."""
    return xp.finfo(array_dtype).dtype


def batch_prefix(index: int, batched: bool) -> str:
    return f"(Batch element {index}): " if batched else ""


def svd_kernel(xp, a, full_matrices: bool = False, compute_uv: bool = True):
    """The backend's SVD of a stack of matrices, raising torch's LinAlgError (not NumPy's)
    where it cannot converge: a matrix with a NaN (an infinity gives NaN singular values, in
    torch too), or LAPACK giving up."""
    if a.size:
        stack = a.reshape((-1,) + a.shape[-2:])
        has_nan = xp.isnan(stack).any(axis=(1, 2))
        if bool(has_nan.any()):
            index = int(has_nan.argmax())
            raise LinAlgError(
                f"linalg.svd: {batch_prefix(index, a.ndim > 2)}The algorithm failed to converge "
                "because the input matrix contained non-finite values."
            )
    try:
        if not compute_uv:
            return xp.linalg.svd(a, compute_uv=False)
        return xp.linalg.svd(a, full_matrices=full_matrices)
    except _backend.KernelLinAlgError:
        raise LinAlgError(
            "linalg.svd: The algorithm failed to converge because the input matrix is "
            "ill-conditioned or has too many repeated singular values."
        ) from None


def first_failure(info) -> tuple:
    """(flat batch index, info value) of the first nonzero entry of an info array."""
    flat = info.reshape(-1)
    idx = int((flat != 0).argmax())
    return idx, int(flat[idx])


def scipy_linalg(xp):
    """scipy.linalg for NumPy arrays, cupyx.scipy.linalg for CuPy arrays."""
    if xp.__name__ == "numpy":
        import scipy.linalg

        return scipy.linalg
    if xp.__name__ == "ember.meta":  # a decomposition's shapes need its own meta rule
        raise NotImplementedError("this linalg function is not supported on meta tensors yet")
    import cupyx.scipy.linalg

    return cupyx.scipy.linalg


def is_numpy(xp) -> bool:
    return xp.__name__ == "numpy"


def int_tensor(data, like_xp, dtype: str = "int32") -> Tensor:
    return wrap(like_xp.asarray(data, dtype=dtype))


# --------------------------------------------------------------------------------------------
# nodes with several outputs
# --------------------------------------------------------------------------------------------
class MultiOutputNode(Node):
    """Base of the decompositions' nodes: ``backward(*grads)`` gets one gradient per output."""

    _fast = False

    def apply(self, grads: list) -> tuple:
        out = self.backward(*grads)
        return out if type(out) is tuple else (out,)

    def saved_outputs(self) -> tuple:
        """This node's outputs as tensors of the graph (so that formulas differentiate again)."""
        records = self._saved_out
        if records is None:
            raise RuntimeError(FREED_MESSAGE)
        outs = []
        for nr, saved in enumerate(records):
            out = graph_output(self, saved)
            out._out_nr = nr
            outs.append(out)
        return tuple(outs)


def record_outputs(node_cls, datas: tuple, inputs: tuple, saved: tuple = (), **attrs) -> tuple:
    """Tensors for ``datas``, all outputs of one ``node_cls`` node when some input needs grad."""
    needs = grad_state.enabled and any(
        t is not None and isinstance(t, Tensor) and t._rg for t in inputs
    )
    if not needs:
        outs = tuple(wrap(d) for d in datas)
        if any(isinstance(t, Tensor) and t._rg for t in inputs):
            _cuts.note_inputs("no_grad", node_cls, inputs, outs[0], out_site=False)
        return outs
    node = node_cls()
    if attrs:
        node.__dict__.update(attrs)
    first = record(node, datas[0], inputs, saved)
    outs = [first]
    for nr, data in enumerate(datas[1:], 1):
        if data.__class__ not in _backend._MODULE_OF_TYPE:
            data = _backend.as_array(data)
        outs.append(record_output(node, data, nr, saved))
    node.num_outputs = len(outs)
    node._meta = tuple((o._data.shape, o._data.dtype) for o in outs)
    node._saved_out = tuple((o._data, o._vc, 0) for o in outs)
    return tuple(outs)
