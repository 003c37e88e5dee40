"""Anomaly mode: remember where each node was created, and name it when backward fails."""

from __future__ import annotations

import threading

from .._backend import array_module
from .._dtype import is_floating_array_dtype
from . import _watch
from ._cuts import EMBER_DIR


class _AnomalyState(threading.local):
    enabled = False
    check_nan = True


state = _AnomalyState()


def is_anomaly_enabled() -> bool:
    return state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return state.check_nan


class set_detect_anomaly:
    """Turn anomaly detection on or off (also usable as a context manager)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (state.enabled, state.check_nan)
        state.enabled, state.check_nan = bool(mode), bool(check_nan)
        _watch.refresh()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        state.enabled, state.check_nan = self.prev
        _watch.refresh()
        return False


class detect_anomaly:
    """Context manager: record forward stacks and raise on NaN/inf produced in backward.

    Example::
        >>> with ember.autograd.detect_anomaly():
        ...     y = (x.sqrt() * 0).sum()   # a NaN in backward names SqrtBackward0
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = (state.enabled, state.check_nan)
        state.enabled, state.check_nan = True, self.check_nan
        _watch.refresh()
        return self

    def __exit__(self, *exc):
        state.enabled, state.check_nan = self.prev
        _watch.refresh()
        return False

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with self.__class__(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


def record_trace(node) -> None:
    """Store the forward stack (without ember's own frames) on a new node."""
    import traceback  # anomaly mode only: `import ember` does not load it

    node._trace = [
        f for f in traceback.extract_stack()[:-2] if not f.filename.startswith(EMBER_DIR)
    ]


def _forward_trace(node) -> str:
    frames = node._trace
    if not frames:
        return ""
    last = frames[-1]
    code = f": {last.line.strip()}" if last.line else ""
    import traceback

    return (
        f"\nIt was created in forward at {last.filename}:{last.lineno}{code}"
        f"\nTraceback of forward call that caused the error:\n"
        + "".join(traceback.format_list(frames))
    )


def apply_checked(node, grads):
    try:
        out = node.apply(grads)
    except Exception as exc:
        note = f"Error detected in {node.name()}.{_forward_trace(node)}"
        if hasattr(exc, "add_note"):
            exc.add_note(note)
        else:  # Python 3.10
            exc.args = (f"{exc.args[0] if exc.args else ''}\n{note}",) + exc.args[1:]
        raise
    if state.check_nan:
        for i, g in enumerate(out):
            if g is None:
                continue
            xp_data = g._data
            if is_floating_array_dtype(xp_data.dtype) and not bool(isfinite_all(xp_data)):
                what = "nan" if bool(array_module(xp_data).isnan(xp_data).any()) else "inf"
                raise RuntimeError(
                    f"Function '{node.name()}' returned {what} values in its {i}th output."
                    f"{_forward_trace(node)}"
                )
    return out


def isfinite_all(data):
    """One array-valued answer: are all elements of ``data`` finite?"""
    return array_module(data).isfinite(data).all()
