"""``ember.distributed.autograd`` and ``DistributedOptimizer`` on two workers: gradients through
RPC calls (both ways, nested, through RRefs), errors, and the parameter-server pattern of
torch's RPC tutorial checked against the same training in one process (and against torch)."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import ember
import ember.distributed.autograd as dist_autograd
import ember.distributed.rpc as rpc
from ember import nn
from ember.distributed.optim import DistributedOptimizer

from ._harness import assert_case, collect_cases
from ._rpc_harness import spawn_rpc_world

INIT_METHOD = "tcp://{MASTER_ADDR}:{MASTER_PORT}"  # this world meets as workers on 2 machines do
LONG = os.environ.get("EMBER_LONG_TESTS") == "1"
STEPS = 200 if LONG else 5
LR = 0.1


# --- the parameter server's model (fixed weights, so torch can build the same one) ------------
def initial_weights() -> dict:
    rng = np.random.default_rng(0)
    return {
        "fc1.weight": rng.standard_normal((8, 4)) * 0.5,
        "fc1.bias": rng.standard_normal(8) * 0.1,
        "fc2.weight": rng.standard_normal((2, 8)) * 0.5,
        "fc2.bias": rng.standard_normal(2) * 0.1,
    }


def training_data():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.standard_normal((16, 2)).astype(np.float32)
    w = (rng.standard_normal((2, 2)) * 0.5).astype(np.float32)  # the trainer's own parameter
    return x, y, w


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)
        with ember.no_grad():
            for name, value in initial_weights().items():
                self.get_parameter(name).copy_(ember.from_numpy(value.astype(np.float32)))

    def forward(self, x):
        return self.fc2(ember.tanh(self.fc1(x)))

    def parameter_rrefs(self):
        return [rpc.RRef(p) for p in self.parameters()]

    def gradients_in(self, context_id):
        grads = dist_autograd.get_gradients(context_id)
        return [grads[p] for p in self.parameters()]

    def parameter_values(self):
        return [p.detach().clone() for p in self.parameters()]


# --- functions the workers call -----------------------------------------------------------------
def times_three_then_square_on(to, x):
    """On worker1: 3x, squared on worker ``to`` (a call back), so the pass crosses twice."""
    y = x * 3
    return rpc.rpc_sync(to, ember.mul, args=(y, y)) + 0


def context_known_here(context_id):
    try:
        dist_autograd.get_gradients(context_id)
    except RuntimeError:
        return False
    return True


def gradients_here(context_id):
    return list(dist_autograd.get_gradients(context_id).values())


def with_failing_hook(x):
    y = x * 2

    def fail(grad):
        raise ValueError("hook failed on worker1")

    y.register_hook(fail)
    return y


def new_context_id():
    with dist_autograd.context() as context_id:
        return context_id


# --- the cases --------------------------------------------------------------------------------
def case_gradients_flow_back_through_rpc_sync(rank):
    if rank == 0:
        with dist_autograd.context() as context_id:
            t1 = ember.tensor([1.0, 2.0], requires_grad=True)
            t2 = ember.tensor([3.0, 4.0], requires_grad=True)
            loss = rpc.rpc_sync("worker1", ember.mul, args=(t1, t2)).sum()
            dist_autograd.backward(context_id, [loss])
            grads = dist_autograd.get_gradients(context_id)
            assert grads[t1].tolist() == [3.0, 4.0]
            assert grads[t2].tolist() == [1.0, 2.0]
            assert t1.grad is None  # distributed gradients stay in the context


def case_gradients_cross_workers_twice_and_through_async_calls(rank):
    if rank == 0:
        with dist_autograd.context() as context_id:
            x = ember.tensor([1.0, -2.0], requires_grad=True)
            out = rpc.rpc_sync("worker1", times_three_then_square_on, args=("worker0", x))
            later = rpc.rpc_async("worker1", ember.add, args=(x, x)).wait()
            dist_autograd.backward(context_id, [out.sum() + later.sum()])
            # d/dx (3x)^2 = 18x, d/dx 2x = 2
            assert dist_autograd.get_gradients(context_id)[x].tolist() == [20.0, -34.0]


def case_gradients_flow_through_remote_and_to_here(rank):
    if rank == 0:
        with dist_autograd.context() as context_id:
            x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
            rref = rpc.remote("worker1", ember.mul, args=(x, 3.0))
            dist_autograd.backward(context_id, [(rref.to_here() * x).sum()])
            # d/dx 3x·x = 6x
            assert dist_autograd.get_gradients(context_id)[x].tolist() == [6.0, 12.0, 18.0]


def case_gradients_of_remote_parameters_stay_on_their_worker(rank):
    if rank == 0:
        model = rpc.remote("worker1", Net)
        x, y, _ = (ember.from_numpy(a) for a in training_data())
        with dist_autograd.context() as context_id:
            out = model.rpc_sync().forward(x)
            loss = ((out - y) ** 2).mean()
            dist_autograd.backward(context_id, [loss])
            assert dist_autograd.get_gradients(context_id) == {}  # none of them is here
            remote_grads = model.rpc_sync().gradients_in(context_id)
        local = Net()
        ((local(x) - y) ** 2).mean().backward()
        for got, want in zip(remote_grads, local.parameters()):
            np.testing.assert_allclose(got.numpy(), want.grad.numpy(), rtol=1e-6, atol=1e-7)


def sum_times_three(x):
    return (x * 3).sum()


def double_in_place(x):
    return x.mul_(2)


def how_it_arrived(x):
    return x.is_leaf, type(x.grad_fn).__name__, x.requires_grad


def case_tensors_arrive_behind_recv_nodes_and_may_change_in_place(rank):
    if rank == 0:
        with dist_autograd.context() as context_id:
            t = ember.tensor([1.0, 2.0], requires_grad=True)
            assert rpc.rpc_sync("worker1", how_it_arrived, args=(t,)) == (
                False,
                "RecvRpcBackward",
                True,
            )
            out = rpc.rpc_sync("worker1", double_in_place, args=(t * 1,))
            assert (out.is_leaf, type(out.grad_fn).__name__) == (False, "RecvRpcBackward")
            dist_autograd.backward(context_id, [(out * out).sum()])
            # out = 2t: d/dt (2t)^2 = 8t
            assert dist_autograd.get_gradients(context_id)[t].tolist() == [8.0, 16.0]
        assert rpc.rpc_sync("worker1", how_it_arrived, args=(t,)) == (True, "NoneType", True)


def case_rref_backward_runs_the_pass_from_the_owner(rank):
    if rank == 0:
        with dist_autograd.context() as context_id:
            x = ember.tensor([1.0, 2.0], requires_grad=True)
            rpc.remote("worker1", sum_times_three, args=(x,)).backward(context_id)
            assert dist_autograd.get_gradients(context_id)[x].tolist() == [3.0, 3.0]
            assert x.grad is None
        p = ember.ones(2, requires_grad=True)
        rpc.RRef((p * 2).sum()).backward()  # no context: a local pass into .grad
        assert p.grad.tolist() == [2.0, 2.0]


def case_backward_twice_in_a_context_adds_up(rank):
    if rank == 0:
        with dist_autograd.context() as context_id:
            t = ember.tensor([1.0, 2.0], requires_grad=True)
            loss = rpc.rpc_sync("worker1", ember.mul, args=(t, 5.0)).sum()
            dist_autograd.backward(context_id, [loss], retain_graph=True)
            dist_autograd.backward(context_id, [loss])
            assert dist_autograd.get_gradients(context_id)[t].tolist() == [10.0, 10.0]


def case_backward_without_retain_graph_frees_the_graph_on_every_worker(rank):
    if rank == 0:
        with dist_autograd.context() as context_id:
            t = ember.tensor([1.0, 2.0], requires_grad=True)
            loss = rpc.rpc_sync("worker1", ember.mul, args=(t, t)).sum()
            dist_autograd.backward(context_id, [loss])
            assert dist_autograd.get_gradients(context_id)[t].tolist() == [2.0, 4.0]
            # the mul's saved inputs on worker1 are gone, as torch frees them
            with pytest.raises(RuntimeError, match="backward through the graph a second time"):
                dist_autograd.backward(context_id, [loss])
            local = (t * t).sum()  # and here
            dist_autograd.backward(context_id, [local])
            with pytest.raises(RuntimeError, match="backward through the graph a second time"):
                dist_autograd.backward(context_id, [local])


def case_context_ids_carry_the_worker_and_contexts_go_on_exit(rank):
    if rank == 0:
        first, second = new_context_id(), new_context_id()
        assert second == first + 1 and first >> 48 == 0
        assert rpc.rpc_sync("worker1", new_context_id) >> 48 == 1
        with dist_autograd.context() as context_id:
            t = ember.ones(2, requires_grad=True)
            rpc.rpc_sync("worker1", ember.add, args=(t, 1))
            assert rpc.rpc_sync("worker1", context_known_here, args=(context_id,))
        with pytest.raises(
            RuntimeError, match=f"Could not find autograd context with id: {context_id}"
        ):
            dist_autograd.get_gradients(context_id)
        deadline = time.monotonic() + 5  # the release reaches worker1 asynchronously
        while rpc.rpc_sync("worker1", context_known_here, args=(context_id,)):
            assert time.monotonic() < deadline, "worker1 still knows the context"
            time.sleep(0.01)


def case_errors_as_torch_raises_them(rank):
    if rank == 0:
        with pytest.raises(RuntimeError, match="Could not find autograd context with id: 12345"):
            dist_autograd.backward(12345, [ember.ones(1, requires_grad=True).sum()])
        with dist_autograd.context() as context_id:
            with pytest.raises(RuntimeError, match="Already have an autograd context id"):
                with dist_autograd.context():
                    pass
            with pytest.raises(RuntimeError, match="requires_grad not set on root"):
                dist_autograd.backward(context_id, [ember.ones(())])
            with pytest.raises(RuntimeError, match="all roots need to be scalar"):
                dist_autograd.backward(context_id, [ember.ones(2, requires_grad=True) * 2])
            with pytest.raises(RuntimeError, match="No tensors provided for gradient computation"):
                dist_autograd.backward(context_id, [])


def case_error_in_a_remote_backward_piece_reraises_here(rank):
    if rank == 0:
        with dist_autograd.context() as context_id:
            x = ember.ones(2, requires_grad=True)
            y = rpc.rpc_sync("worker1", with_failing_hook, args=(x,))
            with pytest.raises(ValueError, match="hook failed on worker1"):
                dist_autograd.backward(context_id, [y.sum()])


def case_gradients_sent_to_worker0_reach_its_leaves_from_worker1(rank):
    if rank == 1:  # the same pass started on the other worker
        with dist_autograd.context() as context_id:
            t = ember.tensor([2.0], requires_grad=True)
            loss = rpc.rpc_sync("worker0", ember.pow, args=(t, 3)).sum()
            dist_autograd.backward(context_id, [loss])
            assert dist_autograd.get_gradients(context_id)[t].tolist() == [12.0]


def case_parameter_server_trains_as_one_process_would(rank):
    """torch's RPC tutorial: the model on worker1, the trainer on worker0 (with a parameter of
    its own), DistributedOptimizer over both."""
    if rank != 0:
        return
    x, y, w0 = (ember.from_numpy(a) for a in training_data())
    model = rpc.remote("worker1", Net)
    w = nn.Parameter(w0.clone())
    param_rrefs = model.rpc_sync().parameter_rrefs() + [rpc.RRef(w)]
    assert [r.owner_name() for r in param_rrefs] == ["worker1"] * 4 + ["worker0"]
    optimizer = DistributedOptimizer(ember.optim.SGD, param_rrefs, lr=LR)
    losses, first_grads = [], None
    for step in range(STEPS):
        with dist_autograd.context() as context_id:
            loss = ((model.rpc_sync().forward(x) @ w - y) ** 2).mean()
            dist_autograd.backward(context_id, [loss])
            if step == 0:
                first_grads = model.rpc_sync().gradients_in(context_id) + [
                    dist_autograd.get_gradients(context_id)[w]
                ]
            optimizer.step(context_id)
            losses.append(loss.item())
    assert w.grad is not None  # the local optimizer stepped with the context's gradients
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
    remote_params = model.rpc_sync().parameter_values() + [w.detach()]

    local, w_local = Net(), nn.Parameter(w0.clone())
    opt = ember.optim.SGD(list(local.parameters()) + [w_local], lr=LR)
    local_losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = ((local(x) @ w_local - y) ** 2).mean()
        loss.backward()
        opt.step()
        local_losses.append(loss.item())
    np.testing.assert_allclose(losses, local_losses, rtol=1e-6)
    for got, want in zip(remote_params, list(local.parameters()) + [w_local]):
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.savez(
        os.path.join(os.environ["EMBER_TEST_OUT_DIR"], "parameter_server.npz"),
        losses=np.array(losses),
        **{f"grad{i}": g.numpy() for i, g in enumerate(first_grads)},
        **{f"param{i}": p.numpy() for i, p in enumerate(remote_params)},
    )


CASES = collect_cases(globals())


def _worker(rank: int, out_dir: str, module_name: str) -> None:
    from ._rpc_harness import _rpc_worker

    os.environ["EMBER_TEST_OUT_DIR"] = out_dir
    _rpc_worker(rank, out_dir, module_name)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return spawn_rpc_world(tmp_path_factory, __name__, worker=_worker)


@pytest.mark.parametrize("name", list(CASES))
def test_dist_autograd(world, name):
    assert_case(world[0], name)


def test_parameter_server_matches_torch_training_the_same_model_locally(world, torch_mod):
    torch = torch_mod
    found = np.load(os.path.join(world[1], "parameter_server.npz"))
    x, y, w0 = (torch.from_numpy(a) for a in training_data())
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    names = {"fc1": "0", "fc2": "2"}
    with torch.no_grad():
        for name, value in initial_weights().items():
            layer, kind = name.split(".")
            model.get_parameter(f"{names[layer]}.{kind}").copy_(torch.from_numpy(value))
    w = torch.nn.Parameter(w0.clone())
    params = list(model.parameters()) + [w]
    optimizer = torch.optim.SGD(params, lr=LR)
    losses = []
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = ((model(x) @ w - y) ** 2).mean()
        loss.backward()
        if step == 0:
            for i, p in enumerate(params):
                np.testing.assert_allclose(found[f"grad{i}"], p.grad.numpy(), rtol=1e-5, atol=1e-6)
        optimizer.step()
        losses.append(loss.item())
    np.testing.assert_allclose(found["losses"], losses, rtol=1e-5)
    for i, p in enumerate(params):
        np.testing.assert_allclose(found[f"param{i}"], p.detach().numpy(), rtol=1e-4, atol=1e-5)
