"""What the transforms share: choosing arguments by ``argnums``, making them differentiable, and
handing results back as torch.func does (without graph, unless something outside tracks them).

ember has no functorch levels. A transform differentiates with respect to fresh leaves (or,
for an argument that already requires grad, a view of it), and asks afterwards whether its
output's graph reaches anything else that requires grad (a closure's parameter, an outer
transform's variable, a forward-AD dual). Only then does it keep the graph of what it returns,
so an outer transform or ``backward()`` differentiates through it, as through torch's levels.
"""

from __future__ import annotations

from .._creation import eye
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from ..autograd.node import AccumulateGrad
from ..utils._pytree import tree_flatten, tree_map


def slice_argnums(args: tuple, argnums, as_tuple: bool = True):
    """The arguments ``argnums`` picks: a tuple of them (for an int too, when ``as_tuple``)."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    wrapped = wrap_argnums(argnums, len(args))
    if isinstance(wrapped, int):
        return (args[wrapped],) if as_tuple else args[wrapped]
    return tuple(args[i] for i in wrapped)


def wrap_argnums(argnums, num_args: int):
    """``argnums`` checked and with negative indices made positive."""
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        if len(set(argnums)) != len(argnums):
            raise RuntimeError(f"argnums elements must be unique, got {argnums}")
        return tuple(_wrap_argnum(a, num_args) for a in argnums)
    return _wrap_argnum(argnums, num_args)


def _wrap_argnum(argnum, num_args: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if -num_args <= argnum < num_args:
        return argnum % num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def replace_args(args: tuple, new_args: tuple, argnums) -> tuple:
    """``args`` with the ones at ``argnums`` replaced by ``new_args`` (one per argnum)."""
    wrapped = wrap_argnums(argnums, len(args))
    positions = (wrapped,) if isinstance(wrapped, int) else wrapped
    out = list(args)
    for i, value in zip(positions, new_args):
        out[i] = value
    return tuple(out)


class Variables:
    """The tensors a transform differentiates with respect to, made from a pytree of inputs."""

    def __init__(self, tree):
        self.own_leaves: set = set()  # AccumulateGrad nodes of the fresh leaves made here
        self.tree = tree_map(self._make, tree)
        self.flat, self.spec = tree_flatten(self.tree)

    def _make(self, t):
        if not isinstance(t, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(t)}")
        with enable_grad():
            if t.requires_grad:
                # an alias in the graph that tracks t: the derivative counts only the uses
                # through this argument, and stays differentiable for whoever tracks t
                return t.view_as(t)
        leaf = t._detach().requires_grad_(True)
        self.own_leaves.add(leaf._edge()[0])
        return leaf


def tracked_outside(outputs, own_leaves: set) -> bool:
    """Whether the graph of ``outputs`` reaches a tensor that requires grad other than the
    transform's own fresh leaves: then what the transform returns keeps its graph."""
    stack = [t._edge()[0] for t in outputs if isinstance(t, Tensor) and t._rg]
    seen = set(stack)
    while stack:
        node = stack.pop()
        if node.__class__ is AccumulateGrad:
            if node not in own_leaves and node.variable is not None:
                return True
            continue
        for edge in node._edges:
            if edge is not None and edge[0] not in seen:
                seen.add(edge[0])
                stack.append(edge[0])
    return False


def release(tree, keep_graph: bool):
    """A transform's output or aux as torch.func hands it back: tensors, detached unless
    ``keep_graph`` (something outside the transform tracks them)."""

    def unwrap(x):
        if isinstance(x, Tensor):
            return x if keep_graph else x._detach()
        if isinstance(x, tuple):  # PyTorch lets a tuple leaf (is_leaf=...) through too
            return tree_map(unwrap, tuple(x))
        raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")

    return tree_map(unwrap, tree)


def split_aux(output, has_aux: bool, api: str):
    """(output, aux) of a function's result, with torch's error when has_aux is not honoured."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(
            f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True"
        )
    return output


def check_real(api: str, flat, what: str) -> None:
    for i, t in enumerate(flat):
        if isinstance(t, Tensor) and t.is_complex():
            raise RuntimeError(
                f"{api}: Expected all {what} to be real but received complex tensor at "
                f"flattened input idx: {i}"
            )


def check_outputs(api: str, flat_outputs: list, floating: bool = False) -> None:
    """torch.func's checks of what ``f`` returned (flattened): at least one output, each a
    Tensor, and with ``floating`` (vjp) each floating-point or complex."""
    if not flat_outputs:
        raise RuntimeError(
            f"{api}: Expected f to be a function that has non-empty output (got output = "
            f"{flat_outputs})"
        )
    for o in flat_outputs:
        if not isinstance(o, Tensor):
            raise RuntimeError(
                f"{api}: expected f(*primals) to return only tensors, got unsupported type "
                f"{type(o)}"
            )
        if floating and not (o.is_floating_point() or o.is_complex()):
            raise RuntimeError(
                "vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                f"Tensor with dtype {o.dtype}"
            )


def unit_tensors_like(t: Tensor) -> tuple:
    """The unit tensors shaped like ``t``, one per element, in order (a Jacobian's basis)."""
    n = t.numel()
    return eye(n, dtype=t.dtype, device=t.device).reshape((n, *t.shape)).unbind(0)
