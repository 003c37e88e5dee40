"""Custom differentiable functions: ``class MyFn(ember.autograd.Function)``.

As in PyTorch, the ``ctx`` that forward and backward receive is the graph node itself.
"""

from __future__ import annotations

import functools

from . import _watch
from . import grad_mode as _gm
from .node import Node


def _is_floating(np_dtype) -> bool:
    """float16/32/64 and bfloat16 (which NumPy files under kind 'V' through ml_dtypes)."""
    from .. import _dtype as dt

    d = dt.FROM_NUMPY.get(np_dtype)
    return d is not None and d.category >= dt.FLOAT  # floating or complex


class FunctionCtx:
    """What forward tells backward: saved tensors, dirty and non-differentiable outputs."""

    _to_save = ()
    _dirty = ()
    _non_differentiable = ()
    materialize_grads = True
    needs_input_grad: tuple = ()

    def save_for_backward(self, *tensors) -> None:
        self._to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        self._saved_for_forward = tensors

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple:
        return self.saved_tensors_checked()


class BackwardCFunction(FunctionCtx, Node):
    """The node recorded for one call of a custom Function."""

    _fn_cls = None
    _input_is_tensor: tuple = ()
    num_outputs = 1
    _fast = False

    def saved_tensors_checked(self) -> tuple:
        return Node.unpack_saved(self)

    def apply(self, grads: list) -> tuple:
        from .._tensor import Tensor

        if self.materialize_grads:
            from .._creation import zeros

            grads = [
                g if g is not None or dt_np is None else zeros(shape, dtype=_dtype_of(dt_np))
                for g, (shape, dt_np) in zip(grads, self._meta)
            ]
        out = self._fn_cls.backward(self, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        expected = len(self._edges)
        if len(out) > expected and all(g is None for g in out[expected:]):
            out = out[:expected]
        if len(out) != expected:
            raise RuntimeError(
                f"function {self.name()} returned an incorrect number of gradients (expected "
                f"{expected}, got {len(out)})"
            )
        for i, g in enumerate(out):
            if g is None:
                continue
            if not isinstance(g, Tensor):
                raise TypeError(
                    f"function {self.name()} returned a gradient of type {type(g).__name__} at "
                    f"position {i}: expected a Tensor or None"
                )
            if not self._input_is_tensor[i]:
                raise RuntimeError(
                    f"function {self.name()} returned a gradient different than None at position "
                    f"{i + 1}, but the corresponding forward input was not a Variable"
                )
            edge = self._edges[i]
            if edge is not None:
                want = edge[0]._meta[edge[1]][1]
                if not _is_floating(g._data.dtype) and _is_floating(want):
                    raise RuntimeError(
                        f"Function {self.name()} returned an invalid gradient at index {i} - "
                        f"expected dtype {_dtype_of(want)} but got {g.dtype}"
                    )
        return out


def _dtype_of(np_dtype):
    from .._dtype import FROM_NUMPY

    return FROM_NUMPY[np_dtype]


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_fn_cls": cls})


class Function(metaclass=_FunctionMeta):
    """Base class for custom ops with hand-written backward.

    Example::
        >>> class Exp(ember.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         y = x.exp()
        ...         ctx.save_for_backward(y)
        ...         return y
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         (y,) = ctx.saved_tensors
        ...         return g * y
        >>> Exp.apply(ember.ones(2, requires_grad=True))
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        return _NO_SETUP

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor

        node = cls._backward_cls()
        is_tensor = tuple(isinstance(a, Tensor) for a in args)
        node._input_is_tensor = is_tensor
        node.needs_input_grad = tuple(
            t and a._rg and _gm.state.enabled for t, a in zip(is_tensor, args)
        )
        record = _gm.state.enabled and any(node.needs_input_grad)
        uses_setup = cls.setup_context is not Function.setup_context
        with _gm.no_grad():
            if uses_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, outputs)
            else:
                outputs = cls.forward(node, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if not record:
            return outputs
        _check_dirty(node, args)
        node._edges = tuple(a._edge() if t and a._rg else None for t, a in zip(is_tensor, args))
        saved = node._to_save
        node._saved = saved
        node._saved_versions = tuple(t._vc[0] if isinstance(t, Tensor) else None for t in saved)
        node.num_outputs = len(outs)
        final = []
        meta = []
        non_diff = {id(t) for t in node._non_differentiable}
        dirty = {id(t) for t in node._dirty}
        for i, out in enumerate(outs):
            if not isinstance(out, Tensor):
                final.append(out)
                meta.append(((), None))
                continue
            if any(out is a for a in args) and id(out) not in dirty:
                alias = Tensor._wrap(out._data)
                alias._vc = out._vc
                out = alias
            meta.append((out._data.shape, out._data.dtype))
            if id(out) in non_diff or not _is_floating(out._data.dtype):
                if out._grad_fn is None and id(out) not in dirty:
                    out._rg = False
                final.append(out)
                continue
            out._rg = True
            out._grad_fn = node
            out._out_nr = i
            final.append(out)
        node._meta = tuple(meta)
        if _watch.watch.on:
            for out in final:
                if isinstance(out, Tensor):
                    _watch.node_created(node, out, saved)
        return final[0] if single else tuple(final)


_NO_SETUP = object()


def _check_dirty(node, args) -> None:
    for t in node._dirty:
        if t._grad_fn is None and t._rg:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation."
            )
        t._vc[0] += 1


class _OnceDifferentiableBackward(Node):
    def backward(self, g):
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
        )


def once_differentiable(fn):
    """Mark a backward that cannot itself be differentiated (it runs with grad mode off)."""

    @functools.wraps(fn)
    def wrapper(ctx, *grads):
        from .._tensor import Tensor
        from ..ops._dispatch import record

        with _gm.no_grad():
            out = fn(ctx, *grads)
        if not _gm.is_grad_enabled() or not any(isinstance(g, Tensor) and g._rg for g in grads):
            return out
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        wrapped = []
        for g in outs:
            if isinstance(g, Tensor):
                g = record(
                    _OnceDifferentiableBackward(),
                    g._data,
                    tuple(x for x in grads if isinstance(x, Tensor)),
                )
            wrapped.append(g)
        return wrapped[0] if single else tuple(wrapped)

    return wrapper
