"""``ember.futures``: ``Future``, the result of asynchronous work (torch.futures' API).

A Future is completed once, with ``set_result`` or ``set_exception``. ``then`` chains a callback
that runs when it completes; ``wait`` blocks until then (or drives the work it stands for, such
as a started collective, to completion) and returns the value or raises the exception.

Example::
    >>> fut = ember.futures.Future()
    >>> doubled = fut.then(lambda f: f.value() * 2)
    >>> fut.set_result(21)
    >>> doubled.wait()
    42
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = ["Future", "collect_all", "wait_all"]


class Future(Generic[T]):
    """A value that becomes available later; completed once by ``set_result``/``set_exception``.

    ``Future[Tensor]`` is accepted in annotations, as torch's.

    Example::
        >>> fut = Future()
        >>> fut.done()
        False
        >>> fut.set_result(3)
        >>> fut.wait()
        3
    """

    def __init__(self, *, devices=None) -> None:
        self._done = False
        self._value: Any = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable] = []
        self._condition = threading.Condition()
        # what makes progress on the work this Future stands for (a Work's wait), and what
        # asks whether it is done without blocking (a Work's is_completed)
        self._drive: Callable[[], None] | None = None
        self._poll: Callable[[], bool] | None = None

    def done(self) -> bool:
        """Whether the Future has a value or an exception."""
        if not self._done and self._poll is not None:
            self._poll()
        return self._done

    def wait(self) -> T:
        """Block until completed; the value, or raise the exception it was completed with."""
        if not self._done and self._drive is not None:
            self._drive()
        with self._condition:
            while not self._done:
                self._condition.wait()
        if self._exception is not None:
            raise self._exception
        return self._value

    def value(self) -> T:
        """The value of a completed Future (raises its exception if it failed)."""
        return self.wait()

    def set_result(self, result: T) -> None:
        """Complete the Future with ``result``; its callbacks run now."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the Future with an error that ``wait``/``value`` will raise."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._complete(None, result)

    def _complete(self, value, exception) -> None:
        with self._condition:
            if self._done:
                raise RuntimeError(
                    "Attempting to mark a completed Future as complete again. Note that a Future "
                    "can only be marked completed once."
                )
            self._value, self._exception, self._done = value, exception, True
            callbacks, self._callbacks = self._callbacks, []
            self._condition.notify_all()
        for callback in callbacks:
            callback(self)

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run ``callback(self)`` once completed (at once if it is already)."""
        with self._condition:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[[Future[T]], Any]) -> Future:
        """A Future of ``callback(self)``, computed when this one completes.

        An exception raised by ``callback`` completes the new Future with a RuntimeError that
        names it (``Got the following error when running the callback: ...``), as torch.
        """
        chained: Future = Future()
        chained._drive = self._drive_self
        chained._poll = self.done

        def run(parent: Future) -> None:
            try:
                result = callback(parent)
            except Exception as error:  # handed to whoever waits, wrapped as torch does
                wrapped = RuntimeError(
                    "Got the following error when running the callback: "
                    f"{type(error).__name__}: {error}"
                )
                wrapped.__cause__ = error
                chained.set_exception(wrapped)
            else:
                chained.set_result(result)

        self.add_done_callback(run)
        return chained

    def _drive_self(self) -> None:
        if not self._done and self._drive is not None:
            self._drive()

    def __repr__(self) -> str:
        if not self._done:
            return "Future(pending)"
        if self._exception is not None:
            return f"Future(exception={self._exception!r})"
        return f"Future(value={self._value!r})"


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """A Future completed with the list ``futures`` once every one of them is done."""
    combined: Future = Future()
    futures = list(futures)

    def drive() -> None:
        for fut in futures:
            fut._drive_self()

    combined._drive = drive
    left = [len(futures)]
    lock = threading.Lock()

    def one_done(_fut: Future) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            combined.set_result(futures)

    if not futures:
        combined.set_result([])
    for fut in futures:
        fut.add_done_callback(one_done)
    return combined


def wait_all(futures: list[Future]) -> list:
    """Wait for every Future; their values (the first exception met is raised)."""
    return [fut.wait() for fut in futures]
