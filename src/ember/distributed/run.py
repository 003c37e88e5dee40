"""``python -m ember.distributed.run`` (``ember run``): torchrun for ember, one process per rank.

    python -m ember.distributed.run --nproc-per-node 2 train.py --epochs 3

starts ``train.py`` ``--nproc-per-node`` times on this machine, each under ``mpiexec -n 1`` (MPICH
can only connect processes a process manager started), with torchrun's variables set: ``RANK``,
``LOCAL_RANK``, ``GROUP_RANK``, ``ROLE_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``,
``GROUP_WORLD_SIZE``, ``ROLE_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` and the
``TORCHELASTIC_*`` ones, so the script only calls ``dist.init_process_group("gloo")``.

Several machines, three ways:

- once per machine: ``--nnodes M --node-rank R --master-addr <node 0> --master-port P`` (or
  ``--rdzv-endpoint <node 0>:P``); the ranks of node R are ``R * nproc_per_node + local_rank``.
  Unlike torchrun's c10d rendezvous, node ranks are not handed out: each node names its own.
- once, with ``--hostfile FILE`` (one host per line, ``#`` comments; ``host slots=N`` gives
  ``--nproc-per-node``): the launcher starts itself on every host through ``ssh`` (``--rsh``
  names another remote shell), host i being node i, the first host the master. The hosts need
  the same Python environment and working directory.
- MPI's own launcher: ``mpiexec -f hostfile -n N python train.py`` (MPICH) or ``srun``;
  ``init_process_group`` then uses MPI's world directly.

The first rank to fail makes the others be terminated; with ``--max-restarts K`` (one node) the
ranks are started again, up to K times, with ``TORCHELASTIC_RESTART_COUNT`` counting.

Ctrl-C, ``kill`` (SIGTERM) or a closed terminal (SIGHUP) stop every rank (SIGTERM, then SIGKILL
after a grace period or a second Ctrl-C) with one line on stderr and the shell's exit code,
128 + the signal's number. The script is checked before any rank starts. The ranks' stdout comes
through the launcher a whole line at a time, without the "BAD TERMINATION" banner ``mpiexec``
prints when its rank dies of a signal (``_rank_output.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.machinery
import importlib.util
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from ..utils._file_checks import why_unusable
from ._rank_output import RankOutput

PROG = "python -m ember.distributed.run"
STOP_GRACE = 30.0  # seconds a stopped rank has to finish (torchrun's), before SIGKILL


class _UsageError(Exception):
    """A mistake in how the launcher was called: one line on stderr, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise _UsageError(f"{message} (see `{self.prog} --help`)")


