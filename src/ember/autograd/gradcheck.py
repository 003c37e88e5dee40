"""gradcheck / gradgradcheck: compare autograd against central finite differences."""

from __future__ import annotations

from .. import _backend


class GradcheckError(RuntimeError):
    """Raised by gradcheck when an analytical and a numerical derivative disagree."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _is_complex(x) -> bool:
    data = getattr(x, "_data", None)
    return data is not None and data.dtype.kind == "c"


def _realified(func, inputs: tuple):
    """``func`` as a map between real tensors, as PyTorch's gradcheck sees complex numbers:
    each complex input that requires grad becomes two real inputs (real and imaginary parts)
    and each complex output two real outputs. Checking that map checks the complex gradients
    (``∂L/∂x + i ∂L/∂y``) of the original."""
    from ..ops.complex import complex as make_complex
    from ..ops.complex import imag, real

    expanded, split = [], []
    for x in inputs:
        if _is_complex(x) and x._rg:
            expanded += [real(x).detach().clone().requires_grad_(), imag(x).detach().clone()]
            expanded[-1].requires_grad_()
            split.append(True)
        else:
            expanded.append(x)
            split.append(False)

    def real_func(*args):
        from .grad_mode import enable_grad

        rebuilt, k = [], 0
        with enable_grad():  # a rebuilt input is a function of its parts, even under no_grad
            for two in split:
                rebuilt.append(make_complex(args[k], args[k + 1]) if two else args[k])
                k += 2 if two else 1
        outs = []
        for o in _as_tuple(func(*rebuilt)):
            outs += [real(o), imag(o)] if _is_complex(o) else [o]
        return tuple(outs)

    return real_func, tuple(expanded)


def _differentiable_outputs(outputs) -> tuple:
    return tuple(o for o in _as_tuple(outputs) if hasattr(o, "_rg") and o._rg)


def _numerical_jacobian(func, inputs, index, eps):
    """d outputs / d inputs[index], one column per input element, by central differences."""
    from .grad_mode import no_grad

    x = inputs[index]
    data = x._data
    xp = _backend.array_module(data)
    with no_grad():
        base_outputs = [o for o in _as_tuple(func(*inputs)) if hasattr(o, "_data")]
    columns = [xp.zeros((data.size, o._data.size), dtype="float64") for o in base_outputs]
    import numpy as np

    positions = list(np.ndindex(data.shape))
    for col, pos in enumerate(positions):
        original = data[pos].copy()
        data[pos] = original + eps
        # copies: an output may alias the very input being perturbed
        with no_grad():
            plus = [o._data.copy() for o in _as_tuple(func(*inputs)) if hasattr(o, "_data")]
        data[pos] = original - eps
        with no_grad():
            minus = [o._data.copy() for o in _as_tuple(func(*inputs)) if hasattr(o, "_data")]
        data[pos] = original
        for j, (p, m) in enumerate(zip(plus, minus)):
            if p.dtype.kind != "f":
                continue
            diff = (p.astype("float64") - m.astype("float64")) / (2 * eps)
            columns[j][col] = diff.reshape(-1)
    return columns  # per output: (input numel, output numel)


def _analytical_jacobian(func, inputs, index, outputs):
    from . import grad as autograd_grad

    x = inputs[index]
    xp = _backend.array_module(x._data)
    result = []
    for out in outputs:
        jac = xp.zeros((x._data.size, out._data.size), dtype="float64")
        for k in range(out._data.size):
            from .._tensor import Tensor

            seed = xp.zeros(out._data.size, dtype=out._data.dtype)
            seed[k] = 1
            (g,) = autograd_grad(
                out,
                x,
                Tensor._wrap(seed.reshape(out._data.shape)),
                retain_graph=True,
                allow_unused=True,
            )
            if g is not None:
                if g._data.shape != x._data.shape:
                    raise GradcheckError(
                        f"Gradient has shape {list(g.shape)} but the input has shape "
                        f"{list(x.shape)}"
                    )
                jac[:, k] = g._data.astype("float64").reshape(-1)
        result.append(jac)
    return result


def gradcheck(
    func,
    inputs,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked=None,
) -> bool:
    """Check ``func``'s gradients w.r.t. ``inputs`` that require grad against finite differences.

    Example::
        >>> x = ember.randn(3, dtype=ember.float64, requires_grad=True)
        >>> ember.autograd.gradcheck(ember.sin, (x,))
        True
    """
    inputs = _as_tuple(inputs)
    outputs = _differentiable_outputs(func(*inputs))
    if any(_is_complex(x) for x in inputs + outputs):
        func, inputs = _realified(func, inputs)
        outputs = _differentiable_outputs(func(*inputs))
    try:
        if not outputs:
            for x in inputs:
                if hasattr(x, "_rg") and x._rg:
                    raise GradcheckError(
                        "gradcheck expects at least one output of func to require grad"
                    )
            return True
        for i, x in enumerate(inputs):
            if not (hasattr(x, "_rg") and x._rg):
                continue
            numerical = _numerical_jacobian(func, inputs, i, eps)
            outputs = _differentiable_outputs(func(*inputs))
            analytical = _analytical_jacobian(func, inputs, i, outputs)
            num_for_diff = [
                n
                for n, o in zip(numerical, _as_tuple(func(*inputs)))
                if hasattr(o, "_rg") and o._rg
            ]
            for j, (a, n) in enumerate(zip(analytical, num_for_diff)):
                xp = _backend.array_module(a)
                if not xp.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
                    raise GradcheckError(
                        f"Jacobian mismatch for output {j} with respect to input {i},\n"
                        f"numerical:{n}\nanalytical:{a}\n"
                    )
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Check second derivatives: gradcheck of the map (inputs, grad_outputs) -> gradients."""
    from .._creation import randn_like
    from . import grad as autograd_grad

    inputs = _as_tuple(inputs)
    outputs = _differentiable_outputs(func(*inputs))
    if grad_outputs is None:
        grad_outputs = tuple(_random_like(o, randn_like) for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)
    diff_positions = [i for i, x in enumerate(inputs) if hasattr(x, "_rg") and x._rg]

    def first_order(*args):
        from .grad_mode import enable_grad

        xs, gs = args[:n_in], args[n_in:]
        with enable_grad():  # the finite differences call this under no_grad
            outs = _differentiable_outputs(func(*xs))
            grads = autograd_grad(
                outs, [xs[i] for i in diff_positions], gs, create_graph=True, allow_unused=True
            )
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_order,
        inputs + grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
    )


def _random_like(t, randn_like):
    if _is_complex(t):
        from ..ops.complex import complex as make_complex

        real_dtype = t.dtype.to_real()
        parts = (randn_like(t, dtype=real_dtype), randn_like(t, dtype=real_dtype))
        return make_complex(*parts).requires_grad_()
    return randn_like(t, dtype=t.dtype).requires_grad_()
