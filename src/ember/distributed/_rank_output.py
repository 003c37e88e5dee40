"""The ranks' stdout, copied through the launcher: whole lines, MPICH's banner dropped.

Each ``mpiexec`` forwards its rank's output in pieces (a line's text, then its newline), so two
ranks writing to one terminal garble each other's lines; and when its rank dies of a signal (a
stop the launcher asked for) it prints an 11-line "BAD TERMINATION" banner that says nothing the
launcher's own line does not. ``RankOutput`` gives each rank a pipe and copies what comes
through to this process's stdout a whole line at a time, without the banner.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections.abc import Iterator

PARTIAL_LINE_WAIT = 0.2  # seconds a line without its end (a prompt, a progress bar) is held

_BANNER_HEAD = b"=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"
_BANNER_TAIL = (
    b"YOUR APPLICATION TERMINATED WITH THE EXIT STRING",
    b"This typically refers to a problem with your application.",
    b"Please see the FAQ page for debugging suggestions",
)


def _is_rule(line: bytes) -> bool:
    body = line.rstrip(b"\n")
    return len(body) >= 10 and body.strip(b"=") == b""


class BannerFilter:
    r"""Drops MPICH's "BAD TERMINATION" banner from a stream, passing everything else.

    ``mpiexec`` (hydra) prints it on stdout whenever its process dies of a signal: when the
    launcher stops the ranks, 11 lines per rank that say nothing the launcher's own line does
    not. Complete lines are judged; a blank line or a rule of ``=`` that may begin a banner is
    held until the next line shows whether it does. Anything else passes on at once, partial
    lines (a progress bar) included.

    Example::
        >>> f = BannerFilter()
        >>> f.feed(b"step 1\n\n" + b"=" * 83 + b"\n=   BAD TERMINATION OF ONE OF YOUR ")
        b'step 1\n'
    """

    def __init__(self) -> None:
        self._held: list[bytes] = []  # complete lines that may begin a banner
        self._partial = b""  # the start of a line that may belong to one
        self._passing_line = False  # a line's start was passed on: its rest passes too
        self._in_banner = False

    def feed(self, data: bytes) -> bytes:
        out = []
        while data:
            end = data.find(b"\n")
            if self._passing_line:
                out.append(data if end < 0 else data[: end + 1])
                self._passing_line = end < 0
                data = b"" if end < 0 else data[end + 1 :]
                continue
            if end < 0:
                self._partial += data
                if not self._may_belong(self._partial):
                    out.append(b"".join(self._held) + self._partial)
                    self._held, self._partial, self._passing_line = [], b"", True
                break
            line, self._partial = self._partial + data[: end + 1], b""
            data = data[end + 1 :]
            out.append(self._line(line))
        return b"".join(out)

    def close(self) -> bytes:
        """What is still held, at the end of the stream."""
        rest = b"" if self._in_banner else b"".join(self._held) + self._partial
        self._held, self._partial = [], b""
        return rest

    def _line(self, line: bytes) -> bytes:
        if self._in_banner:
            if line.strip() == b"" or line.startswith((b"=", *_BANNER_TAIL)):
                return b""
            self._in_banner = False
        if line.startswith(_BANNER_HEAD) and self._held and _is_rule(self._held[-1]):
            self._held, self._in_banner = [], True
            return b""
        if self._starts_banner([*self._held, line]):
            self._held.append(line)
            return b""
        out = b"".join(self._held)
        self._held = []
        if self._starts_banner([line]):
            self._held = [line]
            return out
        return out + line

    @staticmethod
    def _starts_banner(lines: list[bytes]) -> bool:
        """A blank line, a rule, or a blank line and a rule: how a banner begins."""
        if len(lines) == 2:
            return lines[0] == b"\n" and _is_rule(lines[1])
        return len(lines) == 1 and (lines[0] == b"\n" or _is_rule(lines[0]))

    def _may_belong(self, partial: bytes) -> bool:
        if self._in_banner:
            return any(
                text.startswith(partial) or partial.startswith(text)
                for text in (b"=", *_BANNER_TAIL)
            )
        if partial.strip(b"=") == b"":
            return True
        return bool(self._held) and _is_rule(self._held[-1]) and _BANNER_HEAD.startswith(partial)


class RankOutput:
    """Pipes for the ranks' stdout, each copied to this process's stdout by a thread of its own.

    Example::
        >>> output = RankOutput()
        >>> write_end = output.pipe()
        >>> subprocess.Popen(command, stdout=write_end); os.close(write_end)
        >>> ...  # once the ranks have exited
        >>> output.close()
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one whole line at a time
        self._copiers: list[threading.Thread] = []
        try:
            sys.stdout.flush()
        except (OSError, ValueError, AttributeError):
            pass
        self._target = os.dup(1)

    def pipe(self) -> int:
        """The write end of a new pipe, for one process's stdout (close it once it is started)."""
        read_end, write_end = os.pipe()
        copier = threading.Thread(target=self._copy, args=(read_end,), daemon=True)
        copier.start()
        self._copiers.append(copier)
        return write_end

    def close(self, timeout: float = 2.0) -> None:
        """Wait for the copies to end (the processes have exited; one a rank left behind may
        still hold its pipe open, hence the timeout)."""
        for copier in self._copiers:
            copier.join(timeout)
        with self._lock:
            os.close(self._target)
            self._target = -1

    def _copy(self, source: int) -> None:
        banner_filter = BannerFilter()
        pending = b""
        try:
            while True:
                if pending and not select.select([source], [], [], PARTIAL_LINE_WAIT)[0]:
                    self._write(pending)  # a line that waits for its end: show what there is
                    pending = b""
                    continue
                data = os.read(source, 65536)
                if not data:
                    break
                pending += banner_filter.feed(data)
                end = max(pending.rfind(b"\n"), pending.rfind(b"\r")) + 1
                if end:
                    self._write(pending[:end])
                    pending = pending[end:]
            self._write(pending + banner_filter.close())
        finally:
            os.close(source)

    def _write(self, data: bytes) -> None:
        with self._lock:
            while data and self._target >= 0:
                try:
                    data = data[os.write(self._target, data) :]
                except OSError:  # the reader went away (`| head`): keep draining the ranks
                    return


@contextlib.contextmanager
def dropping_mpiexec_banners() -> Iterator[None]:
    """While it lasts, this process's stdout (file descriptor 1, which the processes it starts
    inherit) is a pipe of a ``RankOutput``: for code that starts its ranks itself
    (``ember.multiprocessing.spawn``)."""
    try:
        output = RankOutput()
    except (OSError, ValueError):  # no stdout to copy to
        yield
        return
    write_end = output.pipe()
    saved = os.dup(1)
    os.dup2(write_end, 1)
    os.close(write_end)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stdout.flush()
        os.dup2(saved, 1)  # this process's end of the pipe closes
        os.close(saved)
        output.close()
