"""Tensor methods about metadata, memory and PyTorch's older API (no new maths): device and
layout queries, in-place shape changes, ``apply_``/``map_``, ``new``, and the complex-number
helpers (real, imag, conj, angle, casts to complex).
"""

from __future__ import annotations

import builtins

import numpy as np

from . import _creation, _shared_memory
from ._backend import array_module
from ._tensor import Tensor
from .autograd import grad_mode
from .ops import complex as cx
from .ops import elementwise as ew
from .ops import shape as sh

T = Tensor


# --- queries ------------------------------------------------------------------------------
def get_device(self: Tensor) -> int:
    """-1 on the CPU, the CUDA device index otherwise (PyTorch's convention)."""
    return -1 if self.device.type == "cpu" else (self.device.index or 0)


def is_nonzero(self: Tensor) -> bool:
    if self.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if self.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item())


def is_same_size(self: Tensor, other: Tensor) -> bool:
    return tuple(self.shape) == tuple(other.shape)


def is_signed(self: Tensor) -> bool:
    return self.dtype.is_signed


def dim_order(self: Tensor, *, ambiguity_check: bool = False) -> tuple:
    """Dimensions from outermost to innermost in memory (by decreasing stride)."""
    strides = self.stride()
    return tuple(sorted(builtins.range(self.dim()), key=lambda d: -strides[d]))


def storage_offset(self: Tensor) -> int:
    """Elements between the start of the storage and this tensor's first element."""
    data = self._data
    base = data
    while getattr(base, "base", None) is not None:
        base = base.base
    if base is data or not hasattr(base, "__array_interface__"):
        return 0
    start = data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return start // data.itemsize


def is_shared(self: Tensor) -> bool:
    """Whether the data lives in shared memory (``share_memory_``); CUDA tensors always do."""
    if self.device.type == "cuda":
        return True
    return _shared_memory.is_shared(self._data)


def share_memory_(self: Tensor) -> Tensor:
    """Move the data into shared memory, in place; a no-op when it is there already and for
    CUDA tensors (as torch). Other processes that receive this tensor through
    ``ember.multiprocessing`` map the same memory, so their in-place writes show here.

    A view moves its base with it, as torch moves the whole storage; other views of the same
    data taken earlier keep the old memory (ember has no storage object they could follow).

    >>> t = ember.zeros(3).share_memory_()
    >>> t.is_shared()
    True
    """
    data = self._data
    if self.device.type == "cuda":
        return self
    if not isinstance(data, np.ndarray):
        raise RuntimeError(
            f"share_memory_: a tensor with layout {self.layout} cannot be moved to shared memory"
        )
    if _shared_memory.is_shared(data):
        return self
    base = self._base
    if base is not None and _shared_memory.can_move_with_base(data, base._data):
        # torch moves the whole storage: the base goes, and this view is remade inside it
        start = _shared_memory.address(data) - _shared_memory.address(base._data)
        base.share_memory_()
        self._data = _shared_memory.view_at(base._data, start, data)
    else:
        self._data = _shared_memory.share_array(data)
    return self


for _name, _value in {
    "is_cpu": property(lambda self: self.device.type == "cpu"),
    "is_meta": property(lambda self: self.device.type == "meta"),
    "is_sparse": False,
    "is_sparse_csr": False,
    "is_quantized": False,
    "is_nested": False,
    "is_mkldnn": False,
    "is_mps": False,
    "is_xla": False,
    "is_xpu": False,
    "is_ipu": False,
    "is_vulkan": False,
    "is_maia": False,
    "is_mtia": False,
    "name": None,
    "output_nr": property(lambda self: self._out_nr if self._grad_fn is not None else 0),
}.items():
    setattr(T, _name, _value)

T.get_device = get_device
T.is_nonzero = is_nonzero
T.is_same_size = is_same_size
T.is_signed = is_signed
T.dim_order = dim_order
T.storage_offset = storage_offset
T.is_inference = lambda self: bool(getattr(self, "_inference", False))
T.is_pinned = lambda self, device=None: False
T.pin_memory = lambda self, device=None: self
T.is_shared = is_shared
T.share_memory_ = share_memory_
T.is_neg = lambda self: False
T.resolve_neg = lambda self: self


# --- complex numbers ----------------------------------------------------------------------
# ember materialises conj, so no tensor carries a lazy conjugate bit
T.is_conj = lambda self: False
T.resolve_conj = lambda self: self
T.is_complex = lambda self: self._data.dtype.kind == "c"
T.conj = cx.conj
T.conj_physical = cx.conj_physical
T.sgn = cx.sgn
T.cfloat = cx.cfloat
T.cdouble = cx.cdouble


