"""torch.fx passes as users write them (after the torch.fx documentation's examples).

test_fx_programs.py runs this file as it is and, with the imports switched, under PyTorch, and
compares the graphs, the generated code and the results.
"""

import math

import ember as torch
import ember.fx as fx
import ember.nn as nn
import ember.nn.functional as F
from ember.fx.passes.shape_prop import ShapeProp


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)
        self.scale = nn.Parameter(torch.ones(3))
        self.register_buffer("offset", torch.full((3,), 0.5))

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.add(h, x.sum(dim=-1, keepdim=True))
        y = self.fc2(h) * self.scale + self.offset
        return torch.sigmoid(y).clamp(min=0.1), y.shape[0]


def pairwise(x, y):
    a = torch.add(x, y)
    b = a.neg() @ y.t()
    c = -b + 1 - 2 * b / 3
    return torch.cat([a.view(-1), b.flatten(), c[0, 1:]], dim=0), x[..., None], abs(x)


def energy(x, y):
    # A leaf function: fx keeps the call instead of tracing into it.
    return (x * x + y * y).sum(dim=-1, keepdim=True)


fx.wrap("energy")


class WithLeafFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return energy(x, self.fc(x)) / math.sqrt(x.shape[-1])


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.tanh(self.fc(x)) + x


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.block1 = Block()
        self.block2 = Block()
        self.head = nn.Sequential(nn.Linear(4, 2), nn.ReLU())

    def forward(self, x):
        return self.head(self.block2(self.block1(x)))


class BlocksAreLeaves(fx.Tracer):
    def is_leaf_module(self, m, module_qualified_name):
        return isinstance(m, Block) or super().is_leaf_module(m, module_qualified_name)


def trace_with_leaf_blocks(model):
    graph = BlocksAreLeaves().trace(model)
    return fx.GraphModule(model, graph)


def transform_add_to_mul(model):
    """The torch.fx documentation's first transform: every torch.add becomes torch.mul."""
    graph = fx.Tracer().trace(model)
    for node in graph.nodes:
        if node.op == "call_function" and node.target == torch.add:
            node.target = torch.mul
    graph.lint()
    return fx.GraphModule(model, graph)


class ReluToGelu(fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target == torch.relu:
            return F.gelu(*args, **kwargs)
        return super().call_function(target, args, kwargs)


class SwapSigmoidNeg(fx.Interpreter):
    """The documentation's NegSigmSwapInterpreter: sigmoid runs as neg and neg as sigmoid."""

    def call_function(self, target, args, kwargs):
        if target == torch.sigmoid:
            return torch.neg(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "neg":
            call_self, *args_tail = args
            return call_self.sigmoid(*args_tail, **kwargs)
        return super().call_method(target, args, kwargs)


def relu_after_every_linear(model):
    """Insert a relu after each Linear call, rewiring its users to the relu."""
    gm = fx.symbolic_trace(model)
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and isinstance(gm.get_submodule(node.target), nn.Linear):
            with gm.graph.inserting_after(node):
                relu = gm.graph.call_function(torch.relu, (node,))
            node.replace_all_uses_with(
                relu, delete_user_cb=lambda user, relu=relu: user is not relu
            )
    gm.graph.lint()
    gm.recompile()
    return gm


def add_dead_code_and_eliminate(model):
    gm = fx.symbolic_trace(model)
    output = gm.graph.output_node()
    with gm.graph.inserting_before(output):
        x = next(iter(gm.graph.nodes))
        unused = gm.graph.call_method("exp", (x,))
        gm.graph.call_function(torch.cos, (unused,))
    before = len(gm.graph.nodes)
    changed = gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm, before, len(gm.graph.nodes), changed


def add_then_relu(x, y):
    return torch.relu(torch.add(x, y)) * 2 + torch.relu(torch.add(y, 1.0))


def pattern(x, y):
    return torch.relu(torch.add(x, y))


def replacement(x, y):
    return torch.clamp(x + y, min=0.0) * 10


def rewrite_add_relu(gm):
    return fx.replace_pattern(gm, pattern, replacement)


def shapes_and_dtypes(gm, *inputs):
    ShapeProp(gm).propagate(*inputs)
    return [
        (
            node.name,
            tuple(node.meta["tensor_meta"].shape),
            str(node.meta["tensor_meta"].dtype).split(".")[-1],
        )
        for node in gm.graph.nodes
        if "tensor_meta" in node.meta and hasattr(node.meta["tensor_meta"], "shape")
    ]


def branch_on_data(x):
    if x.sum() > 0:
        return x
    return -x


def control_flow_error():
    try:
        fx.symbolic_trace(branch_on_data)
    except fx.proxy.TraceError as e:
        return type(e).__name__, str(e)
    return None


def relu_if(x, use_relu):
    if use_relu:
        return torch.relu(x)
    return x * 2


def specialized(use_relu):
    return fx.symbolic_trace(relu_if, concrete_args={"use_relu": use_relu})
