"""ember.autograd: reverse-mode differentiation (``backward``, ``grad``, ``Function`` ...)."""

from __future__ import annotations

from .._backend import array_module as _array_module
from .anomaly import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .engine import run_backward
from .explain import Explanation, explain
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .node import TENSOR_LAYER, _tensor_class
from .threading_modes import (
    _force_original_view_tracking,
    is_multithreading_enabled,
    is_view_replay_enabled,
    set_multithreading_enabled,
)
from .variable import Variable


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def _make_grads(outputs: tuple, grad_outputs: tuple, create_graph: bool) -> list:
    Tensor = _tensor_class()
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out._rg and out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if out._rg and not out.dtype.is_floating_point:
                raise RuntimeError(
                    "grad can be implicitly created only for real scalar outputs but got "
                    f"{out.dtype}"
                )
            grads.append(_ones_like(out) if out._rg else None)
            continue
        if not isinstance(g, Tensor):
            g = TENSOR_LAYER.tensor(g, dtype=out.dtype, device=out.device)
        if g._data.shape != out._data.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[{i}] has a shape of ember.Size("
                f"{list(g.shape)}) and output[{i}] has a shape of ember.Size({list(out.shape)})."
            )
        if g._data.dtype.kind != out._data.dtype.kind and out._data.dtype.kind == "f":
            raise RuntimeError(
                f"For complex Tensors, both grad_output and output are required to have the same "
                f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {g.dtype} and "
                f"output[{i}] has a dtype of {out.dtype}."
            )
        grads.append(g)
    return grads


def _ones_like(t):
    data = t._data
    return _tensor_class()._wrap(_array_module(data).ones(data.shape, dtype=data.dtype))


def _roots(outputs: tuple, grads: list):
    roots, root_grads = [], []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if not out._rg:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
            )
        if g is None:
            continue
        roots.append(out._edge())
        root_grads.append(g)
    return roots, root_grads


def backward(
    tensors,
    grad_tensors=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables=None,
    inputs=None,
) -> None:
    """Accumulate into ``.grad`` of graph leaves the gradient of ``tensors``.

    Example::
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> ember.autograd.backward((x * x).sum())
        >>> x.grad
        tensor([2., 4.])
    """
    if grad_variables is not None and grad_tensors is None:
        grad_tensors = grad_variables
    outputs = _as_tuple(tensors)
    grads_in = _as_tuple(grad_tensors) if grad_tensors is not None else (None,) * len(outputs)
    if len(grads_in) != len(outputs):
        raise RuntimeError(
            f"grad can be implicitly created only for scalar outputs; got {len(grads_in)} "
            f"gradients for {len(outputs)} tensors"
        )
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grads_in, create_graph)
    roots, root_grads = _roots(outputs, grads)
    captures = None
    input_list = ()
    if inputs is not None:
        input_list = _as_tuple(inputs)
        if not input_list:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        captures = {}
        for i, t in enumerate(input_list):
            if not t._rg:
                raise RuntimeError(f"element {i} of the input tensors does not require grad")
            node, nr = t._edge()
            captures.setdefault(node, []).append((nr, i))
    captured = run_backward(roots, root_grads, retain_graph, create_graph, captures)
    for i, t in enumerate(input_list):
        if t._grad_fn is None:
            continue  # leaves were accumulated by their AccumulateGrad node
        g = captured.get(i)
        if g is not None:
            t._grad = g if t._grad is None else t._grad + g


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """The gradients of ``outputs`` w.r.t. ``inputs``, returned (``.grad`` is left alone).

    Example::
        >>> x = ember.tensor(3.0, requires_grad=True)
        >>> (dx,) = ember.autograd.grad(x ** 3, x, create_graph=True)
        >>> ember.autograd.grad(dx, x)
        (tensor(18.),)
    """
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but "
            "got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    if is_grads_batched:
        return _batched_grad(outs, ins, grad_outputs, retain_graph, create_graph, allow_unused)
    grads_in = _as_tuple(grad_outputs) if grad_outputs is not None else (None,) * len(outs)
    if len(grads_in) != len(outs):
        raise RuntimeError(
            f"grad requires one grad_output per output: got {len(grads_in)} grad_outputs and "
            f"{len(outs)} outputs"
        )
    if retain_graph is None:
        retain_graph = create_graph
    for t in ins:
        if not t._rg:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = _make_grads(outs, grads_in, create_graph)
    roots, root_grads = _roots(outs, grads)
    captures: dict = {}
    for i, t in enumerate(ins):
        node, nr = t._edge()
        captures.setdefault(node, []).append((nr, i))
    captured = run_backward(
        roots, root_grads, retain_graph, create_graph, captures, accumulate=False
    )
    result = []
    for i, t in enumerate(ins):
        g = captured.get(i)
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
            if materialize_grads:
                g = TENSOR_LAYER.zeros_like(t)
        elif not create_graph:
            g = g._detach()
        result.append(g)
    return tuple(result)


def _batched_grad(outs, ins, grad_outputs, retain_graph, create_graph, allow_unused):
    """``grad`` once per row of the batched ``grad_outputs``, the results stacked; an input
    no output reaches stays None (with ``allow_unused``) as in torch."""
    stack = TENSOR_LAYER.stack
    batch = _as_tuple(grad_outputs)
    n = batch[0].shape[0]
    per_input = [[] for _ in ins]
    for b in range(n):
        gs = grad(
            outs,
            ins,
            tuple(g[b] for g in batch),
            retain_graph=True,
            create_graph=create_graph,
            allow_unused=allow_unused,
        )
        for i, g in enumerate(gs):
            per_input[i].append(g)
    return tuple(None if all(g is None for g in p) else stack(p) for p in per_input)


from . import anomaly as anomaly_mode  # noqa: E402
from . import forward_ad, graph  # noqa: E402  (functional is imported by ember/__init__, after Tensor)

# Function (custom ops), Variable, gradcheck, gradgradcheck and functional are built on Tensor
# and its ops, a layer above this package's machinery: the root package imports them and
# registers them here
# (``register_lazy_attribute`` for what loads on first use, as ``profiler``)

__all__ = [
    "backward",
    "grad",
    "Function",
    "FunctionCtx",
    "once_differentiable",
    "gradcheck",
    "gradgradcheck",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
    "graph",
]


_LAZY_ATTRIBUTES: dict[str, str] = {}


def register_lazy_attribute(name: str, module: str) -> None:
    """Make ``ember.autograd.<name>`` the module ``module``, imported on first use: how a higher
    layer (``torch.autograd.profiler`` is ember's profiler) hangs a namespace here."""
    _LAZY_ATTRIBUTES[name] = module


def __getattr__(name: str):
    if name in _LAZY_ATTRIBUTES:
        import importlib

        return importlib.import_module(_LAZY_ATTRIBUTES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
