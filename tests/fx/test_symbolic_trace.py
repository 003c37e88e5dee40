"""ember.fx.symbolic_trace, Tracer and wrap (src/ember/fx/_symbolic_trace.py)."""

import math
import warnings

import pytest

import ember
import ember.fx as fx
import ember.nn as nn


def row_norms(x):
    return (x * x).sum(dim=-1).sqrt()


fx.wrap("row_norms")


@fx.wrap
def clipped(x, limit):
    return x.clamp(-limit, limit) if limit > 0 else x


def count(x):
    return len(x)


fx.wrap("len")


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.gain = nn.Parameter(ember.tensor(2.0))

    def forward(self, x):
        return self.fc(x) * self.gain + self.gain


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.out = nn.Linear(3, 1)

    def forward(self, x, bias=0.5):
        return self.out(ember.relu(self.block(x))) + bias


def _call_targets(gm):
    return [n.target for n in gm.graph.nodes if n.op in ("call_module", "get_attr")]


def test_module_trace_records_leaf_layers_and_traces_through_user_modules():
    net = Net()
    gm = fx.symbolic_trace(net)
    assert _call_targets(gm) == ["block.fc", "block.gain", "out"]
    assert [n.name for n in gm.graph.nodes] == [
        "x",
        "bias",
        "block_fc",
        "block_gain",
        "mul",
        "add",
        "relu",
        "out",
        "add_1",
        "output",
    ]
    x = ember.randn(4, 3)
    assert ember.equal(gm(x), net(x)) and ember.equal(gm(x, 1.5), net(x, 1.5))
    assert "def forward(self, x, bias = 0.5):" in gm.code
    assert type(gm).__name__ == "Net"


def test_parameter_used_twice_is_fetched_once():
    gm = fx.symbolic_trace(Block())
    assert [n.target for n in gm.graph.nodes if n.op == "get_attr"] == ["gain"]


def test_function_trace_with_default_and_star_args():
    def f(x, *rest, scale=2.0, **extra):
        return x * scale + rest[0] + extra["shift"]

    gm = fx.symbolic_trace(f)
    # As in torch, keyword-only parameters come before *args in the generated signature.
    assert [n.target for n in gm.graph.nodes if n.op == "placeholder"] == [
        "x",
        "scale",
        "*rest",
        "**extra",
    ]
    assert "def forward(self, x, scale = 2.0, *rest, **extra):\n    _rest = rest\n" in gm.code
    out = gm(ember.tensor([1.0]), 3.0, ember.tensor([10.0]), shift=ember.tensor([100.0]))
    assert ember.equal(out, ember.tensor([113.0]))


def test_concrete_args_fix_a_flag_and_guard_it():
    def f(x, flag):
        if flag:
            return x + 1
        return x - 1

    gm = fx.symbolic_trace(f, concrete_args={"flag": True})
    assert [n.name for n in gm.graph.nodes] == ["x", "flag_1", "eq", "_assert", "add", "output"]
    assert ember.equal(gm(ember.tensor([1.0]), True), ember.tensor([2.0]))
    with pytest.raises(
        AssertionError, match="flag has been specialized to have value True but got another value"
    ):
        gm(ember.tensor([1.0]), False)


def test_concrete_args_none_and_tuple_form():
    def f(x, mask):
        return x if mask is None else x * mask

    gm = fx.symbolic_trace(f, concrete_args=(fx.PH, None))
    assert [n.name for n in gm.graph.nodes] == ["x_1", "mask_1", "_assert_is_none", "output"]
    assert ember.equal(gm(ember.tensor([3.0]), None), ember.tensor([3.0]))
    with pytest.raises(
        RuntimeError, match="Tracing expected 2 arguments but got 1 concrete arguments"
    ):
        fx.symbolic_trace(f, concrete_args=(None,))


def test_wrapped_functions_stay_one_call():
    def f(x):
        return row_norms(x) + clipped(x, 0.5).sum(dim=-1) + count(x)

    gm = fx.symbolic_trace(f)
    calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert row_norms in calls and clipped in calls and len in calls
    assert 'ember.fx.wrap("tests_fx_test_symbolic_trace_row_norms")' in gm.code
    assert "len_1 = len(x)" in gm.code
    x = ember.tensor([[3.0, 4.0], [0.3, 0.4]])
    assert ember.allclose(gm(x), f(x))


