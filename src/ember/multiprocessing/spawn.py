"""``spawn``: run ``fn(i, *args)`` in ``nprocs`` fresh Python processes, one per rank.

Each worker is a new interpreter started under ``mpiexec -n 1`` when the MPI launcher is there
(MPICH can only connect processes that a process manager started, see
``ember.distributed.rendezvous``), with ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` set. The first worker to fail makes the
others be terminated and its exception be re-raised in the parent with the worker's traceback.
"""

from __future__ import annotations

import multiprocessing.context
import multiprocessing.spawn
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

from .. import _shared_memory


class ProcessException(Exception):
    __slots__ = ["error_index", "pid"]

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A worker raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A worker exited with a non-zero code or was killed by a signal."""

    __slots__ = ["exit_code", "signal_name"]

    def __init__(
        self,
        msg: str,
        error_index: int,
        error_pid: int,
        exit_code: int,
        signal_name: str | None = None,
    ):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return (
            type(self),
            (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name),
        )


# signals that kill a process, whose numbers mpiexec (hydra) gives as its exit code
_SIGNALS_MPIEXEC_REPORTS = {
    int(s) for s in (signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE)
}


def _mpiexec() -> str | None:
    """The MPI launcher next to this Python (the mpich wheel's), else one on PATH."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(process: subprocess.Popen, grace: float = 2.0) -> None:
    """Terminate a worker and everything it started (its own process group)."""
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


class _Inheritance:
    """What multiprocessing's pickler asks of the process being spawned while it pickles for it:
    a descriptor the child must inherit (a queue's pipe, a shared tensor's segment) keeps its
    number, and every worker is started with all of them (through mpiexec too)."""

    def __init__(self):
        self.fds: list[int] = []
        self.handed_names: list[str] = []  # file_system segments whose reference goes along

    def duplicate_for_child(self, fd: int) -> int:
        self.fds.append(fd)
        return fd

    class DupFd:
        """The child's side of an inherited descriptor: the number it already has."""

        def __init__(self, fd: int):
            self.fd = fd

        def detach(self) -> int:
            return self.fd


class ProcessContext:
    """The running workers of a ``spawn(..., join=False)``: ``join()`` until it returns True."""

    def __init__(
        self,
        processes: list,
        payload_dir: str,
        payload_path: str,
        timeout: float | None = None,
        handed_names: list | None = None,
    ):
        self.processes = processes
        self._dir = payload_dir
        self._payload = payload_path
        self._handed_names = handed_names or [[] for _ in processes]
        self._deadline = None if timeout is None else time.monotonic() + timeout
        self._timeout = timeout

    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def _terminate_all(self) -> None:
        for index, p in enumerate(self.processes):
            _stop(p)
            # mpiexec normally takes its worker down with it; make sure nothing is left
            try:
                with open(f"{self._payload}.pid-{index}") as f:
                    pid = int(f.read())
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    ours = self._payload.encode() in f.read()  # not a reused pid
                if ours:
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass
        self._release_undelivered()

    def _release_undelivered(self) -> None:
        """A worker ended before it unpickled its arguments: the shared-memory references
        pickled for it are released here, or their /dev/shm names would outlive everyone."""
        for index, names in enumerate(self._handed_names):
            if not os.path.exists(f"{self._payload}.received-{index}"):
                for name in names:
                    _shared_memory.add_reference(name, -1)
            names.clear()

    def _cleanup(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    def _failure(self, index: int) -> ProcessException:
        process = self.processes[index]
        error_file = f"{self._payload}.error-{index}"
        if os.path.exists(error_file):
            with open(error_file) as f:
                trace = f.read()
            msg = f"\n\n-- Process {index} terminated with the following error:\n{trace}"
            return ProcessRaisedException(msg, index, process.pid)
        code = process.returncode
        if code < 0:
            name = signal.Signals(-code).name
            return ProcessExitedException(
                f"process {index} terminated with signal {name}", index, process.pid, code, name
            )
        under_mpiexec = os.path.basename(str(process.args[0])).startswith("mpiexec")
        if under_mpiexec and code in _SIGNALS_MPIEXEC_REPORTS:
            # mpiexec exits with the number of the signal that killed its worker
            name = signal.Signals(code).name
            return ProcessExitedException(
                f"process {index} terminated with exit code {code}: mpiexec's report of a worker "
                f"killed by signal {name}",
                index,
                process.pid,
                code,
                name,
            )
        return ProcessExitedException(
            f"process {index} terminated with exit code {code}", index, process.pid, code
        )

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the workers; True once all finished well, False if ``timeout`` ran out.

        The first failed worker makes the others be terminated and its error be raised.
        """
        until = None if timeout is None else time.monotonic() + timeout
        while True:
            for index, p in enumerate(self.processes):
                failed = os.path.exists(f"{self._payload}.error-{index}")
                if failed or (p.poll() not in (None, 0)):
                    if failed:
                        try:
                            p.wait(5.0)  # the worker is exiting: let its mpiexec finish
                        except subprocess.TimeoutExpired:
                            pass
                    self._terminate_all()
                    error = self._failure(index)
                    self._cleanup()
                    try:
                        raise error
                    finally:
                        # no cycle error -> traceback -> this frame -> error: the caller's
                        # arguments (shared tensors) go as soon as the caller drops them
                        del error
            if all(p.poll() == 0 for p in self.processes):
                self._cleanup()
                return True
            now = time.monotonic()
            if self._deadline is not None and now > self._deadline:
                self._terminate_all()
                self._cleanup()
                raise TimeoutError(
                    f"ember.multiprocessing.spawn: the workers did not finish within "
                    f"{self._timeout:g} seconds; all of them were terminated"
                )
            if until is not None and now > until:
                return False
            time.sleep(0.02)


class SpawnContext(ProcessContext):
    """torch's name before 1.4 for ``ProcessContext``; warns as torch does."""

    def __init__(self, *args, **kwargs):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(*args, **kwargs)


def start_processes(
    fn,
    args=(),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
    timeout: float | None = None,
):
    """``spawn`` with a ``start_method`` argument: ember always starts fresh interpreters."""
    if start_method not in ("spawn", "forkserver", "fork"):
        raise ValueError(f"Unsupported start_method: {start_method!r}")
    if timeout is None and os.environ.get("EMBER_SPAWN_TIMEOUT"):
        timeout = float(os.environ["EMBER_SPAWN_TIMEOUT"])
    payload_dir = tempfile.mkdtemp(prefix="ember-spawn-")
    payload_path = os.path.join(payload_dir, "payload")
    preparation = multiprocessing.spawn.get_preparation_data("ember-spawn")
    preparation.pop("authkey", None)  # not picklable outside multiprocessing's own pipes
    # pickled as multiprocessing's spawn pickles a Process: tensors as handles on shared memory,
    # queues, locks and managers' proxies as what a spawned child reopens them from
    # once per worker, as each spawned Process is pickled for itself: a handle given away (a
    # file_system segment's reference) is one worker's to release
    inherited, calls = [], []
    for _ in range(nprocs):
        inherited.append(_Inheritance())
        multiprocessing.context.set_spawning_popen(inherited[-1])
        try:
            calls.append(bytes(ForkingPickler.dumps((fn, tuple(args)))))
        finally:
            multiprocessing.context.set_spawning_popen(None)
    authkey = bytes(multiprocessing.current_process().authkey)
    with open(payload_path, "wb") as f:
        pickle.dump({"preparation": preparation, "authkey": authkey, "calls": calls}, f)
    env = dict(os.environ)
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", str(_free_port()))
    env["WORLD_SIZE"] = env["LOCAL_WORLD_SIZE"] = str(nprocs)
    # the worker imports ember before the parent's sys.path is restored
    src = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    launcher = _mpiexec()
    processes = []
    try:
        for index in range(nprocs):
            env["RANK"] = env["LOCAL_RANK"] = str(index)
            command = [
                sys.executable,
                "-m",
                "ember.multiprocessing._worker",
                payload_path,
                str(index),
            ]
            if launcher is not None:
                command = [launcher, "-n", "1", *command]
            processes.append(
                subprocess.Popen(
                    command, env=dict(env), start_new_session=True, pass_fds=inherited[index].fds
                )
            )
    except BaseException:
        for p in processes:
            _stop(p)
        shutil.rmtree(payload_dir, ignore_errors=True)
        raise
    handed_names = [i.handed_names for i in inherited]
    context = ProcessContext(processes, payload_dir, payload_path, timeout, handed_names)
    if not join:
        return context
    try:
        while not context.join():
            pass
    except KeyboardInterrupt:
        context._terminate_all()
        context._cleanup()
        raise
    return None


def spawn(
    fn,
    args=(),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
    timeout: float | None = None,
):
    """Run ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in a new process.

    ``fn`` must be importable by name (defined at the top level of a module or of the main
    script, whose ``if __name__ == "__main__":`` block the workers do not run). An exception in a
    worker terminates the others and is re-raised here as ``ProcessRaisedException`` with the
    worker's traceback. ``timeout`` (seconds, an ember addition) terminates all workers and
    raises ``TimeoutError`` when they have not finished by then; the environment variable
    ``EMBER_SPAWN_TIMEOUT`` gives a default.

    Example::
        >>> import ember.multiprocessing as mp
        >>> mp.spawn(train, args=(world_size,), nprocs=world_size, timeout=600)
    """
    return start_processes(fn, args, nprocs, join, daemon, "spawn", timeout)
