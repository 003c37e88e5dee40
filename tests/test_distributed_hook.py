"""ember._distributed_hook: the layer below ember.distributed reaches it only through what
ember.distributed registers when it is imported; before that no process group exists."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_nn_data_and_optim_work_without_loading_distributed():
    out = _run(
        """
        import sys
        import ember
        from ember import nn
        from ember.nn.parallel import DistributedDataParallel
        from ember.utils import data
        import ember.optim

        net = nn.SyncBatchNorm(3)
        x = ember.arange(24.0).reshape(4, 3, 2)
        expected = nn.functional.batch_norm(x, None, None, training=True)
        assert ember.allclose(net(x), expected)  # no process group: batch norm
        try:
            DistributedDataParallel(nn.Linear(2, 1))
        except ValueError as error:
            print(error)
        try:
            data.DistributedSampler(range(8))
        except (ValueError, RuntimeError) as error:
            print(error if ember._distributed_hook.is_available() else f"no MPI: {error}")
        print(sorted(m for m in ("ember.distributed", "ember.futures", "ember._compile")
                     if m in sys.modules))
        """
    )
    lines = out.splitlines()
    assert lines[0].startswith("Default process group has not been initialized")
    # as torch: the sampler asks the default group for its world size and rank
    assert lines[1].startswith("Default process group has not been initialized") or (
        lines[1] == "no MPI: Requires distributed package to be available"
    )
    assert lines[2] == "[]"


def test_importing_distributed_registers_what_the_layer_below_calls():
    import ember.distributed as dist
    from ember import _distributed_hook
    from ember.distributed import _registered

    assert _distributed_hook.DISTRIBUTED is _registered
    assert _distributed_hook.distributed() is _registered
    assert _registered.all_reduce is dist.all_reduce
    assert _registered.GradBucket is dist.GradBucket
    for name in _registered.__all__:
        assert getattr(_registered, name) is not None


def test_importing_compile_registers_the_fused_kernels_recorder():
    from ember._compile import trace
    from ember.optim import _fused

    assert _fused.RECORD_CALL is trace._call
