"""ember.profiler: per-op counts, times and bytes (``profile``, ``record_function``)."""

from .profiler import (
    EventList,
    FunctionEvent,
    FunctionEventAvg,
    ProfilerActivity,
    profile,
    record_function,
)

__all__ = [
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "ProfilerActivity",
    "profile",
    "record_function",
]
