"""Where tensors left the graph: notes that ``explain`` reads to say why a grad is None.

A cut is an op whose output has no path back to an input that requires grad: ``detach()``,
an op run under ``no_grad``, or a non-differentiable op (a comparison, ``argmax``, a cast to
an integer dtype). The first time a given kind of cut happens to a leaf, the leaf remembers
it with the user's source line; a cut of a non-leaf marks the leaves of its graph. The output
of a cut remembers where it came from. Nothing here runs unless a cut happens to a tensor
that requires grad.
"""

from __future__ import annotations

import sys

from .graph import walk
from .node import AccumulateGrad

EMBER_DIR = __file__.rsplit("/autograd/", 1)[0] + "/"


class state:
    backward_runs = 0  # run_backward calls so far (numbers the roots it marks)
    quiet = 0  # > 0 inside in-place updates, which are not cuts


def user_site() -> str:
    """``file:line`` of the innermost frame outside ember."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(EMBER_DIR):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def op_name(node_cls_or_name) -> str:
    name = getattr(node_cls_or_name, "__name__", node_cls_or_name)
    for suffix in ("Backward0", "Backward1", "Backward"):
        if name.endswith(suffix):
            return name[: -len(suffix)].lower()
    return name


def note(kind: str, op: str, source, out=None, out_site: bool = True) -> None:
    """Record that ``out`` (if given) was made from ``source`` by a cut of ``kind``.

    ``out_site=False`` skips finding the source line for ``out`` (ops under no_grad, where
    this runs for every op of an evaluation loop)."""
    site = None
    if out is not None:
        site = user_site() if out_site else None
        out._cut_origin = (kind, op, site)
    key = (kind, op)
    fn = source.grad_fn
    if fn is None:  # a leaf
        cuts = source._cut_log
        if cuts is not None and key in cuts:
            return
        if cuts is None:
            cuts = source._cut_log = {}
        cuts[key] = site or user_site()
        return
    site = site or user_site()
    for node in walk(fn):  # mark every leaf the cut tensor was computed from
        if node.__class__ is AccumulateGrad:
            leaf = node.variable
            if leaf is not None:
                if leaf._cut_log is None:
                    leaf._cut_log = {}
                leaf._cut_log.setdefault(key, site)


def note_inputs(kind: str, op, inputs: tuple, out, out_site: bool = True) -> None:
    """``note`` for every input that requires grad (numbers and None are skipped)."""
    if state.quiet:
        return
    for t in inputs:
        if t is not None and getattr(t, "_rg", False):
            note(kind, op_name(op), t, out, out_site)


def note_zeroed(params, set_to_none: bool) -> None:
    site = user_site()
    stamp = ("None" if set_to_none else "zeros", site, state.backward_runs)
    for p in params:
        p._zeroed = stamp