def _parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
        usage="%(prog)s [--nproc-per-node N] [options] training_script [script arguments ...]",
        description="Start one process per rank with the env:// rendezvous variables set.",
    )
    add = parser.add_argument
    add(
        "--nproc-per-node",
        "--nproc_per_node",
        default=None,
        help="ranks on this node: a number, or cpu, gpu or auto (default 1)",
    )
    add("--nnodes", default="1", help="number of nodes (N, or N:N; elastic ranges are not run)")
    add("--node-rank", "--node_rank", type=int, default=0, help="this node's index")
    add("--master-addr", "--master_addr", default=None, help="rank 0's address")
    add("--master-port", "--master_port", type=int, default=None, help="rank 0's TCP port")
    add("--rdzv-endpoint", "--rdzv_endpoint", default="", help="host[:port] of rank 0")
    add("--rdzv-backend", "--rdzv_backend", default="static", help="static or c10d (the same)")
    add("--rdzv-id", "--rdzv_id", default="none", help="the job's id (TORCHELASTIC_RUN_ID)")
    add("--rdzv-conf", "--rdzv_conf", default="", help="accepted for torchrun's sake")
    add("--standalone", action="store_true", help="one node, a free port chosen")
    add("--max-restarts", "--max_restarts", type=int, default=0, help="restarts after a failure")
    add("--monitor-interval", "--monitor_interval", type=float, default=0.1, help="seconds")
    add("--role", default="default", help="the workers' role name (ROLE_NAME)")
    add("--hostfile", default=None, help="hosts to start the launcher on over ssh, one a line")
    add("--rsh", default="ssh", help="the remote shell --hostfile uses (default ssh)")
    add("--timeout", type=float, default=None, help="seconds before every rank is terminated")
    add("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    add("--no-python", "--no_python", action="store_true", help="run the script as a program")
    # optional for argparse, checked by main: argparse would call both positionals "required"
    add("training_script", nargs="?", help="the script (or module, or program) to run")
    add("training_script_args", nargs=argparse.REMAINDER, help="the script's own arguments")
    return parser


def _nnodes(text: str) -> int:
    low, _, high = str(text).partition(":")
    try:
        low_n, high_n = int(low), int(high or low)
    except ValueError:
        raise ValueError(f"--nnodes must be N or N:N, got {text!r}") from None
    if low_n != high_n or low_n < 1:
        raise ValueError(
            f"--nnodes {text}: ember starts a fixed number of nodes (elastic ranges MIN:MAX "
            "with MIN != MAX are not supported)"
        )
    return low_n


def _nproc_per_node(text: str | None) -> int:
    if text is None:
        return 1
    if text in ("cpu", "gpu", "auto"):
        gpus = 0
        if text != "cpu":
            from .. import cuda

            gpus = cuda.device_count() if cuda.is_available() else 0
        if text == "gpu" and gpus == 0:
            raise ValueError("--nproc-per-node gpu: no CUDA device is available")
        return gpus or os.cpu_count() or 1
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"Unsupported nproc_per_node value: {text}") from None
    if n < 1:
        raise ValueError(f"--nproc-per-node must be at least 1, got {n}")
    return n


def _endpoint(args) -> tuple[str, int]:
    """Rank 0's address and port from --master-* or --rdzv-endpoint (torchrun's defaults)."""
    addr, port = args.master_addr, args.master_port
    if args.rdzv_endpoint:
        host, _, given_port = args.rdzv_endpoint.rpartition(":")
        if not host:  # no port given
            host, given_port = args.rdzv_endpoint, ""
        addr = addr or host
        port = port or (int(given_port) if given_port else 29400)
    return addr or "127.0.0.1", port or 29500


def _read_hostfile(path: str) -> list[tuple[str, int | None]]:
    """(host, slots or None) per line of a hostfile; ``#`` starts a comment."""
    hosts = []
    try:
        f = open(path)
    except OSError as exc:
        raise ValueError(f"--hostfile {path}: {(exc.strerror or str(exc)).lower()}") from None
    with f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            host, *rest = line.split()
            slots = None
            for item in rest:
                if item.startswith("slots="):
                    slots = int(item[len("slots=") :])
            if ":" in host and host.rsplit(":", 1)[1].isdigit():  # MPICH's host:N
                host, slots = host.rsplit(":", 1)[0], int(host.rsplit(":", 1)[1])
            hosts.append((host, slots))
    if not hosts:
        raise ValueError(f"--hostfile {path}: no hosts in it")
    return hosts


def _program(args) -> list[str]:
    if args.no_python:
        program = [args.training_script]
    elif args.module:
        program = [sys.executable, "-m", args.training_script]
    else:
        program = [sys.executable, args.training_script]
    return program + args.training_script_args


def _check_program(args) -> None:
    """Refuse a script, module or program that is not there before any rank starts: each rank
    would otherwise start and report it, once per rank."""
    target = args.training_script
    if args.no_python:
        if os.sep in target:
            problem = _unrunnable(target, executable=True)
        else:
            problem = None if shutil.which(target) else "no such program on the PATH"
    elif args.module:
        top = target.partition(".")[0]
        try:  # the ranks' `python -m` looks in the working directory first
            found = importlib.machinery.PathFinder.find_spec(top, [os.getcwd()]) is not None
            found = found or importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        problem = None if found else "no such module"
    elif os.path.isfile(os.path.join(target, "__main__.py")):
        problem = None  # python runs a directory by its __main__.py
    else:
        problem = _unrunnable(target)
    if problem:
        raise _UsageError(f"{target}: {problem}")


