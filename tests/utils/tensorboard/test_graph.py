"""add_graph: one forward recorded op by op, read back from the event file as TensorBoard reads
it (EventAccumulator.Graph()), with nodes named by module scope as PyTorch names them."""

import pytest

pytest.importorskip("tensorboard")

import ember  # noqa: E402
from ember import nn  # noqa: E402
from ember.utils.tensorboard import SummaryWriter  # noqa: E402
from ember.utils.tensorboard._graph import graph  # noqa: E402

from .events import accumulate  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))).softmax(-1)


def _nodes(graph_def) -> dict:
    return {n.name: n for n in graph_def.node}


def _shape(node, i=0) -> list:
    return [d.size for d in node.attr["_output_shapes"].list.shape[i].dim]


def test_add_graph_of_an_mlp_reads_back_with_module_scopes(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_graph(Net(), ember.randn(2, 4))
    acc = accumulate(tmp_path)
    nodes = _nodes(acc.Graph())
    assert {name: (n.op, list(n.input)) for name, n in nodes.items()} == {
        "input/x": ("IO Node", []),
        "Net/Linear[fc1]/weight": ("prim::GetAttr", []),
        "Net/Linear[fc1]/bias": ("prim::GetAttr", []),
        "Net/Linear[fc1]/linear": (
            "aten::linear",
            ["input/x", "Net/Linear[fc1]/weight", "Net/Linear[fc1]/bias"],
        ),
        "Net/ReLU[act]/relu": ("aten::relu", ["Net/Linear[fc1]/linear"]),
        "Net/Linear[fc2]/weight": ("prim::GetAttr", []),
        "Net/Linear[fc2]/bias": ("prim::GetAttr", []),
        "Net/Linear[fc2]/linear": (
            "aten::linear",
            ["Net/ReLU[act]/relu", "Net/Linear[fc2]/weight", "Net/Linear[fc2]/bias"],
        ),
        "Net/softmax": ("aten::softmax", ["Net/Linear[fc2]/linear"]),
        "output/output.1": ("IO Node", ["Net/softmax"]),
    }
    assert _shape(nodes["input/x"]) == [2, 4]
    assert _shape(nodes["Net/Linear[fc1]/weight"]) == [8, 4]
    assert _shape(nodes["Net/Linear[fc1]/linear"]) == [2, 8]
    assert _shape(nodes["output/output.1"]) == [2, 3]
    assert nodes["Net/softmax"].attr["attr"].s == b"{ dim : -1}"
    assert nodes["Net/Linear[fc1]/weight"].attr["attr"].s == b"{ name :  weight }"
    assert acc.Graph().versions.producer == 22
    # the run metadata PyTorch's writer logs beside the graph
    assert acc.Tags()["run_metadata"] == ["step1"]
    assert acc.RunMetadata("step1").step_stats.dev_stats[0].device == "/device:CPU:0"


@pytest.mark.filterwarnings("ignore:`torch.jit.trace:DeprecationWarning")
def test_add_graph_ops_and_scopes_match_torch(tmp_path, torch_mod):
    from torch.utils.tensorboard import SummaryWriter as TorchSummaryWriter

    class TorchNet(torch_mod.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch_mod.nn.Linear(4, 8)
            self.act = torch_mod.nn.ReLU()
            self.fc2 = torch_mod.nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x))).softmax(-1)

    TorchNet.__name__ = "Net"
    with SummaryWriter(tmp_path / "ember") as w:
        w.add_graph(Net(), ember.randn(2, 4))
    with TorchSummaryWriter(tmp_path / "torch") as w:
        w.add_graph(TorchNet(), torch_mod.randn(2, 4))

    def ops(path):
        """(scope, op, output shape) of each aten op, and the graph's inputs and outputs."""
        nodes = accumulate(path).Graph().node
        found = sorted(
            (n.name.rsplit("/", 1)[0], n.op, tuple(_shape(n)))
            for n in nodes
            if n.op.startswith("aten::")
        )
        io = sorted((n.name, tuple(_shape(n))) for n in nodes if n.op == "IO Node")
        return found, io

    assert ops(tmp_path / "ember") == ops(tmp_path / "torch")


def test_nested_modules_and_repeated_calls_get_scoped_unique_names():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(nn.Linear(3, 3), nn.Tanh())

        def forward(self, x):
            return self.layers(self.layers(x))  # the same module twice

    graph_def, _ = graph(Block(), (ember.randn(2, 3),))
    nodes = _nodes(graph_def)
    linear = "Block/Sequential[layers]/Linear[0]/linear"
    tanh = "Block/Sequential[layers]/Tanh[1]/tanh"
    assert {linear, linear + ".1", tanh, tanh + ".1"} <= nodes.keys()
    assert list(nodes[linear + ".1"].input)[0] == tanh
    # a parameter used twice is one node
    assert list(nodes[linear].input)[1:] == list(nodes[linear + ".1"].input)[1:]
    assert list(nodes["output/output.1"].input) == [tanh + ".1"]


