"""A context manager that sets module-level flags and restores them on exit."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def set_flags(module, **values):
    old = {name: getattr(module, name) for name, value in values.items() if value is not None}
    for name in old:
        setattr(module, name, values[name])
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(module, name, value)