def _unrunnable(path: str, executable: bool = False) -> str | None:
    """Why ``path`` cannot be run (``no such file``, ``permission denied``...), or None."""
    return why_unusable(path, directory="give the script to run", executable=executable)


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """Launch the ranks of this node (or of every host of --hostfile); the exit code.

    ``prog`` names the launcher in its usage and messages (``ember run`` for the CLI).
    """
    try:
        args = _parser(prog).parse_args(argv)
        if args.training_script is None:
            raise _UsageError(
                f"give the script to run, as in `{prog} --nproc-per-node 2 train.py --epochs 3` "
                f"(see `{prog} --help`)"
            )
        nproc = _nproc_per_node(args.nproc_per_node)
        nnodes = _nnodes(args.nnodes)
        hosts = _read_hostfile(args.hostfile) if args.hostfile else None
        if hosts is None:
            nnodes = _check_single_node(args, nnodes)
        else:
            _check_hosts(args, hosts)
        _check_program(args)
    except (_UsageError, ValueError) as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return 2
    received: list[int] = []
    with _stop_signals_recorded(received):
        if hosts is not None:
            return _launch_hosts(args, hosts, received, prog)
        addr, port = _endpoint(args)
        for restart in range(args.max_restarts + 1):
            code = _run_node(args, nproc, nnodes, addr, port, restart, received, prog)
            if code == 0 or received or restart == args.max_restarts:
                return code
            print(
                f"{prog}: restarting the workers ({restart + 1} of {args.max_restarts})",
                file=sys.stderr,
            )
    return 1


def _check_single_node(args, nnodes: int) -> int:
    """The node's flags checked (``--standalone`` applied); the number of nodes."""
    if args.standalone:
        from ..multiprocessing.spawn import _free_port

        nnodes, args.node_rank = 1, 0
        args.master_addr, args.master_port, args.rdzv_endpoint = "127.0.0.1", _free_port(), ""
    if not 0 <= args.node_rank < nnodes:
        raise _UsageError(f"--node-rank {args.node_rank} is not in [0, {nnodes})")
    if args.max_restarts and nnodes > 1:
        raise _UsageError(
            "--max-restarts needs a single node (--nnodes 1): a node restarting alone would "
            "wait for ever for the others"
        )
    return nnodes


def _usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _node_env(
    args, nproc: int, nnodes: int, addr: str, port: int, restart: int, prog: str = PROG
) -> dict:
    env = dict(os.environ)
    env.update(
        MASTER_ADDR=addr,
        MASTER_PORT=str(port),
        WORLD_SIZE=str(nnodes * nproc),
        ROLE_WORLD_SIZE=str(nnodes * nproc),
        LOCAL_WORLD_SIZE=str(nproc),
        GROUP_RANK=str(args.node_rank),
        GROUP_WORLD_SIZE=str(nnodes),
        ROLE_NAME=args.role,
        TORCHELASTIC_RESTART_COUNT=str(restart),
        TORCHELASTIC_MAX_RESTARTS=str(args.max_restarts),
        TORCHELASTIC_RUN_ID=args.rdzv_id,
        TORCHELASTIC_USE_AGENT_STORE="False",
    )
    if nproc > 1 and "OMP_NUM_THREADS" not in env:
        # as torchrun: ranks sharing a machine each using every core slow each other down
        env["OMP_NUM_THREADS"] = "1"
        cores = _usable_cores()
        # torchrun says so at every launch; the notice is worth a line only where there is
        # something to tune: with no more cores than ranks, one thread each is the right value
        if restart == 0 and cores > nproc:
            print(
                f"{prog}: OMP_NUM_THREADS=1 for each of the {nproc} processes, as torchrun sets "
                f"it; with {cores} cores here, set OMP_NUM_THREADS={cores // nproc} to give each "
                "process its share",
                file=sys.stderr,
            )
    return env


