"""``ember.autograd.explain``: why is ``tensor.grad`` None (or zero)?"""

from __future__ import annotations

from dataclasses import dataclass

from .._dtype import FLOAT
from .graph import walk
from .node import _tensor_class

_KIND_CAUSE = {
    "detached": "detached",
    "no_grad": "no_grad",
    "non-differentiable": "non_differentiable",
}


@dataclass
class Explanation:
    """The answer of ``explain``: a cause code and the report (``str()`` gives the report).

    Causes: ``non_leaf``, ``requires_grad_false``, ``not_connected``, ``detached``,
    ``no_grad``, ``non_differentiable``, ``backward_not_run``, ``zeroed``, ``zero_gradient``,
    ``has_grad``.
    """

    cause: str
    summary: str
    details: list

    def __str__(self) -> str:
        return "\n".join([self.summary] + [f"  - {d}" for d in self.details])


def _origin_text(origin) -> str:
    kind, op, site = origin
    where = f" at {site}" if site else ""
    if kind == "detached":
        return f"it was made by {op}{where}, which cuts the graph"
    if kind == "no_grad":
        return f"it was computed by {op} while grad mode was off (no_grad/inference_mode){where}"
    return f"it is the output of {op}, which is not differentiable{where}"


def _cut_text(kind: str, op: str, site: str) -> str:
    if kind == "detached":
        return f"a tensor computed from it was detached by {op} at {site}"
    if kind == "no_grad":
        return f"it was used by {op} with grad mode off (no_grad/inference_mode) at {site}"
    return f"it was fed to {op}, which is not differentiable, at {site}"


def _reaches(root_node, target_node) -> bool:
    return any(n is target_node for n in walk(root_node))


def explain(tensor, loss=None) -> Explanation:
    """Say why ``tensor.grad`` is None or zero, and what to do about it.

    ``loss`` is the tensor you call ``backward()`` on; when given, ember checks that
    ``tensor`` is part of its graph. Each cause has a code (``.cause``) and a short report.

    Example::
        >>> print(ember.autograd.explain(model.fc.weight, loss))
    """
    Tensor = _tensor_class()
    if not isinstance(tensor, Tensor):
        raise TypeError(f"explain() expects a Tensor, got {type(tensor).__name__}")
    if loss is not None and not isinstance(loss, Tensor):
        raise TypeError(f"explain() expects loss to be a Tensor, got {type(loss).__name__}")

    # 1. tensors that never get a .grad
    if not tensor.requires_grad:
        details = []
        if tensor._cut_origin is not None:
            details.append(_origin_text(tensor._cut_origin))
        if tensor.dtype.category != FLOAT:
            details.append(
                f"its dtype {tensor.dtype} is not floating point: only floating "
                "tensors can require gradients"
            )
        details.append(
            "for a parameter or input: create it with requires_grad=True or call .requires_grad_()"
        )
        return Explanation(
            "requires_grad_false",
            "requires_grad is False: autograd does not track this tensor, so .grad stays None.",
            details,
        )
    node = tensor.grad_fn
    if node is not None and not tensor.retains_grad:
        return Explanation(
            "non_leaf",
            f"this tensor is not a leaf (it was computed by {node.name()}): backward() fills "
            ".grad only for leaves.",
            [
                "call tensor.retain_grad() before backward() to keep its gradient, or",
                "use ember.autograd.grad(loss, tensor) to get it without storing it",
            ],
        )
    target = node if node is not None else tensor._grad_acc
    grad = tensor._grad

    # 2. is it connected to the loss?
    if loss is not None:
        if loss.grad_fn is None:
            details = []
            if loss._cut_origin is not None:
                details.append("the loss: " + _origin_text(loss._cut_origin))
            return _cut_or_unconnected(
                tensor,
                "the loss has no backward graph (requires_grad is False), so nothing reaches "
                "this tensor.",
                details,
            )
        if target is None or not _reaches(loss.grad_fn, target):
            return _cut_or_unconnected(
                tensor,
                "this tensor is not connected to the loss: no path in the loss's "
                "backward graph leads to it.",
                [],
            )
        ran = loss.grad_fn._backward_run
        if grad is None:
            if not ran:
                return Explanation(
                    "backward_not_run",
                    "backward has not been run on this loss yet.",
                    ["call loss.backward() (the tensor is part of its graph)"],
                )
            zeroed = tensor._zeroed
            if zeroed is not None and zeroed[2] >= ran:
                return _zeroed_report(zeroed)
    elif grad is None:
        zeroed = tensor._zeroed
        if zeroed is not None and zeroed[0] == "None":
            return _zeroed_report(zeroed)
        if tensor._cut_log:
            return _cut_or_unconnected(
                tensor, "its .grad is None and ember saw it leave the graph.", []
            )
        return Explanation(
            "backward_not_run",
            "no gradient has reached this tensor: backward has not been run on a loss that "
            "uses it.",
            [
                "call loss.backward(); pass loss to explain(tensor, loss) to check that the "
                "tensor is part of the loss's graph"
            ],
        )

    # 3. it has a gradient: is it zero?
    if grad is None:  # connected and backward ran: hooks or inputs= kept it out
        return Explanation(
            "not_connected",
            "backward ran on this loss but did not accumulate into this tensor.",
            ["backward(inputs=...) may have left it out, or a hook returned None for it"],
        )
    if grad.numel() and not bool(grad.any()):
        zeroed = tensor._zeroed
        if zeroed is not None and zeroed[0] == "zeros":
            return _zeroed_report(zeroed)
        return Explanation(
            "zero_gradient",
            "backward reached this tensor, but every element of its gradient is exactly 0.",
            [
                "the function is flat in it here: a ReLU whose inputs are all negative, a "
                "mask or a multiplication by zero, a clamp outside its range, or a loss that "
                "does not depend on its value"
            ],
        )
    norm = float(grad.double().norm())
    return Explanation("has_grad", f"this tensor has a gradient (norm {norm:.4g}).", [])


def _zeroed_report(zeroed) -> Explanation:
    to, site, _run = zeroed
    what = "set to None" if to == "None" else "filled with zeros"
    return Explanation(
        "zeroed",
        f"its gradient was {what} by zero_grad() at {site}, after the last backward.",
        [
            "read gradients after backward() and before zero_grad() (zero_grad belongs at the "
            "start of a step)"
        ],
    )


def _cut_or_unconnected(tensor, summary: str, details: list) -> Explanation:
    cuts = tensor._cut_log or {}
    if not cuts:
        details = details + [
            "check that the loss is computed from it (a different model or parameter "
            "object, a copy, or a branch of the code that did not run)"
        ]
        return Explanation("not_connected", summary, details)
    # the most recent cut first (dicts keep insertion order)
    items = list(cuts.items())[::-1]
    kind = items[0][0][0]
    lines = [_cut_text(k, op, site) for (k, op), site in items[:3]]
    fixes = {
        "detached": "remove the detach() (or .data) on the way from this tensor to the loss",
        "no_grad": "run that part of forward outside no_grad() / inference_mode()",
        "non_differentiable": "argmax, comparisons and integer casts have no gradient: use "
        "a differentiable stand-in (softmax, a soft mask) on the path to the loss",
    }
    cause = _KIND_CAUSE[kind]
    return Explanation(cause, summary, details + lines + [fixes[cause]])
