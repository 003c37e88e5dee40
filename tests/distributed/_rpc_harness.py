"""Start a world of RPC workers that run a test module's cases; read their outcomes back.

Each test module starts one world (about a second): every worker runs ``init_rpc``, then the
module's ``CASES`` (each records "ok" or its traceback), then ``shutdown`` (between the
module's optional ``before_shutdown(rank, out_dir)`` and ``after_shutdown(rank, out_dir)``).
Calls fail after ``RPC_TIMEOUT`` seconds and the whole world is ended after ``WORLD_TIMEOUT``,
so a hung test fails in seconds.
"""

from __future__ import annotations

import os

import pytest

from ._harness import WORLD_SIZE, free_port, read_outcomes, run_cases

RPC_TIMEOUT = 20.0  # also bounds the rendezvous, which waits for slow imports on a busy machine
WORLD_TIMEOUT = 40.0


def _rpc_worker(rank: int, out_dir: str, module_name: str) -> None:
    import importlib

    import ember.distributed.rpc as rpc

    module = importlib.import_module(module_name)
    # a module's INIT_METHOD, such as "tcp://{MASTER_ADDR}:{MASTER_PORT}", filled in from the
    # environment, which then no longer says where to meet
    init_method = getattr(module, "INIT_METHOD", "env://").format(**os.environ)
    if init_method != "env://":
        del os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]
    options = rpc.TensorPipeRpcBackendOptions(
        rpc_timeout=RPC_TIMEOUT, num_worker_threads=8, init_method=init_method
    )
    rpc.init_rpc(f"worker{rank}", rank=rank, world_size=WORLD_SIZE, rpc_backend_options=options)
    run_cases(rank, out_dir, module.CASES)
    if hasattr(module, "before_shutdown"):
        module.before_shutdown(rank, out_dir)
    rpc.shutdown()
    if hasattr(module, "after_shutdown"):
        module.after_shutdown(rank, out_dir)


def spawn_rpc_world(tmp_path_factory, module_name: str, worker=_rpc_worker):
    """Run ``worker(rank, out_dir, module_name)`` on WORLD_SIZE processes; their outcomes (one
    dict per rank) and the folder they wrote to."""
    import ember.multiprocessing as mp

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MASTER_ADDR", "127.0.0.1")
        patch.setenv("MASTER_PORT", str(free_port()))
        out_dir = str(tmp_path_factory.mktemp(module_name.rsplit(".", 1)[-1]))
        mp.spawn(worker, args=(out_dir, module_name), nprocs=WORLD_SIZE, timeout=WORLD_TIMEOUT)
    return read_outcomes(out_dir), out_dir
