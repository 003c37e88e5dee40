"""Compiled kernels under ``ember.compile``: each kernel call is recorded as one step, so that a
replay runs the kernel as eager code does (to the bit) instead of the NumPy path's calls."""

from __future__ import annotations

from types import ModuleType


def recorder(xp):
    """ember.compile's ``record_call`` while it records (its stand-in for the backend module,
    not a module, has one), else None; asked of NumPy itself it would cost an AttributeError
    (~8 µs) per call."""
    return None if xp.__class__ is ModuleType else getattr(xp, "record_call", None)


class KernelCall:
    """A compiled kernel entry as ``ember.compile`` records it: one call on plain arrays whose
    results are new arrays (``fresh_outputs``); ``keep``: only the first results."""

    fresh_outputs = True

    def __init__(self, function, keep: int | None = None):
        self.function, self.keep = function, keep

    def __call__(self, *args):
        out = self.function(*args)
        return out if self.keep is None else out[: self.keep]


def kernel_call(xp, function, *args):
    """``function(*args)``, or, while ``ember.compile`` records, that call recorded as one
    step."""
    record = recorder(xp)
    return function(*args) if record is None else record(function, *args)