def conj_physical_(self: Tensor) -> Tensor:
    if self._data.dtype.kind != "c":
        return self
    from . import _inplace

    return _inplace.apply_inplace(self, cx.conj, (), "conj_physical_", needs_old=True)


def angle(self: Tensor) -> Tensor:
    """The argument of each element: atan2(imag, real) for complex tensors; for real ones 0
    for non-negative values and π for negative ones (NaN stays NaN), gradient zero."""
    return cx.angle(self)


def _set_part(getter):
    def setter(self: Tensor, value) -> None:
        getter(self).copy_(value)

    return setter


T.conj_physical_ = conj_physical_
T.real = property(cx.real, _set_part(cx.real))
T.imag = property(cx.imag, _set_part(cx.imag))
T.angle = angle


# --- in-place shape changes ---------------------------------------------------------------
def _reshape_in_place(name: str, view_fn):
    def method(self: Tensor, *args, **kwargs):
        tracking = grad_mode.state.enabled and self._rg
        if tracking and self._grad_fn is None:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation."
            )
        if tracking and self._base is not None:
            raise RuntimeError(
                f"{name}: changing the shape of a view of a tensor that requires grad in place "
                "is not supported; use the out-of-place form"
            )
        new = view_fn(self, *args, **kwargs)
        self._data = new._data
        if tracking:
            self._grad_fn, self._out_nr = new._grad_fn, new._out_nr
        return self

    method.__name__ = method.__qualname__ = name
    return method


T.squeeze_ = _reshape_in_place("squeeze_", lambda self, *dim: sh.squeeze(self, *dim))
T.unsqueeze_ = _reshape_in_place("unsqueeze_", sh.unsqueeze)
T.t_ = _reshape_in_place("t_", sh.t)
T.transpose_ = _reshape_in_place("transpose_", sh.transpose)
T.swapaxes_ = _reshape_in_place("swapaxes_", sh.transpose)
T.swapdims_ = _reshape_in_place("swapdims_", sh.transpose)


def _as_strided_view(self, size, stride, storage_offset=None):
    from .ops.shape_composites import as_strided

    return as_strided(self, size, stride, storage_offset)


T.as_strided_ = _reshape_in_place("as_strided_", _as_strided_view)


def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """Change the shape in place, keeping the leading elements (new ones uninitialised)."""
    if len(sizes) == 1 and not isinstance(sizes[0], int):
        sizes = tuple(sizes[0])
    if self._rg:
        raise RuntimeError("cannot resize variables that require grad")
    xp = array_module(self._data)
    flat = self._data.reshape(-1)
    count = 1
    for s in sizes:
        count *= s
    if count <= flat.size:
        new = flat[:count].reshape(sizes).copy()
    else:
        new = xp.empty(count, dtype=self._data.dtype)
        new[: flat.size] = flat
        new = new.reshape(sizes)
    self._data = new
    self._vc[0] += 1
    return self


T.resize_ = resize_
T.resize_as_ = lambda self, other, memory_format=None: resize_(self, tuple(other.shape))
T.resize = lambda self, *sizes: resize_(self.detach().clone(), *sizes)
T.resize_as = lambda self, other: resize_(self.detach().clone(), tuple(other.shape))


# --- element-wise Python callbacks (CPU, no autograd, as PyTorch) -------------------------
def apply_(self: Tensor, callable) -> Tensor:
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    if self._rg and grad_mode.state.enabled:
        raise RuntimeError(
            "Can't call apply_() on Variable that requires grad. Use var.detach().apply_() instead."
        )
    flat = self._data.reshape(-1)
    for i in builtins.range(flat.size):
        flat[i] = callable(flat[i].item())
    self._vc[0] += 1
    return self


def map_(self: Tensor, other: Tensor, callable) -> Tensor:
    if self.device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    other_data = array_module(self._data).broadcast_to(other._data, self._data.shape)
    flat, oflat = self._data.reshape(-1), other_data.reshape(-1)
    for i in builtins.range(flat.size):
        flat[i] = callable(flat[i].item(), oflat[i].item())
    self._vc[0] += 1
    return self


T.apply_ = apply_
T.map_ = map_


# --- construction ---------------------------------------------------------------------------
def new(self: Tensor, *args, device=None) -> Tensor:
    """PyTorch's legacy ``x.new(...)``: sizes give an uninitialised tensor of x's dtype and
    device, a sequence gives its values."""
    device = device if device is not None else self.device
    if not args:
        return _creation.empty(0, dtype=self.dtype, device=device)
    if len(args) == 1 and not isinstance(args[0], int):
        data = args[0]
        if isinstance(data, tuple) and builtins.all(isinstance(s, int) for s in data):
            return _creation.empty(*data, dtype=self.dtype, device=device)
        return _creation.tensor(data, dtype=self.dtype, device=device)
    return _creation.empty(*args, dtype=self.dtype, device=device)