def _run_node(
    args,
    nproc: int,
    nnodes: int,
    addr: str,
    port: int,
    restart: int,
    received: list[int],
    prog: str = PROG,
) -> int:
    """Start this node's ranks once and wait for them."""
    from ..multiprocessing.spawn import _mpiexec

    program = _program(args)
    launcher = _mpiexec()
    env = _node_env(args, nproc, nnodes, addr, port, restart, prog)
    processes = []
    # mpiexec's output goes through the launcher: whole lines, and no banner when it is stopped
    output = None
    if launcher is not None:
        with contextlib.suppress(OSError):  # OSError: this process has no stdout to copy to
            output = RankOutput()
    try:
        for local_rank in range(nproc):
            if received:  # stopped while starting: start no more
                break
            rank = args.node_rank * nproc + local_rank
            env["RANK"] = env["ROLE_RANK"] = str(rank)
            env["LOCAL_RANK"] = str(local_rank)
            command = program if launcher is None else [launcher, "-n", "1", *program]
            stdout = output.pipe() if output is not None else None
            try:
                processes.append(
                    subprocess.Popen(command, env=dict(env), stdout=stdout, start_new_session=True)
                )
            finally:
                if stdout is not None:
                    os.close(stdout)
        return _wait(processes, args.timeout, received, prog)
    finally:
        if output is not None:
            output.close()


def _wait(processes: list, timeout: float | None, received: list[int], prog: str = PROG) -> int:
    """Wait for the ranks; the first to fail, the timeout or a stop signal ends them all."""
    from ..multiprocessing.spawn import ProcessContext, ProcessException

    scratch = tempfile.mkdtemp(prefix="ember-run-")
    context = ProcessContext(processes, scratch, os.path.join(scratch, "none"), timeout)
    try:
        while not received:
            try:
                if context.join(timeout=0.1):
                    return 0
            except (ProcessException, TimeoutError) as error:
                if received:  # the same signal reached the ranks (a whole process tree's kill)
                    break
                print(f"{prog}: {error}", file=sys.stderr)
                return 1
        return _stop(processes, received, prog)
    finally:
        context._cleanup()


# ---- stopping: signals, and the ranks' way out --------------------------------------------


def signal_event(signum: int) -> str:
    """What a stop signal is called in ember's one-line report: ``interrupted (Ctrl-C)``."""
    names = {
        signal.SIGINT: "interrupted (Ctrl-C)",
        signal.SIGTERM: "terminated (SIGTERM)",
    }
    if hasattr(signal, "SIGHUP"):
        names[signal.SIGHUP] = "hung up (SIGHUP: the terminal was closed)"
    return names.get(signum, f"stopped by {signal.Signals(signum).name}")


_STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


@contextlib.contextmanager
def _stop_signals_recorded(received: list[int]):
    """While it lasts, Ctrl-C, SIGTERM and SIGHUP are appended to ``received`` instead of
    stopping the launcher: the waiting loop sees them and stops the ranks (which run in
    sessions of their own, out of reach of the terminal's Ctrl-C). Signals that were ignored
    (``nohup``, a background job's SIGINT) stay ignored."""

    def record(signum, frame):
        received.append(signum)

    previous = {}
    try:
        for name in _STOP_SIGNALS:
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
                previous[sig] = signal.signal(sig, record)
    except ValueError:  # not the main thread: signals stay as they are
        pass
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop(processes: list, received: list[int], prog: str = PROG) -> int:
    """Stop the ranks after a signal; one line saying so; 128 + the signal's number."""
    running = [p for p in processes if p.poll() is None]
    _terminate(processes, received, prog)
    stopped = ""
    if running:
        stopped = f"; stopped {len(running)} process{'' if len(running) == 1 else 'es'}"
    print(f"{prog}: {signal_event(received[0])}{stopped}", file=sys.stderr)
    return 128 + received[0]


def _terminate(processes: list, received: list[int], prog: str = PROG) -> None:
    """Stop the ranks; a second stop signal (Ctrl-C again) kills those still finishing."""
    seen = len(received)

    def say_waiting(left: int) -> None:
        print(
            f"{prog}: waiting for {left} process{'' if left == 1 else 'es'} to stop "
            f"(Ctrl-C again, or {STOP_GRACE:g} seconds, kills them)",
            file=sys.stderr,
        )

    stop_process_groups(processes, hurry=lambda: len(received) > seen, on_slow=say_waiting)