def test_several_inputs_outputs_constants_and_multi_output_ops():
    class TwoWay(nn.Module):
        def forward(self, a, b, scale=2.0):
            low, high = (a * scale + b).chunk(2, dim=1)
            return high, low + ember.ones(1)

    graph_def, _ = graph(TwoWay(), [ember.randn(2, 4), ember.randn(2, 4)])
    nodes = _nodes(graph_def)
    assert nodes["TwoWay/mul"].input == ["input/a"]
    assert nodes["TwoWay/mul"].attr["attr"].s == b"{ other : 2.0}"
    assert list(nodes["TwoWay/add"].input) == ["TwoWay/mul", "input/b"]
    chunk = nodes["TwoWay/chunk"]
    assert [_shape(chunk, i) for i in range(2)] == [[2, 2], [2, 2]]
    # the second output of an op is "<node>:1"
    assert list(nodes["output/output.1"].input) == ["TwoWay/chunk:1"]
    assert list(nodes["TwoWay/add.1"].input) == ["TwoWay/chunk", "TwoWay/ones"]
    assert nodes["TwoWay/ones"].op == "aten::ones"
    assert list(nodes["output/output.2"].input) == ["TwoWay/add.1"]


def test_in_place_op_output_is_used_by_later_ops():
    class InPlace(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.act = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.act(self.fc(x)) * 3

    nodes = _nodes(graph(InPlace(), ember.randn(1, 2))[0])
    assert nodes["InPlace/ReLU[act]/relu"].input == ["InPlace/Linear[fc]/linear"]
    assert nodes["InPlace/mul"].input == ["InPlace/ReLU[act]/relu"]


def test_tensors_read_but_not_owned_are_constants_and_buffers_are_attributes():
    offset = ember.tensor([1.0, 2.0])

    class WithState(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(2)

        def forward(self, x):
            return self.bn(x) + offset

    nodes = _nodes(graph(WithState(), ember.randn(3, 2))[0])
    assert nodes["WithState/constant"].op == "prim::Constant"
    assert _shape(nodes["WithState/constant"]) == [2]
    assert nodes["WithState/BatchNorm1d[bn]/running_mean"].op == "prim::GetAttr"
    assert (
        "WithState/BatchNorm1d[bn]/running_mean"
        in nodes["WithState/BatchNorm1d[bn]/batch_norm"].input
    )


def test_add_graph_runs_in_eval_mode_without_grad_and_leaves_the_model_as_it_was():
    seen = []

    class Spy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            seen.append((self.training, ember.is_grad_enabled()))
            return self.drop(self.fc(x))

    model = Spy().train()
    graph(model, ember.randn(2, 2))
    assert seen == [(False, False)]
    assert model.training and model.drop.training
    assert not model.fc._forward_hooks and not model.fc._forward_pre_hooks
    y = model.fc(ember.randn(1, 2))  # ops run unrecorded again
    assert y.requires_grad


def test_add_graph_of_a_function_and_of_a_traced_module():
    def double(x):
        return x * 2

    nodes = _nodes(graph(double, ember.randn(3))[0])
    assert nodes["double/mul"].input == ["input/x"]
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    traced = ember.jit.trace(Net().eval(), ember.randn(2, 4))
    nodes = _nodes(graph(traced, ember.randn(2, 4))[0])
    assert "Net/Linear[fc1]/linear" in nodes


def test_add_onnx_graph_reads_back_the_onnx_nodes(tmp_path):
    pytest.importorskip("onnx")
    path = tmp_path / "net.onnx"
    ember.onnx.export(Net().eval(), ember.randn(2, 4), str(path))
    with SummaryWriter(tmp_path / "run") as w:
        w.add_onnx_graph(str(path))
    nodes = accumulate(tmp_path / "run").Graph().node
    ops = [n.op for n in nodes]
    assert ops[:2] == ["Variable", "Variable"]  # the input and the output
    assert "Gemm" in ops or "MatMul" in ops
    assert nodes[0].name == "input" and [d.size for d in nodes[0].attr["shape"].shape.dim] == [2, 4]


def test_graph_names_arguments_behind_an_autocast_trampoline_left_on_an_op():
    # an autocast region closed inside a profile leaves its trampoline on the ops it patched
    # until their next call; the graph still reads each op's own signature
    from ember.amp import _patch
    from ember.profiler import _ops, profile

    _ops._signatures.clear()
    prof = profile()
    region = ember.amp.autocast("cpu")
    region.__enter__()
    prof.__enter__()
    region.__exit__(None, None, None)
    prof.__exit__(None, None, None)
    if not _patch._is_ours(ember.Tensor.softmax.__code__):
        pytest.skip("autocast restored softmax eagerly: no trampoline was left to see through")
    graph_def, _ = graph(Net(), (ember.randn(2, 4),))
    assert _nodes(graph_def)["Net/softmax"].attr["attr"].s == b"{ dim : -1}"
