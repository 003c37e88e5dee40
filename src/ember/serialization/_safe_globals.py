"""The globals a ``weights_only`` load may rebuild besides tensors: a few builtins and ember's
Size/device by default, and what the user allowlists with ``add_safe_globals``."""

from __future__ import annotations

import builtins
import contextlib
import threading

_DEFAULT = {
    ("builtins", "set"): builtins.set,
    ("builtins", "frozenset"): builtins.frozenset,
    ("builtins", "complex"): builtins.complex,
    ("builtins", "slice"): builtins.slice,
    ("builtins", "range"): builtins.range,
    ("builtins", "bytearray"): builtins.bytearray,
}
_user: list = []
_scoped = threading.local()


def _key(entry) -> tuple[str, str, object]:
    if isinstance(entry, tuple):
        obj, dotted = entry
        module, _, name = dotted.rpartition(".")
        return module, name, obj
    return entry.__module__, entry.__qualname__, entry


def lookup(module: str, name: str):
    if (module, name) in _DEFAULT:
        return _DEFAULT[(module, name)]
    if module in ("torch", "torch.Size", "torch.device") or module.startswith("torch."):
        if (module, name) == ("torch", "Size"):
            from .._tensor import Size

            return Size
        if (module, name) == ("torch", "device"):
            from .._backend import device

            return device
    for entry in _user + list(getattr(_scoped, "entries", [])):
        m, n, obj = _key(entry)
        if (m, n) == (module, name):
            return obj
    return None


def add_safe_globals(safe_globals: list) -> None:
    """Allow ``weights_only`` loads to rebuild these classes/functions (or ``(obj, "mod.name")``
    pairs)."""
    _user.extend(safe_globals)


def get_safe_globals() -> list:
    return list(_user)


def clear_safe_globals() -> None:
    _user.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list):
    """Allow these globals in ``weights_only`` loads inside the ``with`` block only."""
    previous = list(getattr(_scoped, "entries", []))
    _scoped.entries = previous + list(safe_globals)
    try:
        yield
    finally:
        _scoped.entries = previous
