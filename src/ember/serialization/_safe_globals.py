"""The globals a user allows ``weights_only`` loads to rebuild, beyond torch's defaults:
``add_safe_globals`` for the whole process, ``safe_globals`` for a ``with`` block (this thread).

Each entry is a class or function, found under ``module.qualname``, or an ``(obj, "mod.name")``
pair naming it, as in ``torch.serialization``.
"""

from __future__ import annotations

import contextlib
import threading

_user: list = []
_scoped = threading.local()


def _dotted(entry) -> tuple[str, object]:
    if isinstance(entry, tuple):
        if len(entry) != 2:
            raise ValueError(
                "Expected tuple of length 2 (global, str of callable full path), but got tuple "
                f"of length: {len(entry)}"
            )
        obj, name = entry
        if type(name) is not str:
            raise TypeError(
                "Expected second item in tuple to be str of callable full path, but got: "
                f"{type(name)}"
            )
        return name, obj
    return f"{entry.__module__}.{entry.__qualname__}", entry


def user_globals() -> dict:
    """Every global the user allows now, by dotted name."""
    return dict(_dotted(e) for e in _user + list(getattr(_scoped, "entries", [])))


def add_safe_globals(safe_globals: list) -> None:
    """Allow ``weights_only`` loads to rebuild these classes/functions (or ``(obj, "mod.name")``
    pairs).

    Example::
        >>> ember.serialization.add_safe_globals([MyConfig])
        >>> ember.load("ckpt.pt")["config"]
    """
    for entry in safe_globals:
        _dotted(entry)  # a malformed entry fails here, not at the next load
    _user.extend(safe_globals)


def get_safe_globals() -> list:
    """The globals ``add_safe_globals`` allowed."""
    return list(_user)


def clear_safe_globals() -> None:
    """Forget every global ``add_safe_globals`` allowed."""
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
