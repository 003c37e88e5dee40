"""ember.autograd.functional: jacobian, hessian, vjp, jvp, hvp, vhp with PyTorch's signatures.

Forward-mode products (jvp, hvp) use the double-backward trick: J v is the gradient of
u ↦ (Jᵀu)·v, so everything rests on the reverse-mode engine and create_graph.
"""

from __future__ import annotations

from .. import _creation
from .._tensor import Tensor
from ..ops.shape import stack
from . import grad as autograd_grad
from .grad_mode import enable_grad


def _as_tuple(x):
    return (tuple(x), True) if isinstance(x, (tuple, list)) else ((x,), False)


def _prepare(inputs, create_graph: bool):
    """Fresh leaves that require grad (detached from the caller's graph unless create_graph)."""
    out = []
    for t in inputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"The inputs given to the function must be Tensors, got {type(t)}")
        x = t if (create_graph and t.requires_grad) else t._detach().requires_grad_(True)
        out.append(x)
    return tuple(out)


def _grads(outputs, inputs, grad_outputs, create_graph: bool, strict: bool, what: str):
    outs = [o for o in outputs]
    gos = list(grad_outputs)
    pairs = [(o, g) for o, g in zip(outs, gos) if o.requires_grad]
    if not pairs:
        if strict:
            raise RuntimeError(
                f"The output of the user-provided function is independent of "
                f"input 0. This is not allowed in strict mode ({what})."
            )
        return tuple(_creation.zeros_like(x) for x in inputs)
    result = autograd_grad(
        [o for o, _ in pairs],
        inputs,
        [g for _, g in pairs],
        create_graph=create_graph,
        retain_graph=True,
        allow_unused=True,
    )
    final = []
    for i, (x, g) in enumerate(zip(inputs, result)):
        if g is None:
            if strict:
                raise RuntimeError(
                    f"The output of the user-provided function is independent of input {i}. "
                    f"This is not allowed in strict mode ({what})."
                )
            g = _creation.zeros_like(x)
        final.append(g)
    return tuple(final)


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), vᵀ J)."""
    inputs, many = _as_tuple(inputs)
    with enable_grad():
        xs = _prepare(inputs, create_graph)
        out = func(*xs)
        outs, out_many = _as_tuple(out)
        if v is None:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError(
                    "The vector v can only be None if the user-provided function "
                    "returns a single Tensor with a single element."
                )
            vs = (_creation.ones_like(outs[0]),)
        else:
            vs, _ = _as_tuple(v)
        g = _grads(outs, xs, vs, create_graph, strict, "vjp")
    out = tuple(o if create_graph else o._detach() for o in outs)
    return (out if out_many else out[0]), (g if many else g[0])


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), J v), through the double-backward trick."""
    inputs, many = _as_tuple(inputs)
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided "
                "function is a single Tensor with a single element."
            )
        vs = (_creation.ones_like(inputs[0]),)
    else:
        vs, _ = _as_tuple(v)
    with enable_grad():
        xs = _prepare(inputs, create_graph)
        out = func(*xs)
        outs, out_many = _as_tuple(out)
        dummies = tuple(_creation.zeros_like(o).requires_grad_(True) for o in outs)
        g = _grads(outs, xs, dummies, True, strict, "jvp")  # Jᵀu, linear in u
        jv = _grads(g, dummies, vs, create_graph, strict, "jvp")
    out = tuple(o if create_graph else o._detach() for o in outs)
    return (out if out_many else out[0]), (jv if out_many else jv[0])


def jacobian(
    func,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """d func / d inputs; nested tuples as PyTorch arranges them."""
    inputs, many = _as_tuple(inputs)
    with enable_grad():
        xs = _prepare(inputs, create_graph)
        out = func(*xs)
        outs, out_many = _as_tuple(out)
        rows = []
        for o in outs:
            per_input = [[] for _ in xs]
            flat = o.reshape(-1)
            for k in range(flat.numel()):
                seed = _creation.zeros_like(flat)
                seed[k] = 1.0
                g = _grads((flat,), xs, (seed,), create_graph, strict, "jacobian")
                for i, gi in enumerate(g):
                    per_input[i].append(gi)
            row = []
            for i, x in enumerate(xs):
                if per_input[i]:
                    j = stack(per_input[i], 0).reshape(tuple(o.shape) + tuple(x.shape))
                else:
                    j = _creation.zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype)
                row.append(j if create_graph else j._detach())
            rows.append(tuple(row) if many else row[0])
    return tuple(rows) if out_many else rows[0]


def hessian(
    func,
    inputs,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
):
    """The Hessian of a scalar function."""
    inputs, many = _as_tuple(inputs)

    def gradient(*xs):
        with enable_grad():
            out = func(*xs)
            if out.numel() != 1:
                raise RuntimeError(
                    "The Tensor returned by the function given to hessian should "
                    "contain a single element"
                )
            g = autograd_grad(out, xs, create_graph=True, allow_unused=True)
        return tuple(gi if gi is not None else _creation.zeros_like(x) for gi, x in zip(g, xs))

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict)
    return res if many else res[0][0]


def vhp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), vᵀ H)."""
    inputs, many = _as_tuple(inputs)
    vs, _ = _as_tuple(v) if v is not None else ((None,), False)
    with enable_grad():
        xs = _prepare(inputs, create_graph)
        out = func(*xs)
        if out.numel() != 1:
            raise RuntimeError("The function given to vhp should return a single element")
        g = autograd_grad(out, xs, create_graph=True, allow_unused=True)
        g = tuple(gi if gi is not None else _creation.zeros_like(x) for gi, x in zip(g, xs))
        if v is None:
            vs = tuple(_creation.ones_like(x) for x in xs)
        res = _grads(g, xs, vs, create_graph, strict, "vhp")
    out = out if create_graph else out._detach()
    return out, (res if many else res[0])


def hvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), H v); H is symmetric, so this is vhp."""
    return vhp(func, inputs, v, create_graph, strict)
