"""CUDA streams and events over CuPy's, with PyTorch's names and methods."""

from __future__ import annotations

from .. import _backend


def _require():
    from . import require

    return require()


class Stream:
    """A CUDA stream: kernels queued on it run in order, and may overlap other streams'.

    Example::
        >>> s = ember.cuda.Stream()
        >>> with ember.cuda.stream(s):
        ...     y = x @ x          # queued on s
        >>> s.synchronize()
    """

    def __init__(self, device=None, priority: int = 0, *, _cupy_stream=None):
        if _cupy_stream is not None:
            self._stream = _cupy_stream
            return
        if not _backend.cuda_available():
            raise RuntimeError(f"ember.cuda.Stream requires CUDA support ({_reason()})")
        cupy = _require()
        from . import _device_index

        index = _device_index(device, optional=False)
        with cupy.cuda.Device(index):
            self._stream = cupy.cuda.Stream(non_blocking=False, priority=priority or None)

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` as an integer."""
        return int(self._stream.ptr)

    @property
    def device(self):
        return _backend.device("cuda", int(getattr(self._stream, "device_id", 0)))

    def synchronize(self) -> None:
        """Wait until everything queued on this stream has run."""
        self._stream.synchronize()

    def query(self) -> bool:
        """True when everything queued on this stream has run."""
        return bool(self._stream.done)

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait for ``event``."""
        self._stream.wait_event(event._event)

    def wait_stream(self, stream: Stream) -> None:
        """Make later work on this stream wait for what is queued on ``stream`` now."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one when None) on this stream and return it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream

    def __hash__(self) -> int:
        return hash(self.cuda_stream)

    def __repr__(self) -> str:
        return f"<ember.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event: a marker in a stream to wait on or time between.

    Example::
        >>> start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
        >>> start.record(); y = x @ x; end.record(); end.synchronize()
        >>> start.elapsed_time(end)    # milliseconds
    """

    def __init__(
        self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ):
        if not _backend.cuda_available():
            raise RuntimeError(f"ember.cuda.Event requires CUDA support ({_reason()})")
        self._event = _require().cuda.Event(
            block=blocking, disable_timing=not enable_timing, interprocess=interprocess
        )

    def record(self, stream: Stream | None = None) -> None:
        """Mark the point now reached by ``stream`` (the current stream when None)."""
        stream = current_stream() if stream is None else stream
        self._event.record(stream._stream)

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on ``stream`` wait for this event."""
        stream = current_stream() if stream is None else stream
        stream.wait_event(self)

    def query(self) -> bool:
        return bool(self._event.done)

    def synchronize(self) -> None:
        self._event.synchronize()

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded and complete)."""
        return float(_require().cuda.get_elapsed_time(self._event, end_event._event))


def _reason() -> str:
    return _backend._cupy_error or "CuPy is not usable"


def current_stream(device=None) -> Stream:
    """The stream new CUDA work is queued on."""
    cupy = _require()
    return Stream(_cupy_stream=cupy.cuda.get_current_stream())


def default_stream(device=None) -> Stream:
    """The device's legacy default (null) stream."""
    cupy = _require()
    return Stream(_cupy_stream=cupy.cuda.Stream.null)


class StreamContext:
    """Make ``stream`` current inside the block (``None``: no change)."""

    def __init__(self, stream: Stream | None):
        self.stream = stream

    def __enter__(self):
        if self.stream is not None:
            self.stream._stream.__enter__()
        return self.stream

    def __exit__(self, *exc) -> bool:
        if self.stream is not None:
            self.stream._stream.__exit__(*exc)
        return False


def stream(stream: Stream | None) -> StreamContext:
    """Context manager that queues CUDA work on ``stream`` inside the block."""
    return StreamContext(stream)
