"""Tensor: an array (NumPy or CuPy) plus the autograd fields PyTorch users expect.

The methods that run ops (``x.add``, ``x.sum``, operators ...) are attached by
``_tensor_methods`` so that this file keeps to the tensor's own state.
"""

from __future__ import annotations

import warnings

from . import _backend
from . import _dtype as dt
from ._layout import strided as _strided
from .autograd import _cuts
from .autograd import grad_mode as _gm
from .autograd._watch import tensor_created as _tensor_created
from .autograd._watch import view_made as _view_made
from .autograd._watch import watch as _watch
from .autograd.node import TENSOR_LAYER as _TENSOR_LAYER
from .autograd.node import AccumulateGrad, RemovableHandle, _HookDict, add_hook

_new = object.__new__


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``ember.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out


class Tensor:
    """A multi-dimensional array that can record the operations applied to it.

    Example::
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> (x * x).sum().backward()
        >>> x.grad
        tensor([2., 4.])
    """

    # Defaults live on the class: a fresh tensor stores only its data and version counter.
    _rg = False
    _grad_fn = None
    _view_version = 0  # the version at which a view's _grad_fn was last derived from its base
    _out_nr = 0
    _grad = None
    _base = None
    _view_fn = None
    _grad_acc = None
    _post_acc_hooks = None
    _retains_grad = False
    _cut_log = None  # (kind, op) -> source line: where this leaf's value left the graph
    _cut_origin = None  # (kind, op, source line) when this tensor came out of a cut
    _zeroed = None  # (to what, source line, backward run) of the last zero_grad
    __array_priority__ = 1000  # NumPy defers to Tensor's reflected operators

    def __new__(cls, *args, **kwargs):
        from . import _creation

        if len(args) == 1 and not isinstance(args[0], int):
            return cls._wrap(_creation.tensor(args[0], dtype=dt.get_default_dtype())._data)
        shape = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
        return cls._wrap(_creation.empty(*shape, **kwargs)._data)

    @classmethod
    def _wrap(cls, data):
        t = _new(cls)
        t._data = data
        t._vc = [0]
        if _watch.on:
            _tensor_created(t)
        return t

    # --- metadata -----------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim, "size")]

    @property
    def dtype(self) -> dt.dtype:
        return dt.FROM_NUMPY[self._data.dtype]

    @property
    def device(self) -> _backend.device:
        return _backend.device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    def stride(self, dim: int | None = None):
        item = self._data.itemsize
        strides = tuple(s // item for s in self._data.strides)
        if strides and not any(strides) and self.device.type == "meta":
            strides = _backend.row_major_strides(self._data.shape)  # no memory: as if dense
        if dim is None:
            return strides
        return strides[_wrap_dim(dim, self._data.ndim, "stride")]

    def is_contiguous(self, memory_format=None) -> bool:
        from . import _memory_format as mf

        if memory_format is None:
            return bool(self._data.flags.c_contiguous) or self.device.type == "meta"
        return mf.is_contiguous(self._data, mf.check(memory_format, "is_contiguous"))

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f" or self.dtype.category == dt.FLOAT

    def is_complex(self) -> bool:
        return False

    def data_ptr(self) -> int:
        """The address of the tensor's first element (on the GPU for a CUDA tensor)."""
        data = self._data
        if self.device.type == "cpu":
            return int(data.__array_interface__["data"][0])
        if self.device.type == "meta":
            return 0  # no memory (as torch)
        return int(data.data.ptr)  # CuPy's pointer already includes a view's offset

    @property
    def layout(self):
        """``ember.strided``: a dense tensor (a ``str`` subclass, equal to ``"strided"``)."""
        return _strided

    @property
    def _version(self) -> int:
        return self._vc[0]

    # --- autograd state --------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._rg

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        value = bool(value)
        if self._grad_fn is not None:
            if value:
                return
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach()."
            )
        if value and self.dtype.category < dt.FLOAT:
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients"
            )
        self._rg = value

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        self.requires_grad = requires_grad
        return self

    @property
    def grad_fn(self):
        """The node that created this tensor (None for leaves)."""
        if self._base is not None:
            return refresh_view_grad_fn(self)
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (torch's private method; torchviz calls
        it to draw a view's base)."""
        return self._base is not None

    @property
    def grad(self):
        if self._grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor.",
                UserWarning,
                stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got {value!r}")
            if value._data.dtype != self._data.dtype:
                raise RuntimeError("assigned grad has data of a different type")
            if value._data.shape != self._data.shape:
                raise RuntimeError("assigned grad has data of a different size")
            if type(value._data) is not type(self._data) and value.device != self.device:
                raise RuntimeError("assigned grad has data located on a different device")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor during backward."""
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        import weakref

        node = self._grad_fn
        if node._retained is None:
            node._retained = {}
        node._retained[self._out_nr] = weakref.ref(self)
        node._hooked = True
        node._fast = False
        self._retains_grad = True

    def _accumulator(self) -> AccumulateGrad:
        acc = self._grad_acc
        if acc is None:
            acc = self._grad_acc = AccumulateGrad(self)
        return acc

    def _edge(self):
        """Where a gradient for this tensor goes: (node, output_nr)."""
        fn = self._grad_fn if self._base is None else refresh_view_grad_fn(self)
        if fn is not None:
            return (fn, self._out_nr)
        return (self._accumulator(), 0)

    def register_hook(self, hook) -> RemovableHandle:
        """``hook(grad)`` runs when this tensor's gradient is computed; it may return a new one.

        Example::
            >>> h = x.register_hook(lambda g: g * 2)
            >>> h.remove()
        """
        if not self._rg:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        node, nr = self._edge()
        return node._add_tensor_hook(nr, hook)

    def register_post_accumulate_grad_hook(self, hook) -> RemovableHandle:
        """``hook(tensor)`` runs after a gradient was accumulated into this leaf's ``.grad``."""
        if self._grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if self._post_acc_hooks is None:
            self._post_acc_hooks = _HookDict()
        return add_hook(self._post_acc_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate this tensor's gradient into the graph leaves (``ember.autograd.backward``)."""
        _autograd_backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> Tensor:
        """A tensor sharing data and version counter with this one, outside the graph."""
        out = self._detach()
        if self._rg:
            _cuts.note("detached", "detach()", self, out)
        return out

    def _detach(self) -> Tensor:
        # ember's own detaching: not a user's cut, so explain() does not report it
        out = Tensor._wrap(self._data)
        out._vc = self._vc
        if _watch.on:
            _view_made(out)
        return out

    def detach_(self) -> Tensor:
        if self._base is not None and self._base._rg:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        if self._rg:  # the tensor is both what is cut and what comes out of the cut
            _cuts.note("detached", "detach_()", self, self)
        self._grad_fn = None
        self._rg = False
        return self

    @property
    def data(self) -> Tensor:
        out = Tensor._wrap(self._data)  # shares memory, not the version counter (PyTorch)
        if self._rg:
            _cuts.note("detached", ".data", self, out)
        return out

    @data.setter
    def data(self, value: Tensor) -> None:
        self._data = value._data

    # --- conversions ---------------------------------------------------------------------------
    def item(self):
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return self._data.reshape(()).item()

    def tolist(self):
        return _backend.move(self._data, _backend.CPU).tolist()

    def numpy(self, *, force: bool = False):
        if self._rg and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        if self.device.type != "cpu":
            if not force:
                raise TypeError(
                    f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() "
                    "to copy the tensor to host memory first."
                )
            return _backend.move(self._data, _backend.CPU)  # (a meta tensor raises: no data)
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self.device.type == "meta":
            return self.numpy()  # torch's TypeError
        data = self._detach().numpy(force=True)
        return data if dtype is None else data.astype(dtype)

    def __dlpack__(self, *args, **kwargs):
        if self._rg:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()).item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self.dtype.category == dt.FLOAT or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        from ._tensor_repr import tensor_repr

        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0 and self.device.type != "meta":
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, protocol):
        raise TypeError(
            "ember tensors are not pickled; save them with ember.save (safetensors) instead, "
            "or send them to other processes with ember.multiprocessing (shared memory)"
        )

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol at the moment."
            )
        out = type(self)._wrap(self._data.copy())
        out._rg = self._rg
        if self._grad is not None:
            out._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = out
        return out


def _autograd_backward(*args, **kwargs):
    global _autograd_backward
    from .autograd import backward

    _autograd_backward = backward  # bound on first use: autograd imports this module
    backward(*args, **kwargs)


def refresh_view_grad_fn(view: Tensor):
    """A view whose base was written in place since its grad_fn was set gets a fresh one,
    derived from the base's current graph (PyTorch regenerates it the same way)."""
    base = view._base
    if view._vc[0] == view._view_version or not base._rg:
        return view._grad_fn
    from ._inplace import replay_view

    with _gm.enable_grad():
        fresh = replay_view(base, view._view_fn)
    view._grad_fn, view._out_nr, view._rg = fresh._grad_fn, fresh._out_nr, fresh._rg
    view._view_version = view._vc[0]
    return view._grad_fn


def _wrap_dim(dim: int, ndim: int, op: str = "") -> int:
    """Turn a negative dim into a positive one, with PyTorch's IndexError when out of range."""
    n = ndim if ndim > 0 else 1
    if dim < -n or dim >= n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim + n if dim < 0 else dim


_TENSOR_LAYER.Tensor = Tensor  # the autograd machinery, below, sees Tensor through this
