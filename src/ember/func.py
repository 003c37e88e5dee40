"""ember.func: function transforms in the style of torch.func (reverse mode; jvp and jacfwd
in forward mode).

``vmap`` has no batching rules: it runs the function once per slice and stacks the results,
which is correct for any function and as fast as a Python loop.
"""

from __future__ import annotations

from ._tensor import Tensor
from .autograd import forward_ad as _fwAD
from .autograd import functional as _F
from .autograd import grad as _autograd_grad
from .autograd.grad_mode import enable_grad
from .ops.shape import stack


def _argnums(argnums):
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _flatten(tree) -> tuple[list, object]:
    """The tensors of a nest of dicts, lists and tuples, and a function that rebuilds it."""
    if isinstance(tree, Tensor):
        return [tree], lambda leaves: leaves[0]
    if isinstance(tree, dict):
        keys = list(tree)
        parts = [_flatten(tree[k]) for k in keys]
    elif isinstance(tree, (list, tuple)):
        keys = None
        parts = [_flatten(v) for v in tree]
    else:
        raise TypeError(f"expected tensors in dicts, lists or tuples, got {type(tree).__name__}")
    sizes = [len(leaves) for leaves, _ in parts]

    def rebuild(leaves):
        out, start = [], 0
        for (_, build), size in zip(parts, sizes):
            out.append(build(leaves[start : start + size]))
            start += size
        if keys is not None:
            return dict(zip(keys, out))
        return type(tree)(out)

    return [leaf for leaves, _ in parts for leaf in leaves], rebuild


def grad_and_value(func, argnums=0, has_aux: bool = False):
    """A function returning (gradient of func w.r.t. argnums, func's value)."""

    def wrapper(*args, **kwargs):
        nums = _argnums(argnums)
        args = list(args)
        trees = []  # per differentiated argument: (its leaves, rebuild)
        nested = False
        with enable_grad():
            for i in nums:
                leaves, rebuild = _flatten(args[i])
                nested = nested or any(t.requires_grad for t in leaves)
                leaves = [_inner_variable(t) for t in leaves]
                trees.append((leaves, rebuild))
                args[i] = rebuild(leaves)
            out = func(*args, **kwargs)
            value, aux = out if has_aux else (out, None)
            if not isinstance(value, Tensor) or value.numel() != 1:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor"
                )
            flat = [t for leaves, _ in trees for t in leaves]
            # inside another transform (or of inputs that require grad) the gradient keeps its
            # graph, so that the outer transform differentiates it in turn
            grads = _autograd_grad(
                value, flat, create_graph=nested, allow_unused=True, materialize_grads=True
            )
        g, start = [], 0
        for leaves, rebuild in trees:  # each argument's gradient has the argument's structure
            g.append(rebuild(list(grads[start : start + len(leaves)])))
            start += len(leaves)
        g = g[0] if isinstance(argnums, int) else tuple(g)
        value = value._detach()
        return (g, (value, aux)) if has_aux else (g, value)

    return wrapper


def _inner_variable(t: Tensor) -> Tensor:
    """The variable a transform differentiates with respect to: a fresh leaf, or, for a tensor
    an outer transform (or autograd) tracks, an alias in its graph: the inner derivative counts
    only the uses through the argument, and stays differentiable for the outer one."""
    if t.requires_grad:
        return t.view_as(t)
    return t._detach().requires_grad_(True)


