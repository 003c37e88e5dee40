"""Grad mode: whether ops record the graph. Thread-local, like PyTorch's."""

from __future__ import annotations

import functools
import threading


class _GradState(threading.local):
    enabled = True
    inference = False


state = _GradState()


def is_grad_enabled() -> bool:
    return state.enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class _DecoratorContextManager:
    """A context manager that also decorates functions (and generator functions are not special)."""

    def __new__(cls, *args, **kwargs):
        # ``@no_grad`` without parentheses: the function arrives as the only argument
        if cls in (no_grad, enable_grad) and len(args) == 1 and callable(args[0]) and not kwargs:
            return object.__new__(cls)(args[0])
        return object.__new__(cls)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disable graph recording inside the block.

    Example::
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = False

    def __exit__(self, *exc):
        state.enabled = self.prev
        return False


class enable_grad(_DecoratorContextManager):
    """Enable graph recording inside the block (for example inside ``no_grad``)."""

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc):
        state.enabled = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off; works as a function call, a context manager or a decorator."""

    def __init__(self, mode: bool):
        self.prev = state.enabled
        self.mode = bool(mode)
        state.enabled = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.enabled = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``; tensors made inside are plain tensors that never require grad."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (state.enabled, state.inference)
        if self.mode:
            state.enabled, state.inference = False, True

    def __exit__(self, *exc):
        state.enabled, state.inference = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)
