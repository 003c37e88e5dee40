"""Compiled CPU kernels: numba when it is installed (``pip install ember[jit]``), else nothing.

A kernel module (``ember/_kernels/*_jit.py``) imports numba and defines its loops with
:func:`njit`; its caller gets it from :func:`module` (None when kernels are off, or when the
call is too small to be worth numba's one-off load) and keeps a NumPy path that gives the same
results, so ember works, and passes the same tests, without numba. Nothing here imports numba
until a kernel is first called (numba's import takes ~1-2 s; ember's import must stay light),
and compiled machine code is cached on disk next to the kernel's module (numba's
``cache=True``), so a process pays the compile once per machine, not once per run.

Kernels are compiled ``nogil``: :func:`parallel_for` splits a range over ember's own thread
pool (the one ``ember.set_num_threads`` sizes, shared with BLAS), instead of numba's threading
layer, which would be a second pool competing for the same cores and whose default layer is
not safe to enter from several Python threads at once.

Set ``EMBER_JIT=0`` to turn the kernels off (the NumPy paths run); tests use :func:`disabled`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator

_state = {"checked": False, "available": False}
_switch = threading.local()
_lock = threading.Lock()
_loaded: dict[str, object] = {}

# below this many elements a hand-off to another thread costs more than the work it saves
PARALLEL_MIN_ELEMENTS = 1 << 16
# The first kernel a process uses costs about a second (numba's import, the cached machine
# code's load); a call with less work than this keeps to NumPy, so programs on small tensors
# (tutorials, the demo, most tests) never pay it. A fixed size, not "numba is loaded already":
# the same call must take the same path in every run.
MIN_WORK = 1 << 16


def _numba_available() -> bool:
    if not _state["checked"]:
        with _lock:
            if not _state["checked"]:
                if os.environ.get("EMBER_JIT", "1").strip().lower() in ("0", "false", "no", "off"):
                    _state["available"] = False
                else:
                    import importlib.util

                    _state["available"] = importlib.util.find_spec("numba") is not None
                _state["checked"] = True
    return _state["available"]


def enabled() -> bool:
    """True when compiled kernels may be used: numba is installed, ``EMBER_JIT`` is not 0, and
    this thread is not inside :func:`disabled`."""
    return not getattr(_switch, "off", False) and _numba_available()


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Run the NumPy fallbacks in this thread (tests compare them with the kernels)."""
    before = getattr(_switch, "off", False)
    _switch.off = True
    try:
        yield
    finally:
        _switch.off = before


def module(name: str, work: int | None = None):
    """The kernel module ``ember._kernels.<name>`` when kernels are :func:`enabled` and the
    call's ``work`` (elements it touches; None: the caller decided) is at least
    :data:`MIN_WORK`, else None.

    Kernel modules import numba at their top and define their loops with :func:`njit`; only
    this function imports them, so numba loads on the first call that wants a kernel.
    """
    if (work is not None and work < MIN_WORK) or getattr(_switch, "off", False):
        return None
    if not (_state["available"] if _state["checked"] else _numba_available()):
        return None
    loaded = _loaded.get(name)
    if loaded is None:  # kernels are looked up on hot paths: import_module costs ~3 us a call
        import importlib

        loaded = _loaded[name] = importlib.import_module(f"ember._kernels.{name}")
    return loaded


def njit(function: Callable | None = None, **options):
    """numba's ``njit`` with ember's defaults (``cache=True``: machine code kept on disk;
    ``nogil=True``: :func:`parallel_for` runs it on several threads), for kernel modules."""
    import numba

    options = {"cache": True, "nogil": True, **options}
    if function is None:
        return numba.njit(**options)
    return numba.njit(**options)(function)


def parallel_for(
    compiled: Callable, size: int, *args, min_chunk: int = PARALLEL_MIN_ELEMENTS
) -> None:
    """Call ``compiled(start, stop, *args)`` (a :func:`njit` kernel) over ``[0, size)`` split
    into spans of ``min_chunk`` or more, shared by the threads of ember's pool
    (``ember.get_num_threads()``), or once on this thread when ``size`` is below two chunks of
    ``min_chunk``. Up to four spans a thread, handed out in turn (``_backend.share_spans``):
    a thread the machine leaves waiting takes fewer, instead of holding up the call."""
    from ember import _backend

    chunk = max(1, min_chunk)
    threads = min(_backend.get_num_threads(), max(1, size // chunk))
    if threads < 2:
        compiled(0, size, *args)
        return
    pieces = max(threads, min(threads * 4, size // chunk))
    step = -(-size // pieces)
    spans = [(start, min(start + step, size), *args) for start in range(0, size, step)]
    _backend.share_spans(compiled, spans, threads)
