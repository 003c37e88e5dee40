"""Reverse-mode transforms: grad, grad_and_value, vjp and jacrev, over pytrees of tensors."""

from __future__ import annotations

import functools
from collections.abc import Callable

from .._creation import zeros_like
from .._tensor import Tensor
from ..autograd import grad as _autograd_grad
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..ops.shape import stack
from ..utils._pytree import tree_flatten, tree_unflatten, treespec_pprint
from ._arguments import (
    Variables,
    check_outputs,
    check_real,
    release,
    replace_args,
    slice_argnums,
    split_aux,
    tracked_outside,
    unit_tensors_like,
)


def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning ``(gradient, value)`` of the scalar function ``func``: the gradient
    w.r.t. the argument(s) ``argnums``, each shaped as its argument (a dict of tensors gives a
    dict of gradients; a tuple ``argnums`` gives a tuple). With ``has_aux``, ``func`` returns
    ``(value, aux)`` and the result is ``(gradient, (value, aux))``.

    Example::
        >>> g, v = ember.func.grad_and_value(lambda p: (p["w"] ** 2).sum())(
        ...     {"w": ember.tensor([1.0, 2.0])})
        >>> g, v
        ({'w': tensor([2., 4.])}, tensor(5.))
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with enable_grad():
            variables = Variables(slice_argnums(args, argnums, as_tuple=False))
            chosen = (variables.tree,) if isinstance(argnums, int) else variables.tree
            output = func(*replace_args(args, chosen, argnums), **kwargs)
            output, aux = split_aux(output, has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, Tensor):
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                    f"{type(output)}"
                )
            if output.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                    f"got tensor with {output.dim()} dims. Maybe you wanted to use the vjp or "
                    "jacrev APIs instead?"
                )
            keep = tracked_outside([output], variables.own_leaves)
            flat = _gradients([output], variables.flat, None, keep)
        gradient = tree_unflatten(flat, variables.spec)
        value = release(output, keep)
        if has_aux:
            return gradient, (value, release(aux, keep))
        return gradient, value

    return wrapper


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """The gradient of a scalar function, as a function, with the structure of the argument(s)
    at ``argnums``; with ``has_aux``, ``(gradient, aux)``.

    Example::
        >>> ember.func.grad(lambda x: (x ** 3).sum())(ember.tensor([2.0]))
        tensor([12.])
        >>> ember.func.grad(lambda x, y: (x * y).sum(), argnums=(0, 1))(
        ...     ember.tensor([2.0]), ember.tensor([3.0]))
        (tensor([3.]), tensor([2.]))
    """
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = inner(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def _gradients(outputs, inputs, cotangents, create_graph: bool, retain_graph: bool | None = None):
    """Σ cotangent·∂output/∂input for each input, zeros where an input is unused. Outputs that
    do not depend on anything that requires grad, or whose cotangent is None, contribute
    nothing; ``cotangents=None`` means a scalar output's 1."""
    cots = [None] * len(outputs) if cotangents is None else cotangents
    pairs = [
        (o, c)
        for o, c in zip(outputs, cots)
        if o.requires_grad and (c is not None or cotangents is None)
    ]
    if not pairs:
        return [zeros_like(x._detach()) for x in inputs]
    grads = _autograd_grad(
        [o for o, _ in pairs],
        inputs,
        None if cotangents is None else [c for _, c in pairs],
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
        materialize_grads=True,
    )
    return list(grads)


class _Linearization:
    """``func`` run once on variables made for the chosen primals, its graph kept for
    vector-Jacobian products (vjp_fn, and jacrev's one product per output element)."""

    def __init__(self, func: Callable, primals: tuple, argnums, has_aux: bool):
        with enable_grad():
            if argnums is None:  # vjp: every primal
                self.variables = Variables(primals)
                call_args = self.variables.tree
            else:
                self.variables = Variables(slice_argnums(primals, argnums))
                call_args = replace_args(primals, self.variables.tree, argnums)
            output = func(*call_args)
            output, aux = split_aux(output, has_aux, "vjp(f, *primals)")
            self.flat_out, self.out_spec = tree_flatten(output)
            check_outputs("vjp(f, *primals)", self.flat_out, floating=True)
            self.keep = tracked_outside(self.flat_out, self.variables.own_leaves)
        self.output = release(output, self.keep)
        self.aux = release(aux, self.keep) if has_aux else None

    def products(self, flat_cotangents, create_graph: bool, retain_graph: bool = True) -> list:
        """Σ cotangent·∂output/∂variable, one per variable leaf; a graph for them only where
        something outside the transform tracks them."""
        create_graph = create_graph and (
            self.keep or any(isinstance(c, Tensor) and c.requires_grad for c in flat_cotangents)
        )
        with enable_grad():
            return _gradients(
                self.flat_out, self.variables.flat, flat_cotangents, create_graph, retain_graph
            )

    def vjp_fn(self, cotangents, retain_graph: bool = True, create_graph: bool | None = None):
        flat_cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != self.out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of "
                f"outputs to the function. cotangents: {treespec_pprint(cot_spec)}, primal "
                f"output: {treespec_pprint(self.out_spec)}"
            )
        if create_graph is None:
            create_graph = is_grad_enabled()
        flat = self.products(flat_cot, create_graph, retain_graph)
        return tree_unflatten(flat, self.variables.spec)


