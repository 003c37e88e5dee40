"""Optimizer updates on a parameter's own NumPy arrays, in the fewest full-size passes.

A step written with tensor ops (``buf.mul_(m).add_(g, alpha=...)``, ``p.add_(buf, alpha=-lr)``)
allocates a temporary per op and reads and writes each array once per op. Here each update
runs under ``no_grad`` semantics directly on the arrays: in place with ``out=``, with
``y += a·x`` as one BLAS axpy where NumPy's OpenBLAS is reachable (one pass and PyTorch's
fused multiply-add rounding, so SGD's parameters stay bit-identical to torch's), and with at
most three scratch buffers reused across parameters. Version counters are bumped as the
tensor ops would bump them, so a parameter saved for a backward pass and then stepped still
raises the "modified by an inplace operation" error (except under ``fused=True``, whose PyTorch
kernels leave versions as they were).

The tensor-op paths stay for what this file does not cover: ``differentiable=True`` (the
update is recorded), CuPy arrays, sparse gradients, and dtypes other than float32/float64.
"""

from __future__ import annotations

import numpy as np

from .. import _backend
from .._tensor import Tensor

_FLOAT_CHARS = "fd"

# ember.compile's recorder of one call NumPy's dispatch cannot see (a ctypes or numba kernel that
# writes into ``out``): ``_compile`` registers its ``trace._call`` here when it is imported, and
# only its recording arrays (an ndarray subclass, which exist only then) take this path
RECORD_CALL = None


def _recorded_call(kernel, args: tuple, kwargs: dict) -> None:
    """``kernel(*args, **kwargs)`` through ember.compile's recorder, which keeps it for replay;
    called plainly for an ndarray subclass that is not a recording (nothing registered)."""
    if RECORD_CALL is None:
        kernel(*args, **kwargs)
    else:
        RECORD_CALL(kernel, args, kwargs)


def raw_arrays(param: Tensor, grad: Tensor):
    """(parameter array, gradient array) when the update may run on them in place, else None.

    NumPy arrays only; ``ember.compile``'s recording arrays (an ndarray subclass) pass too, and
    the BLAS calls below go through its recorder so that a replay makes them again."""
    data, g = param._data, grad._data
    if not isinstance(data, np.ndarray) or not isinstance(g, np.ndarray):
        return None
    if data.dtype != g.dtype or data.dtype.char not in _FLOAT_CHARS or data.shape != g.shape:
        return None
    if not data.flags.writeable:
        return None
    return data, g


def raw_state(value) -> np.ndarray | None:
    """A state tensor's array when it can be updated in place next to a raw parameter."""
    if not isinstance(value, Tensor):
        return None
    data = value._data
    if not isinstance(data, np.ndarray) or not data.flags.writeable or value._rg:
        return None
    return data


class Scratch:
    """Flat buffers per (slot, dtype), grown to the largest parameter and reused: a step
    allocates nothing once every shape has been seen."""

    __slots__ = ("buffers",)

    def __init__(self) -> None:
        self.buffers: dict = {}

    def get(self, slot: int, like: np.ndarray) -> np.ndarray:
        if type(like) is not np.ndarray:  # recording for ember.compile: made inside the step
            return np.empty_like(like)
        key = (slot, like.dtype.char)
        flat = self.buffers.get(key)
        if flat is None or flat.size < like.size:
            flat = self.buffers[key] = np.empty(like.size, like.dtype)
        return flat[: like.size].reshape(like.shape)


def scratch_of(optimizer) -> Scratch:
    """The optimizer's scratch buffers (not part of its state or its pickled form)."""
    found = optimizer.__dict__.get("_scratch")
    if found is None:
        found = optimizer.__dict__["_scratch"] = Scratch()
    return found