def grad(func, argnums=0, has_aux: bool = False):
    """The gradient of a scalar function, as a function.

    Example::
        >>> ember.func.grad(lambda x: (x ** 3).sum())(ember.tensor([2.0]))
        tensor([12.])
    """
    inner = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = inner(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func, *primals, has_aux: bool = False):
    """(func(*primals), vjp_fn) where vjp_fn(cotangent) returns one gradient per primal."""
    nested = any(p.requires_grad for p in primals)
    with enable_grad():
        xs = tuple(_inner_variable(p) for p in primals)
        out = func(*xs)
    value, aux = out if has_aux else (out, None)

    def vjp_fn(*cotangents):
        outs = value if isinstance(value, (tuple, list)) else (value,)
        grads = _autograd_grad(
            outs,
            xs,
            cotangents,
            retain_graph=True,
            create_graph=nested or any(c.requires_grad for c in cotangents),
            allow_unused=True,
            materialize_grads=True,
        )
        return tuple(grads)

    detached = value._detach() if isinstance(value, Tensor) else tuple(v._detach() for v in value)
    return (detached, vjp_fn, aux) if has_aux else (detached, vjp_fn)


def jvp(func, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """(func(*primals), J·tangents), in forward mode (``ember.autograd.forward_ad``).

    Example::
        >>> ember.func.jvp(lambda x: x ** 2, (ember.tensor([3.0]),), (ember.tensor([1.0]),))
        (tensor([9.]), tensor([6.]))
    """
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to be tuples. E.g. it "
            "should be valid to call f(*primals)."
        )
    if len(primals) != len(tangents):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python "
            f"structure, got {len(primals)} primals and {len(tangents)} tangents."
        )
    with _fwAD.dual_level():
        duals = [_fwAD.make_dual(p, t) for p, t in zip(primals, tangents)]
        out = func(*duals)
        value, aux = out if has_aux else (out, None)
        leaves, rebuild = _flatten(value)
        values, jvps = [], []
        for leaf in leaves:
            primal, tangent = _fwAD.unpack_dual(leaf)
            values.append(primal)
            jvps.append(tangent if tangent is not None else _zeros_like(leaf))
        aux = _primals_of(aux)
    if has_aux:
        return rebuild(values), rebuild(jvps), aux
    return rebuild(values), rebuild(jvps)


def jacrev(func, argnums=0, has_aux: bool = False):
    """The Jacobian of ``func`` w.r.t. ``argnums`` in reverse mode; with ``has_aux``,
    ``(jacobian, aux)`` where ``func`` returned ``(output, aux)``."""

    def wrapper(*args):
        nums = _argnums(argnums)
        auxes = []

        def partial(*chosen):
            full = list(args)
            for i, c in zip(nums, chosen):
                full[i] = c
            out = func(*full)
            if has_aux:
                auxes.append(out[1])
                return out[0]
            return out

        nested = any(isinstance(args[i], Tensor) and args[i].requires_grad for i in nums)
        jac = _F.jacobian(partial, tuple(args[i] for i in nums), create_graph=nested)
        if isinstance(argnums, int):
            jac = jac[0] if isinstance(jac, tuple) and not isinstance(jac, Tensor) else jac
        if has_aux:
            aux = auxes[0]
            aux = aux.detach() if isinstance(aux, Tensor) and not nested else aux
            return jac, aux
        return jac

    return wrapper


def jacfwd(func, argnums=0, has_aux: bool = False, *, randomness: str = "error"):
    """The Jacobian of ``func`` w.r.t. ``argnums``, in forward mode: the function runs once,
    then each column is the tangent of a basis vector carried through the recorded graph.

    Example::
        >>> ember.func.jacfwd(lambda x: x ** 2)(ember.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """

    def wrapper(*args):
        nums = _argnums(argnums)
        full = list(args)
        with _fwAD.dual_level():
            seeds = []
            for i in nums:
                x = args[i]
                full[i] = _fwAD.make_dual(x, _zeros_like(x))
                seeds.append(full[i]._edge()[0])
            out = func(*full)
            value, aux = out if has_aux else (out, None)
            outs, rebuild = _flatten(value)
            # columns[o][a]: the Jacobian of output o w.r.t. argument a
            columns = [[None] * len(nums) for _ in outs]
            plan = _fwAD.ForwardPlan(outs)
            for a, (i, node) in enumerate(zip(nums, seeds)):
                x = args[i]
                per_output = [[] for _ in outs]
                for e in _basis(x):
                    tangents = plan.tangents({node: (e,)})
                    for o, (y, t) in enumerate(zip(outs, tangents)):
                        per_output[o].append(t if t is not None else _zeros_like(y))
                for o, y in enumerate(outs):
                    shape = tuple(y.shape) + tuple(x.shape)
                    if per_output[o]:  # stacked as (input element, *output) -> (*output, *input)
                        jac = stack(per_output[o], -1).reshape(shape)
                    else:
                        jac = _zeros_like(y).new_zeros(shape)
                    columns[o][a] = jac
            jacs = [col[0] if isinstance(argnums, int) else tuple(col) for col in columns]
            result = rebuild(jacs) if outs else jacs
            aux = _primals_of(aux)
        return (result, aux) if has_aux else result

    return wrapper


