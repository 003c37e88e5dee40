"""Forward-mode transforms on ``ember.autograd.forward_ad``: jvp, jacfwd, and hessian (forward
over reverse), over pytrees of tensors."""

from __future__ import annotations

import functools
from collections.abc import Callable

from .._creation import zeros_like
from .._tensor import Tensor
from ..autograd import forward_ad as fwAD
from ..autograd.grad_mode import enable_grad
from ..ops.shape import stack
from ..utils._pytree import tree_flatten, tree_map, tree_unflatten
from ._arguments import (
    check_outputs,
    check_real,
    release,
    replace_args,
    slice_argnums,
    split_aux,
    unit_tensors_like,
)
from ._reverse_mode import jacrev
from ._vmap import check_randomness_arg, watch_randomness

_JVP = "jvp(f, primals, tangents)"


def jvp(
    func: Callable,
    primals: tuple,
    tangents: tuple,
    *,
    strict: bool = False,
    has_aux: bool = False,
):
    """``(func(*primals), J·tangents)`` in forward mode; ``tangents`` has the structure of
    ``primals`` (a tuple of pytrees), the result that of the output.

    Example::
        >>> ember.func.jvp(lambda x: x ** 2, (ember.tensor([3.0]),), (ember.tensor([1.0]),))
        (tensor([9.]), tensor([6.]))
    """
    if not isinstance(primals, tuple):
        raise RuntimeError(
            f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals)."
        )
    flat_primals, primals_spec = tree_flatten(primals)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(
            f"{_JVP}: Expected primals and tangents to have the same python structure. For "
            "example, if primals is a tuple of 3 tensors, tangents also must be. Got primals "
            f"with structure {primals_spec} and tangents with structure {tangents_spec}"
        )
    _check_tensors(flat_primals, "primals")
    _check_tensors(flat_tangents, "tangents")
    # forward AD rides on the recorded graph: the transform records it even under no_grad
    with fwAD.dual_level(), enable_grad():
        duals = [fwAD.make_dual(p, t) for p, t in zip(flat_primals, flat_tangents)]
        output = func(*tree_unflatten(duals, primals_spec))
        output, aux = split_aux(output, has_aux, _JVP)
        flat_out, out_spec = tree_flatten(output)
        check_outputs(_JVP, flat_out)
        values, jvps = [], []
        for y in flat_out:
            primal, tangent = fwAD.unpack_dual(y)
            if tangent is None:
                if strict:
                    raise RuntimeError(
                        "jvp(f, primals, tangents, strict=True): The output of f is independent "
                        "of the inputs. This is not allowed with strict=True."
                    )
                tangent = zeros_like(primal._detach())
            values.append(primal)
            jvps.append(tangent)
        aux = _primals_of(aux) if has_aux else None
    result = (tree_unflatten(values, out_spec), tree_unflatten(jvps, out_spec))
    return (*result, aux) if has_aux else result


def _check_tensors(flat: list, what: str) -> None:
    if not flat:
        raise RuntimeError(f"{_JVP}: Expected {what} to contain at least one Tensor.")
    for t in flat:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{_JVP}: Expected {what} to only contain Tensors, got {type(t)}")


def _primals_of(tree):
    """An aux output as torch.func returns it: each tensor's primal (it carries no tangent)."""
    primals = tree_map(lambda t: fwAD.unpack_dual(t).primal if isinstance(t, Tensor) else t, tree)
    return release(primals, keep_graph=True)


def jacfwd(
    func: Callable,
    argnums=0,
    has_aux: bool = False,
    *,
    randomness: str = "error",
) -> Callable:
    """The Jacobian of ``func`` w.r.t. the argument(s) ``argnums``, in forward mode: ``func``
    runs once, then each column is a basis tangent carried through its recorded graph.
    Structured as :func:`jacrev`'s result.

    ``randomness='error'`` raises on a random op inside ``func``, as torch's vmap over the basis
    does; with 'same' or 'different' the one run's random values serve every column (torch
    draws one set per column with 'different').

    Example::
        >>> ember.func.jacfwd(lambda x: x ** 2)(ember.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    check_randomness_arg(randomness)

    @functools.wraps(func)
    def wrapper(*args):
        check_real("jacfwd", tree_flatten(args)[0], "inputs")
        flat_primals, primals_spec = tree_flatten(slice_argnums(args, argnums))
        with fwAD.dual_level(), enable_grad():
            duals = [fwAD.make_dual(p, zeros_like(p)) for p in flat_primals]
            seeds = [d._edge()[0] for d in duals]
            chosen = tree_unflatten(duals, primals_spec)
            with watch_randomness(randomness):
                output = func(*replace_args(args, chosen, argnums))
            output, aux = split_aux(output, has_aux, _JVP)
            flat_out, out_spec = tree_flatten(output)
            check_outputs(_JVP, flat_out)
            check_real("jacfwd", flat_out, "outputs")
            # columns[o][p]: the Jacobian of output leaf o w.r.t. primal leaf p
            columns = [[None] * len(flat_primals) for _ in flat_out]
            plan = fwAD.ForwardPlan(flat_out)
            for p, (x, seed) in enumerate(zip(flat_primals, seeds)):
                per_output: list[list] = [[] for _ in flat_out]
                for unit in unit_tensors_like(x):
                    for o, (y, t) in enumerate(zip(flat_out, plan.tangents({seed: (unit,)}))):
                        per_output[o].append(t if t is not None else zeros_like(y._detach()))
                for o, y in enumerate(flat_out):
                    shape = (*y.shape, *x.shape)
                    # stacked as (*output, input element), then the input's own shape
                    columns[o][p] = (
                        stack(per_output[o], -1).reshape(shape)
                        if per_output[o]
                        else y._detach().new_zeros(shape)
                    )
            aux = _primals_of(aux) if has_aux else None
        per_output = [tree_unflatten(col, primals_spec) for col in columns]
        if isinstance(argnums, int):
            per_output = [col[0] for col in per_output]
        jacobian = tree_unflatten(per_output, out_spec)
        return (jacobian, aux) if has_aux else jacobian

    return wrapper


def hessian(func: Callable, argnums=0) -> Callable:
    """The Hessian of a scalar ``func`` w.r.t. the argument(s) ``argnums``:
    ``jacfwd(jacrev(func, argnums), argnums)``. For a dict argument, a dict of dicts.

    Example::
        >>> ember.func.hessian(lambda x: (x ** 3).sum())(ember.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)