def axpy(alpha: float, x: np.ndarray, y: np.ndarray, spare: np.ndarray | None = None) -> None:
    """``y += alpha * x`` in place: one fused pass through BLAS when both are contiguous;
    a non-contiguous ``x`` is first copied into ``spare`` (when given)."""
    blas = _backend.numpy_blas()
    # OpenBLAS returns early on alpha == 0, which would drop the NaNs that 0 * x propagates
    if blas is not None and alpha != 0.0 and y.flags.c_contiguous:
        if not x.flags.c_contiguous and spare is not None:
            np.copyto(spare, x)
            x = spare
        if x.flags.c_contiguous:
            _blas_call(_axpy_into, (alpha, x), y)
            return
    if spare is not None and spare is not x:
        np.multiply(x, alpha, out=spare)
        y += spare
    else:
        y += x * alpha


def scale_add(beta: float, y: np.ndarray, alpha: float, x: np.ndarray, spare=None) -> None:
    """``y = beta * y + alpha * x`` in place (PyTorch's ``buf.mul_(m).add_(g, alpha=a)``): one
    pass through OpenBLAS's axpby where it is there, else two. How OpenBLAS rounds depends on
    the CPU kind it picked (0.3.31, measured): on AVX2 its axpby fuses no multiply-add and its
    axpy fuses all but the last n mod 32 (float32) / 16 (float64) elements; on AVX-512 its
    axpby rounds ``beta·y`` and fuses the rest and its axpy fuses every element. PyTorch's
    vectorised add_ fuses every one, so results can differ from torch's by an ulp
    (``ember._kernels.optim_jit`` measures and reproduces these roundings, so the compiled Adam
    equals this path to the bit on either kind)."""
    blas = _backend.numpy_blas()
    if (
        blas is not None
        and blas.has_axpby
        and alpha != 0.0  # OpenBLAS skips a zero coefficient's term, dropping 0 * NaN
        and beta != 0.0
        and y.flags.c_contiguous
        and x.flags.c_contiguous
    ):
        _blas_call(_axpby_into, (alpha, x, beta), y)
        return
    np.multiply(y, beta, out=y)
    axpy(alpha, x, y, spare)


def _axpy_into(alpha: float, x: np.ndarray, *, out: np.ndarray) -> None:
    _backend.numpy_blas().axpy(alpha, x, out)


def _axpby_into(alpha: float, x: np.ndarray, beta: float, *, out: np.ndarray) -> None:
    _backend.numpy_blas().axpby(alpha, x, beta, out)


def _blas_call(kernel, args: tuple, out: np.ndarray) -> None:
    """``kernel(*args, out=out)``; while ember.compile records a step (its arrays are an
    ndarray subclass) through the recorder, which keeps the call (and its write into
    ``out``) for replay, since a ctypes call is invisible to NumPy's dispatch."""
    if type(out) is np.ndarray:
        for a in args:  # a loop, not all(...): a generator costs more than two checks
            if type(a) is not np.ndarray and isinstance(a, np.ndarray):
                break
        else:
            kernel(*args, out=out)
            return
    _recorded_call(kernel, args, {"out": out})


def bump(*tensors: Tensor) -> None:
    for t in tensors:
        t._vc[0] += 1


def _no_bump(*tensors: Tensor) -> None:
    pass


def version_bumper(group: dict):
    """``bump``, or nothing under ``fused=True``: PyTorch's fused kernels write parameters and
    state without advancing their version counters."""
    return _no_bump if group.get("fused") else bump


def signed_grad(g: np.ndarray, maximize: bool, out: np.ndarray) -> np.ndarray:
    """The gradient to descend along: ``-g`` (written into ``out``) when maximizing."""
    if maximize:
        return np.negative(g, out=out)
    return g


def l2_decayed(g: np.ndarray, p: np.ndarray, weight_decay: float, maximize: bool, out):
    """``±g + weight_decay · p`` in ``out`` (PyTorch's ``grad.add(param, alpha=wd)``)."""
    if maximize:
        np.negative(g, out=out)
    else:
        np.copyto(out, g)
    axpy(weight_decay, p, out)
    return out


# --------------------------------------------------------------------------------- SGD


