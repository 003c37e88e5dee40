"""The error an operation without a nested-tensor kernel raises, naming the operation.

The name is the public ember function or method the user called: the outermost ember frame
between the user's code and the point that met the nested tensor's data.
"""

from __future__ import annotations

import sys

# wrappers and module plumbing between the user's call and the op: not the op's name
_PLUMBING = frozenset(
    {
        "function",
        "wrapper",
        "wrapped",
        "dispatch",
        "call",
        "inner",
        "method",
        "forward",
        "__call__",
        "_call_impl",
        "_wrapped_call_impl",
        "nested",
        "op",
    }
)


# standard-library modules an op may call back through (ember.save pickles)
_TRANSPARENT = frozenset({"pickle", "copyreg", "copy", "functools", "contextlib", "zipfile"})


class NestedUnsupported(NotImplementedError, AttributeError):
    """An op asked of a nested tensor that has no nested kernel (a ``RuntimeError`` as
    PyTorch's ``NotImplementedError``; also an ``AttributeError`` so that ``hasattr`` on the
    data keeps its meaning)."""


def unsupported(op: str, layout: str) -> NestedUnsupported:
    if op.isidentifier():
        op += "()"
    return NestedUnsupported(
        f"{op}: not supported for NestedTensor ({layout} layout) in ember (no nested "
        "kernel); convert with nt.to_padded_tensor(padding) or nt.unbind() first (the "
        "ember.nested docstring lists the ops nested tensors support)"
    )


def calling_op(default: str = "this operation") -> str:
    """The name of the op the user called: the outermost ember function on the stack above
    the caller that is not a wrapper or module plumbing."""
    frame = sys._getframe(2)
    names = []  # ember frames, innermost first, up to the user's code
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "ember" or module.startswith("ember."):
            if not module.startswith("ember.nested"):
                names.append(frame.f_code.co_name)
        elif names and module.partition(".")[0] not in _TRANSPARENT:
            break
        frame = frame.f_back
    for name in reversed(names):
        if name not in _PLUMBING and not name.startswith("<"):
            return name.strip("_") if name.startswith("__") else name
    return default