def test_wrap_outside_module_scope_raises():
    with pytest.raises(
        NotImplementedError, match="wrap must be called at the top level of a module"
    ):
        fx.wrap("row_norms")


def test_math_functions_on_proxies_are_recorded_and_on_numbers_computed():
    def f(x):
        return x / math.sqrt(x.shape[-1]) * math.sqrt(4)

    gm = fx.symbolic_trace(f)
    sqrt_nodes = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is math.sqrt]
    assert len(sqrt_nodes) == 1 and "mul = truediv * 2.0" in gm.code
    x = ember.ones(2, 4)
    assert ember.equal(gm(x), f(x))


class LeafBlocks(fx.Tracer):
    def is_leaf_module(self, m, module_qualified_name):
        return isinstance(m, Block) or super().is_leaf_module(m, module_qualified_name)


def test_tracer_subclass_chooses_leaf_modules():
    net = Net()
    graph = LeafBlocks().trace(net)
    assert [n.target for n in graph.nodes if n.op == "call_module"] == ["block", "out"]
    gm = fx.GraphModule(net, graph)
    x = ember.randn(2, 3)
    assert ember.equal(gm(x), net(x))


def test_tracer_subclass_overrides_create_proxy_and_call_module():
    class Recording(fx.Tracer):
        def __init__(self):
            super().__init__()
            self.kinds = []
            self.modules = []

        def create_proxy(
            self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None
        ):
            self.kinds.append(kind)
            proxy = super().create_proxy(
                kind, target, args, kwargs, name, type_expr, proxy_factory_fn
            )
            proxy.node.meta["tag"] = "recorded"
            return proxy

        def call_module(self, m, forward, args, kwargs):
            self.modules.append(type(m).__name__)
            return super().call_module(m, forward, args, kwargs)

    tracer = Recording()
    graph = tracer.trace(Net())
    assert isinstance(graph, fx.Graph) and isinstance(tracer.root, Net)
    assert tracer.modules == ["Block", "Linear", "Linear"]
    assert tracer.kinds[:3] == ["placeholder", "placeholder", "call_module"]
    assert all(n.meta.get("tag") == "recorded" for n in graph.nodes if n.op != "output")
    block_fc = next(n for n in graph.nodes if n.name == "block_fc")
    assert list(block_fc.meta["nn_module_stack"]) == ["block", "block.fc"]


def test_param_shapes_constant_lets_code_branch_on_parameter_shapes():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(3))

        def forward(self, x):
            return x * self.w if self.w.shape[0] == 3 else x

    with pytest.raises(fx.proxy.TraceError):
        fx.symbolic_trace(Scaled())
    graph = fx.Tracer(param_shapes_constant=True).trace(Scaled())
    assert [n.op for n in graph.nodes] == ["placeholder", "get_attr", "call_function", "output"]


def test_module_called_twice_and_shared_submodules_keep_their_path():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(self.fc(x))

    gm = fx.symbolic_trace(Twice())
    assert [(n.name, n.target) for n in gm.graph.nodes if n.op == "call_module"] == [
        ("fc", "fc"),
        ("fc_1", "fc"),
    ]


def test_tensor_constants_from_attributes_and_closures():
    class WithConstant(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = ember.tensor([1.0, 2.0])  # a plain attribute, not a buffer

        def forward(self, x):
            return self.table * x + ember.tensor([10.0, 20.0])

    m = WithConstant()
    gm = fx.symbolic_trace(m)
    assert [n.target for n in gm.graph.nodes if n.op == "get_attr"] == [
        "table",
        "_tensor_constant0",
    ]
    assert sorted(gm.state_dict()) == ["_tensor_constant0", "table"]
    x = ember.tensor([1.0, 1.0])
    assert ember.equal(gm(x), m(x))


def test_record_stack_traces_points_at_the_users_line():
    class Traced(fx.Tracer):
        record_stack_traces = True

    graph = Traced().trace(Net())
    relu = next(n for n in graph.nodes if n.name == "relu")
    assert (
        "test_symbolic_trace.py" in relu.stack_trace
        and "ember.relu(self.block(x))" in relu.stack_trace
    )


def test_untraceable_root_warns_nothing_and_names_function_graphs():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gm = fx.symbolic_trace(lambda x: x + 1)
    assert type(gm).__name__ == "<lambda>"
