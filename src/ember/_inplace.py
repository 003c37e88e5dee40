"""In-place ops: write a new value into a tensor's memory and rewrite its place in the graph.

Every in-place op is its out-of-place op plus this machinery: the new value is computed from a
snapshot of the old tensor (so formulas that need the old value still have it), written into
the tensor's memory, the version counter is bumped, and the tensor (or, for a view, its base,
through CopySlices) takes the new node as its grad_fn.
"""

from __future__ import annotations

from . import _backend
from . import _dtype as dt
from ._tensor import Tensor
from .autograd import _cuts, forward_rules
from .autograd import grad_mode as _gm
from .autograd.node import Node
from .ops._dispatch import array_module, record, result, wrap

LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_ERROR = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)


def _any_requires_grad(args) -> bool:
    for a in args:
        if isinstance(a, Tensor) and a._rg:
            return True
        if isinstance(a, (tuple, list)):
            if _any_requires_grad(a):
                return True
    return False


def _write(self: Tensor, new: Tensor, op: str, resize: bool = False) -> None:
    data, value = self._data, new._data
    if value.shape != data.shape and resize and self._base is None:
        # torch's addbmm_ writes through addbmm.out, which resizes a tensor that is no view
        data = self._data = array_module(data).empty(value.shape, dtype=data.dtype)
    if value.shape != data.shape:
        raise RuntimeError(
            f"{op}: output with shape {list(data.shape)} doesn't match the broadcast shape "
            f"{list(value.shape)}"
        )
    if value.dtype != data.dtype:
        have, want = dt.FROM_NUMPY[value.dtype], dt.FROM_NUMPY[data.dtype]
        if have.category > want.category:
            raise RuntimeError(
                f"result type {have.legacy_name} can't be cast to the desired output type "
                f"{want.legacy_name}"
            )
    if not _backend.writeable(data):
        raise RuntimeError(
            f"{op}: unsupported operation: more than one element of the written-to tensor refers "
            "to a single memory location. Please clone() the tensor before performing the "
            "operation."
        )
    if value is not data:
        xp = array_module(data)
        xp.copyto(data, value, casting="unsafe")
    self._vc[0] += 1


def apply_inplace(
    self: Tensor,
    fn,
    args: tuple,
    op: str,
    needs_old: bool = True,
    resize: bool = False,
    write_into=None,
) -> Tensor:
    """Run out-of-place ``fn(old, *args)`` and make its result the new value of ``self``
    (``resize``: of the result's shape, where ``self`` is no view). Outside the graph,
    ``write_into(self, *args)``, where given, writes into self's memory itself and says whether
    it did (an op that touches a few elements then writes only those)."""
    grad_on = _gm.state.enabled
    if not grad_on or not (self._rg or _any_requires_grad(args)):
        with _gm.no_grad():
            _cuts.state.quiet += 1  # writing into a tensor is not a use that cuts the graph
            try:
                if write_into is not None and write_into(self, *args):
                    self._vc[0] += 1
                    return self
                new = fn(self, *args)
            finally:
                _cuts.state.quiet -= 1
        _write(self, new, op, resize)
        return self
    base = self._base
    current_fn = self.grad_fn  # for a view, refreshed from its base when that changed
    if current_fn is None and self._rg:
        raise RuntimeError(LEAF_ERROR)
    if base is not None and base._grad_fn is None and base._rg:
        raise RuntimeError(VIEW_OF_LEAF_ERROR)
    old = Tensor._wrap(self._data.copy() if needs_old else self._data)
    old._rg, old._grad_fn, old._out_nr = self._rg, current_fn, self._out_nr
    new = fn(old, *args)
    _write(self, new, op, resize)
    if base is None:
        self._grad_fn, self._out_nr, self._rg = new._grad_fn, 0, new._rg
        return self
    _rebase_view(self, base, new)
    return self


