"""Ready-made parametrizations: weight_norm, spectral_norm and orthogonal.

Each registers a small module with ``parametrize.register_parametrization``; the state_dict
keys (``parametrizations.weight.original0`` ...) are PyTorch's, so checkpoints load unchanged.
"""

from __future__ import annotations

from enum import Enum, auto

from ... import _creation
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm over every dim but ``dim`` (kept, size 1); ``dim=-1``: the whole tensor."""
    if dim == -1:
        return v.norm()
    others = tuple(d for d in range(v.dim()) if d != dim)
    return v.norm(2, others, keepdim=True) if others else v.abs()


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        # w = g · v / ‖v‖ (norm over every dim but self.dim)
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize ``module.<name>`` as g · v / ‖v‖ (``original0`` = g, ``original1`` = v).

    Example::
        >>> m = weight_norm(ember.nn.Linear(20, 40))
        >>> m.parametrizations.weight.original0.shape
        ember.Size([40, 1])
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            kw = dict(dtype=weight.dtype, device=weight.device)
            self.register_buffer("_u", F.normalize(_creation.randn(h, **kw), dim=0, eps=eps))
            self.register_buffer("_v", F.normalize(_creation.randn(w, **kw), dim=0, eps=eps))
            # start close to the top singular vectors, as PyTorch does
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    @no_grad()
    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        # updates the buffers in place, so DataParallel-style replicas would share them
        for _ in range(n_power_iterations):
            self._u.copy_(F.normalize(weight_mat @ self._v, dim=0, eps=self.eps))
            self._v.copy_(F.normalize(weight_mat.t() @ self._u, dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u * (weight_mat @ v)).sum()  # uᵀ W v, the top singular value estimate
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Divide ``module.<name>`` by its largest singular value (power-iteration estimate).

    The estimate is refined by ``n_power_iterations`` steps on each access in training mode.

    Example::
        >>> m = spectral_norm(ember.nn.Linear(20, 40))
        >>> m.parametrizations.weight.original.shape
        ember.Size([40, 20])
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _eye_like(x: Tensor, scale: float = 1.0) -> Tensor:
    n, k = x.shape[-2], x.shape[-1]
    return (_creation.eye(n, k, dtype=x.dtype, device=x.device) * scale).expand(*x.shape)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of A = QR with R's diagonal made positive (so Q is unique)."""
    from ...linalg import qr

    q, r = qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        from ...linalg import householder_product, matrix_exp, solve
        from ...ops.shape import cat

        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.transpose(-2, -1)
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(*X.shape[:-2], n, n - k)], -1)
            A = X - X.transpose(-2, -1)  # skew-symmetric
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:  # Cayley: (I - A/2)⁻¹ (I + A/2)
                eye = _eye_like(A)
                Q = solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(-1)
            tau = 2.0 / (1.0 + (A * A).sum(-2))
            Q = householder_product(A, tau)
            # the diagonal of X gives each reflection's sign (−Id maps to +Id)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2).to(Q.dtype)
        if getattr(self, "base", None) is not None:
            Q = self.base @ Q
        if transposed:
            Q = Q.transpose(-2, -1)
        return Q

    @no_grad()
    def right_inverse(self, Q: Tensor) -> Tensor:
        if tuple(Q.shape) != self.shape:
            raise ValueError(
                f"Expected a matrix or batch of matrices of shape {self.shape}. "
                f"Got a tensor of shape {tuple(Q.shape)}."
            )
        q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        if n < k:
            Q = Q.transpose(-2, -1)
            n, k = k, n
        if not hasattr(self, "base"):
            raise NotImplementedError(
                "ember supports assigning to an orthogonal parametrization only with "
                "use_trivialization=True."
            )
        if n != k:  # complete Q to a square matrix before orthogonalising
            from ...ops.shape import cat

            Q = cat([Q, _creation.randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype)], -1)
        self.base = _make_orthogonal(Q)
        # −Id: the map sends it to Id, so the parametrized value is base (restricted to k)
        return _eye_like(q_init, -1.0).clone()


def orthogonal(
    module: Module,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> Module:
    """Keep ``module.<name>`` (semi-)orthogonal: Qᵀ Q = I (or Q Qᵀ = I for wide matrices).

    ``orthogonal_map`` is ``"matrix_exp"``, ``"cayley"`` or ``"householder"`` (default:
    matrix_exp for square matrices, householder otherwise).

    Example::
        >>> m = orthogonal(ember.nn.Linear(5, 5))
        >>> bool(ember.allclose(m.weight @ m.weight.T, ember.eye(5), atol=1e-5))
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.dim()} dimensions."
        )
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _OrthMaps.__members__:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, _OrthMaps[orthogonal_map], use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
