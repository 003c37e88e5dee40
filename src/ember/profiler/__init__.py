"""ember.profiler: per-op counts, times and bytes (``profile``, ``schedule``)."""

from .events import EventList, FunctionEvent, FunctionEventAvg
from .profiler import ProfilerActivity, profile, record_function
from .scheduling import ProfilerAction, schedule, tensorboard_trace_handler

__all__ = [
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "tensorboard_trace_handler",
]
