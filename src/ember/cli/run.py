"""``ember run``: start a training script on several processes (torchrun's flags).

Everything after ``ember run`` goes to ``ember.distributed.run`` (also runnable as
``python -m ember.distributed.run``), which names itself ``ember run`` in its usage and
messages: ``--nproc-per-node N [--nnodes M --node-rank R --master-addr A --master-port P |
--rdzv-endpoint A:P | --standalone | --hostfile FILE] [--max-restarts K] script.py args``.
"""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser(
        "run",
        help="run a training script on several processes (torchrun's flags)",
        description="Start SCRIPT once per process with RANK, WORLD_SIZE, LOCAL_RANK, "
        "MASTER_ADDR and MASTER_PORT set, as torchrun does (MPI underneath): "
        "`ember run --nproc-per-node 2 train.py --epochs 3`; on several machines "
        "`--nnodes M --node-rank R --master-addr A` on each, or `--hostfile FILE` once (ssh). "
        "See `ember run --help` for every flag.",
        add_help=False,
    )
    p.add_argument("arguments", nargs=argparse.REMAINDER)
    p.set_defaults(run=run)


def run(args) -> int:
    return run_argv(args.arguments)


def run_argv(argv: list[str]) -> int:
    from ..distributed.run import main

    return main(argv, prog="ember run")
