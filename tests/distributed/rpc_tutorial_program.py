"""torch's parameter-server tutorial (rpc_param_server_tutorial) as its users write it, with
``import ember as torch``: functions and classes of ``__main__`` called through RPC. Run by
``test_rpc_tutorial_program.py``."""

import os
from threading import Lock

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember import optim
from ember.distributed.optim import DistributedOptimizer

rpc = torch.distributed.rpc
dist_autograd = torch.distributed.autograd


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(10, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


class ParameterServer(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = Net()
        self.input_device = torch.device("cpu")

    def forward(self, inp):
        return self.model(inp.to(self.input_device)).to("cpu")

    def get_dist_gradients(self, cid):
        grads = dist_autograd.get_gradients(cid)
        return {k.to("cpu"): v.to("cpu") for k, v in grads.items()}

    def get_param_rrefs(self):
        return [rpc.RRef(param) for param in self.model.parameters()]


param_server = None
global_lock = Lock()


def get_parameter_server():
    global param_server
    with global_lock:
        if not param_server:
            param_server = ParameterServer()
        return param_server


def call_method(method, rref, *args, **kwargs):
    return method(rref.local_value(), *args, **kwargs)


def remote_method(method, rref, *args, **kwargs):
    args = [method, rref] + list(args)
    return rpc.rpc_sync(rref.owner(), call_method, args=args, kwargs=kwargs)


class TrainerNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.param_server_rref = rpc.remote("parameter_server", get_parameter_server)

    def get_global_param_rrefs(self):
        return remote_method(ParameterServer.get_param_rrefs, self.param_server_rref)

    def forward(self, x):
        return remote_method(ParameterServer.forward, self.param_server_rref, x)


def run_training_loop():
    net = TrainerNet()
    opt = DistributedOptimizer(optim.SGD, net.get_global_param_rrefs(), lr=0.1)
    torch.manual_seed(1)
    data, target = torch.randn(32, 10), torch.randint(0, 3, (32,))
    losses = []
    for _ in range(10):
        with dist_autograd.context() as cid:
            model_output = net(data)
            loss = F.nll_loss(model_output, target.to(model_output.device))
            dist_autograd.backward(cid, [loss])
            assert (
                remote_method(ParameterServer.get_dist_gradients, net.param_server_rref, cid) != {}
            )
            opt.step(cid)
            losses.append(round(loss.item(), 4))
    print("losses", losses, flush=True)


def run_worker(rank, world_size):
    if rank == 0:
        rpc.init_rpc(name="parameter_server", rank=rank, world_size=world_size)
    else:
        rpc.init_rpc(name=f"trainer_{rank}", rank=rank, world_size=world_size)
        run_training_loop()
    rpc.shutdown()


if __name__ == "__main__":
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = os.environ.get("PORT", "29620")
    torch.multiprocessing.spawn(run_worker, args=(2,), nprocs=2, timeout=60, join=True)
