"""Forward-mode AD with PyTorch's ``torch.autograd.forward_ad`` API.

A dual tensor is its primal's value as a graph input that requires grad, so the ops run on it
record ember's ordinary graph; the level remembers its tangent. ``unpack_dual(y)`` walks y's
graph forward from the dual inputs, in topological order, and applies to each node its JVP
rule from ``forward_rules`` (a rule per node class, or the node's VJP transposed). Tangents
are cached per node for the life of the level, so unpacking many outputs walks each node once.

Differences from PyTorch: a dual tensor (and what is computed from it) reports
``requires_grad=True``, and ops run under ``no_grad`` record no graph, so their results carry
no tangent.
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

from . import grad_mode as _gm
from .engine import _graph_order
from .forward_rules import jvp_of_node
from .node import AccumulateGrad

__all__ = [
    "UnpackedDualTensor",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
    "dual_level",
]


class _Level:
    """One forward-AD level: the seeded nodes' tangents and the tangents computed so far."""

    def __init__(self, index: int):
        self.index = index
        # node -> tangents of its outputs (a tuple, None for an output with no tangent)
        self.seeds: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


_levels: list = []  # the live levels; PyTorch allows one at a time
# the AccumulateGrad nodes of dual tensors: graph inputs of ember's making, not a user's leaves
_dual_leaves: weakref.WeakSet = weakref.WeakSet()


def _current_index() -> int:
    return _levels[-1].index if _levels else -1


def enter_dual_level() -> int:
    """Enter a new forward grad level; returns its index (0: PyTorch allows no nesting).

    Example::
        >>> level = ember.autograd.forward_ad.enter_dual_level()
        >>> ember.autograd.forward_ad.exit_dual_level(level=level)
    """
    if _levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _levels.append(_Level(len(_levels)))
    return _levels[-1].index


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit the last level entered, dropping every tangent made in it."""
    if level is None:
        level = _current_index()
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    if level != _current_index():
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    _levels.pop()


def _level(level: int | None) -> _Level | None:
    """The live level of that index (the current one for None); None if there is none."""
    index = _current_index() if level is None else level
    for lv in _levels:
        if lv.index == index:
            return lv
    return None


def _level_for_make_dual(level: int | None) -> _Level:
    index = _current_index() if level is None else level
    if index < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    lv = _level(index)
    if lv is not None:
        return lv
    if not _levels and index == 0:
        raise RuntimeError(
            "Trying to access a forward AD level with an invalid index. This index was either "
            "not created or is already deleted."
        )
    raise RuntimeError("Invalid level given to _make_dual")


def _seed_node(t):
    """The node whose output is ``t`` in the graph (its AccumulateGrad for a leaf)."""
    return t._edge()


def make_dual(tensor, tangent, *, level: int | None = None):
    """``tensor``'s value with ``tangent`` attached: ops on it carry the tangent forward.

    Example::
        >>> import ember.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     x = fwAD.make_dual(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 0.0]))
        ...     fwAD.unpack_dual(x * x).tangent
        tensor([2., 0.])
    """
    lv = _level_for_make_dual(level)
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}"
        )
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}"
        )
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}."
        )
    if tensor._rg and _tangent_in(lv, tensor) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the "
            f"same level {lv.index} is not supported."
        )
    # the tangent is kept as given (unpack_dual(dual).tangent is tangent, as in PyTorch); one
    # that requires grad makes the tangents computed from it differentiable in turn
    if tensor._rg:
        # keep the backward graph to ``tensor``: the dual is an identity op on it
        with _gm.enable_grad():
            dual = tensor.view_as(tensor)
    else:
        dual = tensor._detach()
        dual._rg = True  # a graph input, so the ops run on it record their graph
    node, _ = _seed_node(dual)
    lv.seeds[node] = (tangent,)
    if node.__class__ is AccumulateGrad:
        _dual_leaves.add(node)
    return dual


class UnpackedDualTensor(NamedTuple):
    """``unpack_dual``'s result: the primal and its tangent (None when it has none)."""

    primal: object
    tangent: object


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """The value and the tangent (or None) of ``tensor`` at the level.

    Example::
        >>> import ember.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     x = fwAD.make_dual(ember.tensor(3.0), ember.tensor(1.0))
        ...     fwAD.unpack_dual(x ** 2)
        UnpackedDualTensor(primal=tensor(9.), tangent=tensor(6.))
    """
    lv = _level(level)
    if lv is None or not tensor._rg:
        return UnpackedDualTensor(tensor, None)
    node, nr = tensor._edge()
    tangents, from_real_leaf = _tangents(lv.seeds, node, lv.cache)
    tangent = tangents[nr] if tangents is not None else None
    primal = tensor if from_real_leaf else tensor._detach()
    return UnpackedDualTensor(primal, tangent)


