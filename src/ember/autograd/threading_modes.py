"""Switches PyTorch's autograd engine reads about threads and views.

ember's engine runs a backward pass in the calling thread (each thread can run its own), and
in-place ops on views are always replayed through the view chain, so these switches are
remembered and reported back for programs that set them.
"""

from __future__ import annotations

_state = {"multithreading": True, "view_replay": False}


def is_multithreading_enabled() -> bool:
    return _state["multithreading"]


def is_view_replay_enabled() -> bool:
    return _state["view_replay"]


class _Switch:
    """Sets a mode when built (as PyTorch's does), restores it when its ``with`` block ends."""

    key = ""

    def __init__(self, mode: bool) -> None:
        self.previous = _state[self.key]
        _state[self.key] = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        _state[self.key] = self.previous


class set_multithreading_enabled(_Switch):
    key = "multithreading"


class _force_original_view_tracking(_Switch):
    key = "view_replay"