def _basis(x: Tensor) -> tuple:
    """The unit tangents of ``x``'s elements, in order, each shaped like ``x``."""
    from ._creation import eye

    n = x.numel()
    return eye(n, dtype=x.dtype, device=x.device).reshape((n, *x.shape)).unbind(0)


def _primals_of(tree):
    """``tree`` with each tensor replaced by its primal (an aux output carries no tangent)."""
    if isinstance(tree, Tensor):
        return _fwAD.unpack_dual(tree).primal
    if isinstance(tree, dict):
        return {k: _primals_of(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_primals_of(v) for v in tree)
    return tree


def _zeros_like(t: Tensor) -> Tensor:
    from ._creation import zeros_like

    return zeros_like(t._detach())


def hessian(func, argnums=0):
    inner = jacrev(func, argnums)

    def wrapper(*args):
        nums = _argnums(argnums)
        args = list(args)
        nested = any(isinstance(args[i], Tensor) and args[i].requires_grad for i in nums)
        for i in nums:  # the outer transform's leaves: the inner one keeps its graph
            args[i] = args[i]._detach().requires_grad_(True)
        out = jacfwd(inner, argnums)(*args)
        if nested:  # an enclosing transform differentiates through this one
            return out
        return out._detach() if isinstance(out, Tensor) else tuple(o._detach() for o in out)

    return wrapper


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """Map ``func`` over a dimension of its inputs (a loop over slices, then stack)."""

    def wrapper(*args):
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        sizes = {a.shape[d] for a, d in zip(args, dims) if d is not None and isinstance(a, Tensor)}
        if len(sizes) != 1:
            raise ValueError(
                f"vmap: Expected all tensors to have the same size in the mapped "
                f"dimension, got sizes {sorted(sizes)}"
            )
        (n,) = sizes
        results = []
        for i in range(n):
            sliced = [
                a.select(d, i) if d is not None and isinstance(a, Tensor) else a
                for a, d in zip(args, dims)
            ]
            results.append(func(*sliced))
        if isinstance(results[0], tuple):
            return tuple(stack([r[k] for r in results], out_dims) for k in range(len(results[0])))
        return stack(results, out_dims)

    return wrapper


def functional_call(
    module,
    parameter_and_buffer_dicts,
    args=(),
    kwargs=None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
):
    """Call ``module`` with some parameters/buffers replaced by the given tensors."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, (tuple, list)):
        merged = {}
        for d in dicts:
            merged.update(d)
        dicts = merged
    args = args if isinstance(args, tuple) else (args,)
    saved = []
    try:
        for name, value in dicts.items():
            path, _, leaf = name.rpartition(".")
            owner = module.get_submodule(path)
            store = owner._parameters if leaf in owner._parameters else owner._buffers
            if leaf not in store:
                if strict:
                    raise RuntimeError(f"functional_call: unexpected key '{name}'")
                continue
            saved.append((store, leaf, store[leaf]))
            store[leaf] = value
        return module(*args, **(kwargs or {}))
    finally:
        for store, leaf, old in reversed(saved):
            store[leaf] = old