def _tangent_in(lv: _Level, t):
    node, nr = t._edge()
    tangents, _ = _tangents(lv.seeds, node, lv.cache)
    return None if tangents is None else tangents[nr]


def _tangents(seeds, root, cache) -> tuple:
    """(the tangents of ``root``'s outputs or None, whether its graph reaches a leaf that
    requires grad other than a dual). ``cache`` maps node -> such a pair and is filled."""
    done = cache.get(root)
    if done is None:
        _walk(seeds, reversed(_graph_order([root])), cache)
        done = cache[root]
    return done


def _walk(seeds, order, cache) -> None:
    """Fill ``cache`` for the nodes of ``order`` (each after the nodes that feed it)."""
    enabled = _gm.state.enabled
    for node in order:
        if node in cache:
            continue
        seed = seeds.get(node)
        if seed is not None:
            real = node.__class__ is not AccumulateGrad or any(t._rg for t in seed)
            cache[node] = (seed, real)
            continue
        if node.__class__ is AccumulateGrad:
            cache[node] = (None, node not in _dual_leaves and node.variable is not None)
            continue
        inputs = []
        any_tangent = False
        real = False
        for edge in node._edges:
            if edge is None:
                inputs.append(None)
                continue
            tangents, reaches_leaf = cache[edge[0]]
            real = real or reaches_leaf
            t = None if tangents is None else tangents[edge[1]]
            if t is not None:
                any_tangent = True
                real = real or t._rg
            inputs.append(t)
        # record the tangent's own graph only when something could differentiate it later
        tangents = jvp_of_node(node, inputs, real and enabled) if any_tangent else None
        cache[node] = (tangents, real)


def propagate_graph(seeds: dict, output):
    """The tangent of ``output`` given the tangents ``seeds`` (node -> (tangent,)) of some
    nodes of its graph, with a cache of its own (a private graph)."""
    if not output._rg:
        return None
    node, nr = output._edge()
    tangents, _ = _tangents(seeds, node, {})
    return None if tangents is None else tangents[nr]


class ForwardPlan:
    """The graph of some outputs in forward order, walked once per set of seed tangents
    (jacfwd: one walk per basis vector, the graph recorded once)."""

    def __init__(self, outputs: list):
        self.outputs = outputs
        roots = [out._edge()[0] for out in outputs if out._rg]
        self.order = list(reversed(_graph_order(roots))) if roots else []

    def tangents(self, seeds: dict) -> list:
        """The outputs' tangents (None: none) for ``seeds``: node -> (tangent,)."""
        cache: dict = {}
        _walk(seeds, self.order, cache)
        result = []
        for out in self.outputs:
            if not out._rg:
                result.append(None)
                continue
            node, nr = out._edge()
            tangents = cache[node][0]
            result.append(None if tangents is None else tangents[nr])
        return result


class dual_level(_gm._DecoratorContextManager):
    """Context manager for forward AD: makes a level on entry, drops its tangents on exit.

    Example::
        >>> import ember.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     y = fwAD.make_dual(ember.tensor(2.0), ember.tensor(1.0)).exp()
        ...     fwAD.unpack_dual(y).tangent
        tensor(7.3891)
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()