def new_empty_strided(
    self: Tensor, size, stride, *, dtype=None, device=None, requires_grad: bool = False
) -> Tensor:
    from ._factories import empty_strided

    return empty_strided(
        size,
        stride,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    from . import _inplace

    def fill(old):
        data = old._data.copy()
        xp = array_module(data)
        if data.ndim == 2:
            rows, cols = data.shape
            flat = data.reshape(-1)  # a view: data is a fresh contiguous copy
            step = cols + 1
            # without wrap the diagonal stops at the last column; with it, it restarts
            # every cols + 1 rows (PyTorch's rule for tall matrices)
            stop = flat.size if wrap else builtins.min(rows, cols) * step
            flat[:stop:step] = fill_value
        else:
            idx = xp.arange(data.shape[0])
            data[(idx,) * data.ndim] = fill_value
        from .ops._dispatch import wrap as wrap_array

        return wrap_array(data)

    return _inplace.apply_inplace(self, fill, (), "fill_diagonal_", needs_old=False)


def bernoulli(self: Tensor, p=None, *, generator=None) -> Tensor:
    return _creation.bernoulli(self, p, generator=generator)


def multinomial(
    self: Tensor, num_samples: int, replacement: bool = False, *, generator=None
) -> Tensor:
    return _creation.multinomial(self, num_samples, replacement, generator=generator)


def where(self: Tensor, condition, other) -> Tensor:
    return ew.where(condition, self, other)


def dist(self: Tensor, other, p=2) -> Tensor:
    return (self - other).norm(p)


def narrow_copy(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    if self.dim() and dim >= self.dim():  # torch's narrow_copy kernel checks this one itself
        raise RuntimeError(
            "Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false."
        )
    if length < 0:  # torch's narrow_copy calls it a bounds error, narrow a sign error
        sh.narrow(self, dim, start, 0)  # dim and start checked as narrow checks them
        size, start = self.shape[dim], int(start)
        start = start + size if start < 0 else start
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return sh.narrow(self, dim, start, length).clone()


T.new = new
T.new_empty_strided = new_empty_strided
T.fill_diagonal_ = fill_diagonal_
T.bernoulli = bernoulli
T.multinomial = multinomial
T.where = where
T.dist = dist
T.narrow_copy = narrow_copy


def as_subclass(self: Tensor, cls) -> Tensor:
    if cls is not Tensor:
        raise TypeError(f"as_subclass: ember tensors have no subclasses, got {cls.__name__}")
    return self


T.as_subclass = as_subclass


# --- removed in 1.9 (ember.eig and Tensor.eig alike): calling one raises PyTorch's message ---
def _removed(name: str, advice: str):
    def function(*args, **kwargs):
        raise RuntimeError(
            f"This function was deprecated since version 1.9 and is now removed. {advice}"
        )

    function.__name__ = function.__qualname__ = name
    return function


matrix_rank = _removed("matrix_rank", "Please use the `torch.linalg.matrix_rank` function instead.")
lstsq = _removed("lstsq", "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.")
symeig = _removed("symeig", "Use `torch.linalg.eigh` or `torch.linalg.eigvalsh` instead.")
eig = _removed("eig", "Use `torch.linalg.eig` or `torch.linalg.eigvals` instead.")
solve = _removed("solve", "`torch.solve` is deprecated in favor of `torch.linalg.solve`.")
T.eig, T.lstsq, T.solve, T.symeig = eig, lstsq, solve, symeig  # (Tensor has no matrix_rank)

T.adjoint = lambda self: self.mH
T.is_distributed = lambda self: False
T.const_data_ptr = lambda self: self.data_ptr()
T.nonzero_static = lambda self, *, size, fill_value=-1: _shape_composites().nonzero_static(
    self, size=size, fill_value=fill_value
)
T.as_strided_scatter = lambda self, src, size, stride, storage_offset=None: (
    _shape_composites().as_strided_scatter(self, src, size, stride, storage_offset)
)


def _shape_composites():
    from .ops import shape_composites

    return shape_composites


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Same memory, shape and strides (what ``set_`` would have made them share)."""
    a, b = self._data, tensor._data
    return (
        a.shape == b.shape
        and a.strides == b.strides
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    )


T.is_set_to = is_set_to
