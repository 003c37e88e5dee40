"""DDP hooks against torch's, both in this process as worlds of one rank: the buckets a hook
sees and the gradients the default hooks give."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
from ember.nn.parallel import DistributedDataParallel as DDP

from ._harness import free_port, needs_mpi

SIZES = [(6, 40), (40, 40), (40, 3)]  # Linear layers: several buckets with a small cap


@pytest.fixture
def worlds(torch_mod):
    """A one-rank world in each library (gloo), torn down after the test."""
    needs_mpi()
    import os

    import torch.distributed as tdist

    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    tdist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{free_port()}", world_size=1, rank=0
    )
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{free_port()}", world_size=1, rank=0
    )
    yield torch_mod
    dist.destroy_process_group()
    tdist.destroy_process_group()


def _models(torch):
    torch.manual_seed(0)
    layers = []
    for i, (a, b) in enumerate(SIZES):
        layers += [torch.nn.Linear(a, b)] + ([torch.nn.Tanh()] if i < len(SIZES) - 1 else [])
    reference = torch.nn.Sequential(*layers)
    mine = ember.nn.Sequential(
        *[
            ember.nn.Linear(a, b) if isinstance(m, torch.nn.Linear) else ember.nn.Tanh()
            for m in layers
            for a, b in [(getattr(m, "in_features", 0), getattr(m, "out_features", 0))]
        ]
    )
    with ember.no_grad():
        for p, q in zip(mine.parameters(), reference.parameters()):
            p.copy_(ember.from_numpy(q.detach().numpy().copy()))
    return mine, reference


def _run(model, ddp_cls, hook, x, y, lib):
    ddp = ddp_cls(model, bucket_cap_mb=0.004)
    seen = []

    def recording(state, bucket):
        seen.append(
            (
                bucket.index(),
                bucket.is_last(),
                int(bucket.buffer().numel()),
                [tuple(p.shape) for p in bucket.parameters()],
                [tuple(g.shape) for g in bucket.gradients()],
            )
        )
        return hook(state, bucket)

    ddp.register_comm_hook(None, recording)
    for _ in range(2):  # torch rebuilds its buckets after the first iteration
        seen.clear()
        ddp.zero_grad()
        ((ddp(x) - y) ** 2).mean().backward()
    return seen, [p.grad for p in model.parameters()]


@pytest.mark.parametrize("hook_name", ["allreduce_hook", "fp16_compress_hook"])
def test_hooks_see_torchs_buckets_and_give_its_gradients(worlds, hook_name):
    torch = worlds
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as torch_hooks

    mine, reference = _models(torch)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((5, 6)).astype(np.float32), rng.standard_normal((5, 3))
    y = y.astype(np.float32)
    seen, grads = _run(
        mine, DDP, getattr(default_hooks, hook_name), ember.from_numpy(x), ember.from_numpy(y), 0
    )
    torch_seen, torch_grads = _run(
        reference,
        torch.nn.parallel.DistributedDataParallel,
        getattr(torch_hooks, hook_name),
        torch.from_numpy(x),
        torch.from_numpy(y),
        1,
    )
    assert seen == torch_seen  # index, is_last, size, parameters and gradients, in order
    for ours, theirs in zip(grads, torch_grads):
        assert ours.dtype == ember.float32
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-7)