def vjp(func: Callable, *primals, has_aux: bool = False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)``, with cotangents structured as the
    output, returns one vector-Jacobian product per primal, each structured as its primal.

    Example::
        >>> out, vjp_fn = ember.func.vjp(lambda x: x.sin(), ember.tensor([0.0, 1.0]))
        >>> vjp_fn(ember.ones(2))
        (tensor([1.0000, 0.5403]),)
    """
    lin = _Linearization(func, primals, None, has_aux)
    return (lin.output, lin.vjp_fn, lin.aux) if has_aux else (lin.output, lin.vjp_fn)


def jacrev(
    func: Callable,
    argnums=0,
    *,
    has_aux: bool = False,
    chunk_size: int | None = None,
    _preallocate_and_copy: bool = False,
) -> Callable:
    """The Jacobian of ``func`` w.r.t. the argument(s) ``argnums``, in reverse mode (one
    backward pass per output element). The result is structured as the output, each leaf
    holding the argument's structure (a tuple of them for tuple ``argnums``), with shape
    ``output.shape + input.shape``; with ``has_aux``, ``(jacobian, aux)``.

    Example::
        >>> ember.func.jacrev(lambda p: p["w"] * 2)({"w": ember.tensor([1.0, 2.0])})
        {'w': tensor([[2., 0.],
                [0., 2.]])}
    """
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        check_real("jacrev", tree_flatten(args)[0], "inputs")
        lin = _Linearization(func, args, argnums, has_aux)
        check_real("jacrev", lin.flat_out, "outputs")
        flat_primals, primals_spec = tree_flatten(slice_argnums(args, argnums))
        per_output = [
            tree_unflatten(_jacobian_rows(lin, k, flat_primals), primals_spec)
            for k in range(len(lin.flat_out))
        ]
        if isinstance(argnums, int):
            per_output = [rows[0] for rows in per_output]
        jacobian = tree_unflatten(per_output, lin.out_spec)
        return (jacobian, lin.aux) if has_aux else jacobian

    return wrapper


def _jacobian_rows(lin: _Linearization, k: int, flat_primals: list) -> list:
    """∂y/∂p of output leaf y = lin.flat_out[k], for each primal leaf p, shaped
    ``y.shape + p.shape``: one vector-Jacobian product per element of y."""
    y = lin.flat_out[k]
    rows: list[list] = [[] for _ in flat_primals]
    cotangents = [None] * len(lin.flat_out)
    for unit in unit_tensors_like(y):
        cotangents[k] = unit
        for row, g in zip(rows, lin.products(cotangents, create_graph=True)):
            row.append(g)
    out = []
    for p, row in zip(flat_primals, rows):
        shape = (*y.shape, *p.shape)
        out.append(stack(row).reshape(shape) if row else y.new_zeros(shape))
    return out