class CopySlices(Node):
    """The base of a view that was modified in place: its gradient splits into the part outside
    the view (unchanged) and the part inside, which flows to the op that wrote the view."""

    def name(self) -> str:
        return "torch::autograd::CopySlices"  # torch's; its class is CopySlices

    def backward(self, g):
        from ._creation import ones

        g_view = replay_view(g, self.view_steps)
        mask = ones(g.shape, dtype=g.dtype, device=g.device)
        with _gm.no_grad():
            replay_view(mask, self.view_steps)._data[...] = 0
        return g * mask, g_view


def replay_view(t: Tensor, steps: tuple) -> Tensor:
    for fn, args in steps:
        t = fn(t, *args)
    return t


def _rebase_view(view: Tensor, base: Tensor, new: Tensor) -> None:
    node = CopySlices()
    node.view_steps = view._view_fn
    if base._rg:
        base_old = Tensor._wrap(base._data)
        base_old._rg, base_old._grad_fn, base_old._out_nr = True, base._grad_fn, base._out_nr
    else:
        base_old = None
    rebased = record(node, base._data, (base_old, new))
    base._grad_fn, base._out_nr, base._rg = rebased._grad_fn, 0, True
    fresh = replay_view(base, view._view_fn)
    view._grad_fn, view._out_nr, view._rg = fresh._grad_fn, fresh._out_nr, True
    view._view_version = view._vc[0]


# --- the values that fill / copy_ / random fills write --------------------------------------
class CopyBackwards(Node):
    def backward(self, g):
        return None, g


def copy_value(old: Tensor, src) -> Tensor:
    """The value ``old.copy_(src)`` writes: src broadcast to old's shape, in old's dtype."""
    xp = array_module(old._data)
    if isinstance(src, Tensor):
        data = src._data
        if type(data) is not type(old._data):
            from . import _backend

            data = _backend.move(data, old.device)
        try:
            value = xp.broadcast_to(data, old._data.shape).astype(old._data.dtype)
        except ValueError:
            raise RuntimeError(
                f"copy_: the size of src {list(src.shape)} must be broadcastable to the size of "
                f"self {list(old.shape)}"
            ) from None
        return result(CopyBackwards, value, (old, src))
    return wrap(xp.full(old._data.shape, src, dtype=old._data.dtype))


class FillBackward0(Node):
    def backward(self, g):
        # d/dself fill = 0, materialised as torch's zeros_like(grad): the overwritten tensor's
        # leaves get a zero gradient, not None
        xp = array_module(g._data)
        zeros = wrap(xp.zeros_like(g._data)) if self._edges[0] is not None else None
        return zeros, (g.sum() if len(self._edges) > 1 else None)


def _fill_jvp(node, tangents):
    """fill's tangent: the value's, broadcast; zero (torch gives one) where only self has one."""
    t_value = tangents[1] if len(tangents) > 1 else None
    given = t_value if t_value is not None else next(t for t in tangents if t is not None)
    shape, np_dtype = node._meta[0]
    zeros = wrap(array_module(given._data).zeros(shape, dtype=np_dtype))
    return zeros if t_value is None else zeros + t_value


forward_rules.RULES["FillBackward0"] = _fill_jvp


def fill_value(old: Tensor, value) -> Tensor:
    xp = array_module(old._data)
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value._data.ndim} dimensions."
            )
        data = xp.full(old._data.shape, value._data, dtype=old._data.dtype)
        return result(FillBackward0, data, (old, value))
    return result(FillBackward0, xp.full(old._data.shape, value, dtype=old._data.dtype), (old,))


def random_value(old: Tensor, sample) -> Tensor:
    """A constant (non-differentiable) value drawn by ``sample(shape)``, placed in the order
    torch's in-place kernels fill ``old``'s memory (a transposed view gets torch's values)."""
    from ._random.layout import draw_in_fill_order

    array = old._data
    if old.device.type == "meta":  # nothing to draw (the generator's stream stays put)
        return result(FillBackward0, array.copy(), (old,))
    data = draw_in_fill_order(sample, array.shape, array.strides).astype(array.dtype)
    if old.device.type != "cpu":
        data = _backend.move(data, old.device)
    return result(FillBackward0, data, (old,))
