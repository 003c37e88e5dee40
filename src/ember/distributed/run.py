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
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
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
    add("training_script", help="the script (or module, or program) to run")
    add("training_script_args", nargs=argparse.REMAINDER)
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
    with open(path) as f:
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


def main(argv: list[str] | None = None) -> int:
    """Launch the ranks of this node (or of every host of --hostfile); the exit code."""
    args = _parser().parse_args(argv)
    try:
        nproc = _nproc_per_node(args.nproc_per_node)
        nnodes = _nnodes(args.nnodes)
        if args.hostfile:
            return _launch_hosts(args)
    except ValueError as error:
        print(f"ember.distributed.run: {error}", file=sys.stderr)
        return 2
    if args.standalone:
        from ..multiprocessing.spawn import _free_port

        nnodes, args.node_rank = 1, 0
        args.master_addr, args.master_port, args.rdzv_endpoint = "127.0.0.1", _free_port(), ""
    if not 0 <= args.node_rank < nnodes:
        print(
            f"ember.distributed.run: --node-rank {args.node_rank} is not in [0, {nnodes})",
            file=sys.stderr,
        )
        return 2
    if args.max_restarts and nnodes > 1:
        print(
            "ember.distributed.run: --max-restarts needs a single node (--nnodes 1): a node "
            "restarting alone would wait for ever for the others",
            file=sys.stderr,
        )
        return 2
    addr, port = _endpoint(args)
    for restart in range(args.max_restarts + 1):
        code = _run_node(args, nproc, nnodes, addr, port, restart)
        if code in (0, 130) or restart == args.max_restarts:
            return code
        print(
            f"ember.distributed.run: restarting the workers ({restart + 1} of {args.max_restarts})",
            file=sys.stderr,
        )
    return 1


def _node_env(args, nproc: int, nnodes: int, addr: str, port: int, restart: int) -> dict:
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
        print(
            "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
            "to avoid your system being overloaded, please further tune the variable for "
            "optimal performance in your application as needed.",
            file=sys.stderr,
        )
        env["OMP_NUM_THREADS"] = "1"
    return env


def _run_node(args, nproc: int, nnodes: int, addr: str, port: int, restart: int) -> int:
    """Start this node's ranks once and wait for them."""
    from ..multiprocessing.spawn import _mpiexec

    program = _program(args)
    launcher = _mpiexec()
    env = _node_env(args, nproc, nnodes, addr, port, restart)
    processes = []
    for local_rank in range(nproc):
        rank = args.node_rank * nproc + local_rank
        env["RANK"] = env["ROLE_RANK"] = str(rank)
        env["LOCAL_RANK"] = str(local_rank)
        command = program if launcher is None else [launcher, "-n", "1", *program]
        processes.append(subprocess.Popen(command, env=dict(env), start_new_session=True))
    return _wait(processes, args.timeout)


def _wait(processes: list, timeout: float | None) -> int:
    from ..multiprocessing.spawn import ProcessContext, ProcessException

    scratch = tempfile.mkdtemp(prefix="ember-run-")
    context = ProcessContext(processes, scratch, os.path.join(scratch, "none"), timeout)
    try:
        while not context.join():
            pass
    except (ProcessException, TimeoutError) as error:
        print(f"ember.distributed.run: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        context._terminate_all()
        context._cleanup()
        return 130
    return 0


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


def _launch_hosts(args) -> int:
    """Start the launcher on every host of the hostfile (node i on host i) and wait."""
    hosts = _read_hostfile(args.hostfile)
    if args.nnodes != "1" and _nnodes(args.nnodes) != len(hosts):
        raise ValueError(f"--nnodes {args.nnodes} but --hostfile lists {len(hosts)} hosts")
    slots = {s for _, s in hosts if s is not None}
    if len(slots) > 1:
        raise ValueError(f"--hostfile {args.hostfile}: every host needs the same slots, {slots}")
    if args.nproc_per_node is None and slots:
        args.nproc_per_node = str(slots.pop())
    master = args.master_addr or hosts[0][0]
    port = args.master_port
    if port is None:
        port = int(args.rdzv_endpoint.rpartition(":")[2]) if ":" in args.rdzv_endpoint else 29500
    processes = []
    for node_rank, (host, _) in enumerate(hosts):
        remote = [sys.executable, "-m", "ember.distributed.run"]
        remote += ["--nnodes", str(len(hosts)), "--node-rank", str(node_rank)]
        remote += ["--master-addr", master, "--master-port", str(port)]
        command = f"cd {shlex.quote(os.getcwd())} && {shlex.join(remote + _node_flags(args))}"
        processes.append(
            subprocess.Popen([*shlex.split(args.rsh), host, command], start_new_session=True)
        )
    return _wait(processes, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