def stop_process_groups(
    processes: list,
    grace: float = STOP_GRACE,
    hurry: Callable[[], bool] | None = None,
    on_slow: Callable[[int], None] | None = None,
) -> None:
    """Stop processes started with ``start_new_session=True`` and all they started (an
    ``mpiexec``, its proxy and the rank): SIGTERM to every process group, SIGKILL to what is
    left after ``grace`` seconds or once ``hurry()`` says so. ``on_slow(left)`` is called once
    if some are still running after 3 seconds.

    Every group is frozen (SIGSTOP) before any is terminated: a rank that died while a peer
    still ran would make the peer's MPI report the loss (UCX's "process_vm_readv ... No such
    process") before the peer was stopped in turn. SIGTERM ends a frozen process that has no
    handler for it at once; SIGCONT then lets those with one (a checkpoint on SIGTERM) run it.
    """
    for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGCONT):
        for p in processes:
            _signal_group(p, sig)
    began = time.monotonic()
    said = False
    while any(p.poll() is None for p in processes):
        waited = time.monotonic() - began
        if (hurry is not None and hurry()) or waited > grace:
            break
        if waited > 3 and not said and on_slow is not None:
            on_slow(sum(p.poll() is None for p in processes))
            said = True
        time.sleep(0.02)
    for p in processes:
        _signal_group(p, signal.SIGKILL)  # what is left of the group, even if mpiexec is gone
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(5.0)


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)  # the rank's own session: its group id is its pid


def _node_flags(args) -> list[str]:
    """The flags a node's launcher gets from the --hostfile launcher, besides its place."""
    flags = ["--role", args.role, "--rdzv-id", args.rdzv_id]
    if args.nproc_per_node is not None:
        flags += ["--nproc-per-node", str(args.nproc_per_node)]
    if args.timeout is not None:
        flags += ["--timeout", str(args.timeout)]
    if args.module:
        flags.append("--module")
    if args.no_python:
        flags.append("--no-python")
    return flags + [args.training_script, *args.training_script_args]


def _check_hosts(args, hosts: list) -> None:
    """The --hostfile's hosts agree with --nnodes and each other (``--nproc-per-node`` from
    their slots when not given)."""
    if args.nnodes != "1" and _nnodes(args.nnodes) != len(hosts):
        raise ValueError(f"--nnodes {args.nnodes} but --hostfile lists {len(hosts)} hosts")
    slots = {s for _, s in hosts if s is not None}
    if len(slots) > 1:
        raise ValueError(f"--hostfile {args.hostfile}: every host needs the same slots, {slots}")
    if args.nproc_per_node is None and slots:
        args.nproc_per_node = str(slots.pop())


def _launch_hosts(args, hosts: list, received: list[int], prog: str = PROG) -> int:
    """Start the launcher on every host of the hostfile (node i on host i) and wait."""
    master = args.master_addr or hosts[0][0]
    port = args.master_port
    if port is None:
        port = int(args.rdzv_endpoint.rpartition(":")[2]) if ":" in args.rdzv_endpoint else 29500
    processes = []
    for node_rank, (host, _) in enumerate(hosts):
        if received:
            break
        remote = [sys.executable, "-m", "ember.distributed.run"]
        remote += ["--nnodes", str(len(hosts)), "--node-rank", str(node_rank)]
        remote += ["--master-addr", master, "--master-port", str(port)]
        command = f"cd {shlex.quote(os.getcwd())} && {shlex.join(remote + _node_flags(args))}"
        processes.append(
            subprocess.Popen([*shlex.split(args.rsh), host, command], start_new_session=True)
        )
    return _wait(processes, args.timeout, received, prog)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # before the launcher took Ctrl-C over
        print(f"{PROG}: {signal_event(signal.SIGINT)}", file=sys.stderr)
        sys.exit(128 + signal.SIGINT)