def sgd_step(optimizer, param: Tensor, arrays, group: dict, lr: float) -> None:
    """One SGD update of ``param``, PyTorch's single-tensor rule; with momentum two passes
    (``buf = m·buf + (1-d)·g``, ``p -= lr·buf``), without it one."""
    p, g = arrays
    scratch = scratch_of(optimizer)
    bump = version_bumper(group)
    momentum, dampening = group["momentum"], group["dampening"]
    weight_decay, maximize = group["weight_decay"], group["maximize"]
    # ``sign`` folds maximize into the coefficients: negation is exact, so the bits agree
    sign = -1.0 if maximize else 1.0
    if weight_decay != 0:
        g, sign = l2_decayed(g, p, weight_decay, maximize, scratch.get(0, p)), 1.0
    if momentum != 0:
        state = optimizer.state[param]
        buf_tensor = state.get("momentum_buffer")
        if buf_tensor is None:
            buf = np.negative(g) if sign < 0 else g.copy(order="C")
            state["momentum_buffer"] = Tensor._wrap(buf)
        else:
            buf = raw_state(buf_tensor)
            if buf is None or buf.shape != p.shape or buf.dtype != p.dtype:
                _sgd_momentum_with_tensor_ops(buf_tensor, g, sign, momentum, dampening)
                buf = buf_tensor._data
            else:
                scale_add(momentum, buf, sign * (1 - dampening), g, scratch.get(1, p))
                bump(buf_tensor, buf_tensor)
        if group["nesterov"]:
            # grad + m·buf, in slot 0 (which may already hold the decayed gradient)
            ahead = scratch.get(0, p)
            if sign < 0:
                np.negative(g, out=ahead)
            elif not np.may_share_memory(ahead, g):
                np.copyto(ahead, g)
            axpy(momentum, buf, ahead, scratch.get(1, p))
            g = ahead
        else:
            g = buf
        sign = 1.0
    # the spare buffer only serves a gradient that is not contiguous (BLAS needs one stride)
    axpy(-lr * sign, g, p, None if g.flags.c_contiguous else scratch.get(1, p))
    bump(param)


def _sgd_momentum_with_tensor_ops(buf: Tensor, g, sign, momentum, dampening) -> None:
    # a buffer loaded from elsewhere (another dtype, a read-only array): the tensor ops cast
    step = Tensor._wrap(np.negative(g) if sign < 0 else g)
    buf.mul_(momentum).add_(step, alpha=1 - dampening)


def sgd_sparse_step(param: Tensor, grad: Tensor, lr: float, maximize: bool) -> None:
    """``param -= lr · grad`` for a sparse COO gradient without momentum or weight decay:
    only the rows the gradient holds are read and written (duplicates summed first)."""
    from ..ops.embedding import sum_rows_compact

    storage = grad._data
    indices, values = storage.indices, storage.values
    p = param._data
    if (
        type(p) is np.ndarray
        and type(values) is np.ndarray
        and p.flags.writeable
        and indices.shape[0] == 1
        and values.dtype == p.dtype
    ):
        flat_values = values.reshape(values.shape[0], -1)
        rows, sums = sum_rows_compact(indices[0], flat_values, p.shape[0])
        sums *= lr if maximize else -lr
        p[rows] += sums.reshape((rows.size,) + p.shape[1:])
        bump(param)
        return
    param.add_(grad.to_dense(), alpha=lr if maximize else -lr)


# --------------------------------------------------------------------------------- Adam


