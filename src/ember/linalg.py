"""ember.linalg: PyTorch's torch.linalg names."""

from .ops._linalg_common import LinAlgError
from .ops.linalg import det, matmul
from .ops.linalg_decompositions import (
    cholesky,
    cholesky_ex,
    eigh,
    eigvalsh,
    ldl_factor,
    ldl_factor_ex,
    lu,
    lu_factor,
    lu_factor_ex,
    qr,
    slogdet,
    svd,
    svdvals,
)
from .ops.linalg_eig import eig, eigvals
from .ops.linalg_functions import (
    cond,
    cross,
    diagonal,
    householder_product,
    matrix_exp,
    matrix_norm,
    matrix_power,
    matrix_rank,
    multi_dot,
    norm,
    vander,
    vecdot,
)
from .ops.linalg_solvers import (
    inv,
    inv_ex,
    ldl_solve,
    lstsq,
    lu_solve,
    pinv,
    solve,
    solve_ex,
    solve_triangular,
    tensorinv,
    tensorsolve,
)
from .ops.reduction import vector_norm

__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "householder_product",
    "inv",
    "inv_ex",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
]

from . import _out  # noqa: E402

_out.install(globals(), _out.LINALG_OUT_FUNCTIONS)  # out= where torch takes it
