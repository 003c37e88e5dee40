"""Hogwild training as torch's examples/mnist_hogwild runs it: one model in shared memory,
several processes each running an optimizer over its parameters, the parent seeing the result.

Synthetic data (a linearly separable 3-class problem) stands in for MNIST; two processes, a few
steps each. Run one after the other, the processes' updates are deterministic and ember's
weights match torch's; run at once (the real Hogwild), the loss goes down and the parent's
parameters change, under fork and spawn, for ember.multiprocessing.Process and spawn()."""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp

from ._timeout import hard_timeout  # noqa: F401

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shared memory")
TIME_LIMIT = 120
EPOCHS, BATCH = 5, 8
STEPS = EPOCHS * 32 // BATCH  # per worker: 32 samples each


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = (x @ rng.standard_normal((8, 3)).astype(np.float32)).argmax(1)
    return x, y


def _net_class(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(8, 16)
            self.fc2 = lib.nn.Linear(16, 3)

        def forward(self, x):
            return lib.nn.functional.log_softmax(self.fc2(lib.relu(self.fc1(x))), dim=1)

    return Net


Net = _net_class(ember)  # at the top level, so that spawned workers can unpickle the model
Net.__qualname__ = "Net"


def _net(lib):
    return Net() if lib is ember else _net_class(lib)()


def train(rank, library, model, data, target, losses):
    """One Hogwild worker, as mnist_hogwild's ``train``: its own seed, data loader and
    optimizer over the shared model's parameters."""
    lib = importlib.import_module(library)
    if library == "torch":
        lib.set_num_threads(1)
    lib.manual_seed(1 + rank)
    dataset = lib.utils.data.TensorDataset(data[rank::2], target[rank::2])  # a half each
    loader = lib.utils.data.DataLoader(dataset, batch_size=BATCH)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    model.train()
    for _ in range(EPOCHS):
        for x, y in loader:
            optimizer.zero_grad()
            loss = lib.nn.functional.nll_loss(model(x), y)
            loss.backward()
            optimizer.step()
            losses.put((rank, loss.item()))


def _spawned_train(rank, library, model, data, target, losses):
    train(rank, library, model, data, target, losses)


def _setup(lib, init=None):
    x, y = _data()
    # one step here first: forked workers inherit the kernels it compiled (numba, if installed)
    warm = _net(lib)
    lib.nn.functional.nll_loss(warm(lib.tensor(x)), lib.tensor(y)).backward()
    lib.optim.SGD(warm.parameters(), lr=0.1, momentum=0.5).step()
    model = _net(lib)
    if init is not None:
        model.load_state_dict({k: lib.tensor(v) for k, v in init.items()})
    model.share_memory()
    return model, lib.tensor(x), lib.tensor(y)


def _loss(lib, model, data, target) -> float:
    with lib.no_grad():
        return lib.nn.functional.nll_loss(model(data), target).item()


def _run(context, library, model, data, target, one_after_another: bool):
    losses = context.Queue()
    workers = []
    for rank in range(2):
        p = context.Process(target=train, args=(rank, library, model, data, target, losses))
        p.start()
        workers.append(p)
        if one_after_another:
            p.join(60)
    for p in workers:
        p.join(60)
        if p.is_alive():
            p.kill()
    assert [p.exitcode for p in workers] == [0, 0]
    per_rank = {0: [], 1: []}
    for _ in range(2 * STEPS):
        rank, loss = losses.get(timeout=10)
        per_rank[rank].append(loss)
    return per_rank


def _state(model) -> dict:
    return {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}


def test_workers_run_in_turn_train_the_shared_model_as_torch(torch_mod):
    torch_model, torch_x, torch_y = _setup(torch_mod)
    init = _state(torch_model)
    model, x, y = _setup(ember, init)
    context = mp.get_context("fork")
    ember_losses = _run(context, "ember", model, x, y, one_after_another=True)
    torch_losses = _run(
        torch_mod.multiprocessing.get_context("fork"),
        "torch",
        torch_model,
        torch_x,
        torch_y,
        one_after_another=True,
    )
    for rank in (0, 1):
        np.testing.assert_allclose(ember_losses[rank], torch_losses[rank], rtol=1e-4, atol=1e-5)
    trained, expected = _state(model), _state(torch_model)
    for name in expected:
        assert not np.allclose(trained[name], init[name]), name
        np.testing.assert_allclose(trained[name], expected[name], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hogwild_workers_at_once_lower_the_loss_of_the_parents_model(method):
    model, x, y = _setup(ember)
    before = _state(model)
    loss_before = _loss(ember, model, x, y)
    per_rank = _run(mp.get_context(method), "ember", model, x, y, one_after_another=False)
    epoch = STEPS // EPOCHS
    for losses in per_rank.values():
        assert np.mean(losses[-epoch:]) < np.mean(losses[:epoch])
    after = _state(model)
    assert all(not np.allclose(after[k], before[k]) for k in before)
    assert _loss(ember, model, x, y) < 0.8 * loss_before
    assert all(p.is_shared() for p in model.parameters())


def test_hogwild_through_spawn_trains_the_parents_model():
    model, x, y = _setup(ember)
    loss_before = _loss(ember, model, x, y)
    weight = model.fc1.weight.detach().clone()
    losses = mp.get_context("spawn").SimpleQueue()  # spawn's workers are not its children
    mp.spawn(_spawned_train, args=("ember", model, x, y, losses), nprocs=2, timeout=90)
    assert not ember.allclose(model.fc1.weight, weight)
    assert _loss(ember, model, x, y) < 0.8 * loss_before
    reported = [losses.get() for _ in range(2 * STEPS)]
    assert {rank for rank, _ in reported} == {0, 1}


def test_no_shared_memory_is_left_behind():
    """file_system segments are named: each is unlinked once no process uses it any more."""
    import glob

    from ember import _shared_memory

    def ours():
        return glob.glob(os.path.join(_shared_memory.SHM_DIR, f"ember_{os.getpid()}_*"))

    previous = mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    try:
        model, x, y = _setup(ember)
        assert len(ours()) == len(list(model.parameters()))
        x.share_memory_(), y.share_memory_()
        _run(mp.get_context("fork"), "ember", model, x, y, one_after_another=False)
        assert len(ours()) == len(list(model.parameters())) + 2  # the workers are gone, we stay
        losses = mp.get_context("spawn").SimpleQueue()
        mp.spawn(_spawned_train, args=("ember", model, x, y, losses), nprocs=2, timeout=90)
        assert len(ours()) == len(list(model.parameters())) + 2
        del model, x, y
        assert ours() == []
    finally:
        mp.set_sharing_strategy(previous)
