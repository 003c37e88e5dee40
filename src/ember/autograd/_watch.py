"""One switch that ops test once per call.

When something watches this thread (anomaly mode, a memory scope, the profiler, module
tracking for graph pictures), every new tensor, view and graph node is shown to it, and the
engine times each node. When nothing watches, an op pays for one attribute test.
"""

from __future__ import annotations

import threading


class _Watch(threading.local):
    on = False  # anomaly mode or any observer is active in this thread
    observers: tuple = ()
    timing = False  # some observer wants node_ran() from the engine


watch = _Watch()


class Observer:
    """What an observer may implement; the defaults do nothing."""

    wants_timing = False

    def tensor_created(self, t) -> None:
        """``t`` was made by an op or a creation function (its data may be new memory)."""

    def view_made(self, t) -> None:
        """``t`` (already shown to ``tensor_created``) shares memory with an older tensor."""

    def node_created(self, node, out, saved) -> None:
        """An op recorded ``node`` with output ``out`` and saved tensors ``saved``."""
        self.tensor_created(out)

    def node_started(self, node) -> None:
        """The engine is about to run ``node``'s backward."""

    def node_ran(self, node, start_ns: int, end_ns: int) -> None:
        """The engine ran ``node``'s backward between the two ``perf_counter_ns`` readings."""


def refresh() -> None:
    from . import anomaly

    watch.on = bool(watch.observers) or anomaly.state.enabled
    watch.timing = any(o.wants_timing for o in watch.observers)


def add(observer: Observer) -> None:
    watch.observers = watch.observers + (observer,)
    refresh()


def remove(observer: Observer) -> None:
    watch.observers = tuple(o for o in watch.observers if o is not observer)
    refresh()


def node_created(node, out, saved=()) -> None:
    from . import anomaly

    if anomaly.state.enabled:
        anomaly.record_trace(node)
    for o in watch.observers:
        o.node_created(node, out, saved)


def tensor_created(t) -> None:
    for o in watch.observers:
        o.tensor_created(t)


def view_made(t) -> None:
    for o in watch.observers:
        o.view_made(t)


def memory_root(data):
    """The array that owns the memory behind ``data`` (itself unless it is a view; an array
    over a foreign buffer such as ``bytes`` is its own root)."""
    base = data.base
    while base is not None and hasattr(base, "base") and hasattr(base, "nbytes"):
        data, base = base, base.base
    return data