def adam_step(
    param: Tensor, arrays, state: dict, group: dict, lr: float, scratch, kernels=None
) -> bool:
    """One Adam/AdamW update on raw arrays (PyTorch's single-tensor rule); False when the
    state's arrays cannot be written in place (the caller then uses tensor ops)."""
    exp_avg_t, exp_avg_sq_t = state["exp_avg"], state["exp_avg_sq"]
    m, v = raw_state(exp_avg_t), raw_state(exp_avg_sq_t)
    max_t = state.get("max_exp_avg_sq") if group["amsgrad"] else None
    v_max = raw_state(max_t) if max_t is not None else None
    p, g = arrays
    bump = version_bumper(group)
    for s in (m, v) + ((v_max,) if group["amsgrad"] else ()):
        if s is None or s.shape != p.shape or s.dtype != p.dtype:
            return False
    beta1, beta2 = group["betas"]
    eps, weight_decay, maximize = group["eps"], group["weight_decay"], group["maximize"]
    step = state["step"].item()
    decoupled = group.get("decoupled_weight_decay", False)
    layout = _flat(p, g, m, v, v_max) if kernels is not None else None
    if layout is not None:
        # ember._kernels.optim_jit: the whole update in one compiled pass, same roundings;
        # while ember.compile records, one recorded call (a replay runs the kernel too)
        hyper = (lr, beta1, beta2, eps, weight_decay, decoupled, maximize, step)
        if layout == "plain":
            _adam_update_into(g, *hyper, out=(p, m, v, v_max))
        else:
            _recorded_call(_adam_update_into, (g, *hyper), {"out": (p, m, v, v_max)})
        if weight_decay != 0 and decoupled:
            bump(param)
        bump(exp_avg_t, exp_avg_sq_t, exp_avg_sq_t)
        if v_max is not None:
            bump(max_t)
        bump(param)
        return True
    d, t, u = scratch.get(0, p), scratch.get(1, p), scratch.get(2, p)
    if weight_decay != 0:
        if decoupled:
            np.multiply(p, 1 - lr * weight_decay, out=p)
            bump(param)
            g = signed_grad(g, maximize, d)
        else:
            g = l2_decayed(g, p, weight_decay, maximize, d)
    else:
        g = signed_grad(g, maximize, d)
    _lerp(m, g, 1 - beta1, t, u)
    # v.mul_(β2).addcmul_(g, g, value=1 - β2)
    np.multiply(g, g, out=u)
    scale_add(beta2, v, 1 - beta2, u, t)
    bump(exp_avg_t, exp_avg_sq_t, exp_avg_sq_t)
    second = v
    if v_max is not None:
        np.maximum(v_max, v, out=v_max)
        bump(max_t)
        second = v_max
    # denom = sqrt(v) / sqrt(1 - β2^t) + eps;  p += (-lr / (1 - β1^t)) · m / denom
    np.sqrt(second, out=t)
    np.divide(t, (1 - beta2**step) ** 0.5, out=t)
    np.add(t, eps, out=t)
    np.multiply(m, -lr / (1 - beta1**step), out=u)
    np.divide(u, t, out=u)
    np.add(p, u, out=p)
    bump(param)
    return True


def _flat(*arrays) -> str | None:
    """ "plain" for C-contiguous NumPy arrays, "recorded" when some are ember.compile's
    recording of them (an ndarray subclass), else None (None entries are skipped)."""
    layout = "plain"
    for a in arrays:
        if a is None:
            continue
        if not isinstance(a, np.ndarray) or not a.flags.c_contiguous:
            return None
        if type(a) is not np.ndarray:
            layout = "recorded"
    return layout


def _adam_update_into(g, lr, beta1, beta2, eps, weight_decay, decoupled, maximize, step, *, out):
    """``ember._kernels.optim_jit.adam_update`` on ``out`` = (p, m, v, v_max or None)."""
    from .._kernels import jit

    p, m, v, v_max = out
    jit.module("optim_jit").adam_update(
        p.reshape(-1),
        g.reshape(-1),
        m.reshape(-1),
        v.reshape(-1),
        None if v_max is None else v_max.reshape(-1),
        lr=lr,
        beta1=beta1,
        beta2=beta2,
        eps=eps,
        weight_decay=weight_decay,
        decoupled=decoupled,
        maximize=maximize,
        step=step,
    )


