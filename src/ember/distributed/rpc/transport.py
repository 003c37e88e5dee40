"""The RPC agent's connections: a message as frames on a ``multiprocessing.connection``
(``Link``), the key that authenticates them, and the thread that fails calls past their
timeout (``Deadlines``)."""

from __future__ import annotations

import heapq
import os
import socket
import threading
import time

from . import serialization

_DEFAULT_AUTHKEY = b"ember.distributed.rpc"


def authkey() -> bytes:
    key = os.environ.get("EMBER_RPC_AUTHKEY")
    return key.encode() if key else _DEFAULT_AUTHKEY


class Link:
    """One connection to a peer: the frames of one message are sent together."""

    def __init__(self, conn, peer: int) -> None:
        self.conn = conn
        self.peer = peer
        self.send_lock = threading.Lock()
        self.finished = False  # the peer closed its end (a reading thread saw end of file)
        try:  # a call is several small frames: without this, Nagle's algorithm holds each ~40 ms
            with socket.fromfd(conn.fileno(), socket.AF_INET, socket.SOCK_STREAM) as s:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    def send_pair(self, header, payload: serialization.Pickled) -> None:
        """The header (with how many buffers follow), the pickle stream, then each buffer."""
        with self.send_lock:
            self.conn.send((header, len(payload.buffers)))
            self.conn.send_bytes(payload.data)
            for buffer in payload.buffers:
                self.conn.send_bytes(buffer)

    def receive_pair(self):
        header, count = self.conn.recv()
        data = self.conn.recv_bytes()
        buffers = [self.conn.recv_bytes() for _ in range(count)]
        return header, serialization.Pickled(data, buffers)

    def hang_up(self) -> None:
        """Close, waking a thread blocked reading it (close alone does not, on Linux)."""
        try:
            with socket.fromfd(self.conn.fileno(), socket.AF_INET, socket.SOCK_STREAM) as s:
                s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.conn.close()
        except OSError:
            pass


class Deadlines:
    """One thread that fails calls past their timeout."""

    def __init__(self, on_expiry) -> None:
        self._heap: list = []
        self._condition = threading.Condition()
        self._on_expiry = on_expiry
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="ember-rpc-timeouts", daemon=True)
        self._thread.start()

    def add(self, deadline: float, message_id: int, timeout: float) -> None:
        with self._condition:
            heapq.heappush(self._heap, (deadline, message_id, timeout))
            self._condition.notify()

    def stop(self) -> None:
        with self._condition:
            self._stopped = True
            self._condition.notify()

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._stopped:
                    now = time.monotonic()
                    if self._heap and self._heap[0][0] <= now:
                        break
                    self._condition.wait(self._heap[0][0] - now if self._heap else None)
                if self._stopped:
                    return
                _, message_id, timeout = heapq.heappop(self._heap)
            self._on_expiry(message_id, timeout)
