"""``python -m ember.distributed.run``: torchrun for ember, one process per rank.

    python -m ember.distributed.run --nproc-per-node 2 train.py --epochs 3

starts ``train.py`` ``--nproc-per-node`` times on this machine, each under ``mpiexec -n 1`` (MPICH
can only connect processes a process manager started), with the ``env://`` variables set:
``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``,
so the script only calls ``dist.init_process_group("gloo")``. On several machines run it once per
machine with ``--nnodes M --node-rank R --master-addr <node 0's address> --master-port P``; the
ranks of node R are ``R * nproc_per_node + local_rank``. On a Slurm or MPI cluster the simplest
way is MPI's own launcher: ``srun``/``mpiexec -n N python train.py`` (``init_process_group`` then
uses MPI's world directly). The first rank to fail makes the others be terminated.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
        description="Start one process per rank with the env:// rendezvous variables set.",
    )
    add = parser.add_argument
    add("--nproc-per-node", "--nproc_per_node", type=int, default=1, help="ranks on this node")
    add("--nnodes", type=int, default=1, help="number of nodes")
    add("--node-rank", "--node_rank", type=int, default=0, help="this node's index")
    add("--master-addr", "--master_addr", default="127.0.0.1", help="rank 0's address")
    add("--master-port", "--master_port", type=int, default=29500, help="rank 0's TCP port")
    add("--standalone", action="store_true", help="one node, a free port chosen")
    add("--timeout", type=float, default=None, help="seconds before every rank is terminated")
    add("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    add("--no-python", "--no_python", action="store_true", help="run the script as a program")
    add("training_script", help="the script (or module, or program) to run")
    add("training_script_args", nargs=argparse.REMAINDER)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Launch the ranks of this node and wait for them; returns the exit code."""
    from ..multiprocessing.spawn import ProcessContext, ProcessException, _free_port, _mpiexec

    args = _parser().parse_args(argv)
    if args.standalone:
        args.nnodes, args.node_rank = 1, 0
        args.master_addr, args.master_port = "127.0.0.1", _free_port()
    world_size = args.nnodes * args.nproc_per_node
    if args.no_python:
        program = [args.training_script]
    elif args.module:
        program = [sys.executable, "-m", args.training_script]
    else:
        program = [sys.executable, args.training_script]
    program += args.training_script_args
    launcher = _mpiexec()
    env = dict(os.environ)
    env.update(
        MASTER_ADDR=args.master_addr,
        MASTER_PORT=str(args.master_port),
        WORLD_SIZE=str(world_size),
        LOCAL_WORLD_SIZE=str(args.nproc_per_node),
        GROUP_RANK=str(args.node_rank),
    )
    if args.nproc_per_node > 1 and "OMP_NUM_THREADS" not in env:
        # as torchrun: ranks sharing a machine each using every core slow each other down
        print(
            "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
            "to avoid your system being overloaded, please further tune the variable for "
            "optimal performance in your application as needed.",
            file=sys.stderr,
        )
        env["OMP_NUM_THREADS"] = "1"
    processes = []
    for local_rank in range(args.nproc_per_node):
        env["RANK"] = str(args.node_rank * args.nproc_per_node + local_rank)
        env["LOCAL_RANK"] = str(local_rank)
        command = program if launcher is None else [launcher, "-n", "1", *program]
        processes.append(subprocess.Popen(command, env=dict(env), start_new_session=True))
    scratch = tempfile.mkdtemp(prefix="ember-run-")
    context = ProcessContext(processes, scratch, os.path.join(scratch, "none"), args.timeout)
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


if __name__ == "__main__":
    sys.exit(main())