def _lerp(m: np.ndarray, g: np.ndarray, weight: float, t: np.ndarray, spare: np.ndarray) -> None:
    """``m.lerp_(g, weight)`` as PyTorch rounds it: m + w·(g - m) for |w| < 0.5, else
    g - (1 - w)·(g - m), each one fused multiply-add (``t`` and ``spare`` are scratch)."""
    np.subtract(g, m, out=t)
    if abs(weight) < 0.5:
        axpy(weight, t, m, spare)
    else:
        np.copyto(m, g)
        axpy(weight - 1, t, m, spare)


def _states(state: dict, keys, like: np.ndarray):
    """The raw arrays of ``state[key]`` for each key, or None if one cannot be updated here."""
    arrays = []
    for key in keys:
        a = raw_state(state.get(key))
        if a is None or a.shape != like.shape or a.dtype != like.dtype:
            return None
        arrays.append(a)
    return arrays


# --------------------------------------------------------------------------------- RMSprop


def rmsprop_step(param: Tensor, arrays, state: dict, group: dict, lr: float, scratch) -> bool:
    """One RMSprop update on raw arrays (PyTorch's single-tensor rule); False when the state
    cannot be written in place."""
    p, g = arrays
    momentum, centered = group["momentum"], group["centered"]
    keys = ["square_avg"] + (["momentum_buffer"] if momentum > 0 else [])
    keys += ["grad_avg"] if centered else []
    found = _states(state, keys, p)
    if found is None:
        return False
    bump = version_bumper(group)
    alpha, eps, weight_decay = group["alpha"], group["eps"], group["weight_decay"]
    d, t, u = scratch.get(0, p), scratch.get(1, p), scratch.get(2, p)
    if weight_decay != 0:
        g = l2_decayed(g, p, weight_decay, group["maximize"], d)
    else:
        g = signed_grad(g, group["maximize"], d)
    square_avg = found[0]
    np.multiply(g, g, out=u)
    scale_add(alpha, square_avg, 1 - alpha, u, t)
    bump(state["square_avg"], state["square_avg"])
    if centered:
        grad_avg = found[-1]
        _lerp(grad_avg, g, 1 - alpha, t, u)
        bump(state["grad_avg"])
        np.multiply(grad_avg, grad_avg, out=t)
        np.subtract(square_avg, t, out=t)
        np.sqrt(t, out=t)
    else:
        np.sqrt(square_avg, out=t)
    np.add(t, eps, out=t)
    if momentum > 0:
        buf = found[1]
        np.multiply(buf, momentum, out=buf)
        np.divide(g, t, out=u)
        np.add(buf, u, out=buf)
        bump(state["momentum_buffer"], state["momentum_buffer"])
        axpy(-lr, buf, p, u)
    else:
        np.multiply(g, -lr, out=u)
        np.divide(u, t, out=u)
        np.add(p, u, out=p)
    bump(param)
    return True


# --------------------------------------------------------------------------------- Adagrad


def adagrad_step(param: Tensor, arrays, state: dict, group: dict, lr: float, scratch) -> bool:
    """One Adagrad update on raw arrays (PyTorch's single-tensor rule); False when the state
    cannot be written in place."""
    p, g = arrays
    found = _states(state, ["sum"], p)
    if found is None:
        return False
    bump = version_bumper(group)
    (total,) = found
    d, t, u = scratch.get(0, p), scratch.get(1, p), scratch.get(2, p)
    if group["weight_decay"] != 0:
        g = l2_decayed(g, p, group["weight_decay"], group["maximize"], d)
    else:
        g = signed_grad(g, group["maximize"], d)
    step = state["step"].item()
    clr = lr / (1 + (step - 1) * group["lr_decay"])
    np.multiply(g, g, out=u)
    np.add(total, u, out=total)
    bump(state["sum"])
    np.sqrt(total, out=t)
    np.add(t, group["eps"], out=t)
    np.multiply(g, -clr, out=u)
    np.divide(u, t, out=u)
    np.add(p, u, out=p)
    bump(param)
    return True
