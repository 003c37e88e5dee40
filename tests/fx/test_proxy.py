"""ember.fx.Proxy (src/ember/fx/proxy.py): what tracing records for operators, attributes,
ember functions and Tensor methods, and what it refuses."""

import operator

import numpy as np
import pytest

import ember
import ember.fx as fx
import ember.nn.functional as F
from ember.fx.proxy import GraphAppendingTracer, TraceError


def _calls(gm):
    return [
        (n.op, n.target if isinstance(n.target, str) else n.target.__name__)
        for n in gm.graph.nodes
        if n.op.startswith("call")
    ]


def test_operators_become_operator_calls_including_reflected_ones():
    gm = fx.symbolic_trace(lambda x, y: (x + y, 2 - x, x @ y, -x, ~(x > 0), x // 2, abs(x), 2**x))
    assert _calls(gm) == [
        ("call_function", "add"),
        ("call_function", "sub"),
        ("call_function", "matmul"),
        ("call_function", "neg"),
        ("call_function", "gt"),
        ("call_function", "invert"),
        ("call_function", "floordiv"),
        ("call_function", "abs"),
        ("call_function", "pow"),
    ]
    sub = next(n for n in gm.graph.nodes if n.name == "sub")
    assert sub.target is operator.sub and sub.args[0] == 2


def test_method_calls_record_call_method_without_getattr():
    gm = fx.symbolic_trace(lambda x: x.view(-1).sum(dim=0, keepdim=True))
    assert _calls(gm) == [("call_method", "view"), ("call_method", "sum")]
    assert "view = x.view(-1)" in gm.code and "sum_1 = view.sum(dim = 0, keepdim = True)" in gm.code


def test_attribute_reads_record_getattr_when_used():
    gm = fx.symbolic_trace(lambda x: x.reshape(x.shape[0], -1) * x.T.sum())
    nodes = {n.name: n for n in gm.graph.nodes}
    assert nodes["getattr_1"].target is getattr and nodes["getattr_1"].args[1] == "shape"
    assert nodes["getattr_2"].args[1] == "T"
    assert "getattr_1 = x.shape" in gm.code
    x = ember.arange(6.0).reshape(2, 3)
    assert ember.equal(gm(x), x.reshape(2, -1) * x.T.sum())


def test_ember_and_functional_calls_record_the_original_functions():
    gm = fx.symbolic_trace(lambda x: F.softmax(ember.tanh(ember.cat([x, x], dim=1)), dim=-1))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == [ember.cat, ember.tanh, F.softmax]
    assert "cat = ember.cat([x, x], dim = 1)" in gm.code
    assert "softmax = ember.nn.functional.softmax(tanh, dim = -1)" in gm.code


def test_real_tensor_meeting_a_proxy_records_a_method_on_a_constant():
    const = ember.tensor([1.0, 2.0])
    gm = fx.symbolic_trace(lambda x: (const + x, const.expand_as(x), const[x.argmax(dim=0)]))
    assert _calls(gm) == [
        ("call_method", "add"),
        ("call_method", "expand_as"),
        ("call_method", "argmax"),
        ("call_method", "__getitem__"),
    ]
    assert [n.target for n in gm.graph.nodes if n.op == "get_attr"] == ["_tensor_constant0"] * 3
    x = ember.tensor([[3.0, 4.0], [5.0, 6.0]])
    out = gm(x)
    assert ember.equal(out[0], const + x) and ember.equal(out[2], const[x.argmax(dim=0)])


def test_proxy_in_control_flow_raises_trace_error():
    def f(x):
        return x if x.sum() > 0 else -x

    with pytest.raises(
        TraceError, match="symbolically traced variables cannot be used as inputs to control flow"
    ):
        fx.symbolic_trace(f)


def test_iterating_a_proxy_raises_but_unpacking_records_getitems():
    def loop(x):
        return [v for v in x]

    with pytest.raises(TraceError, match="Proxy object cannot be iterated"):
        fx.symbolic_trace(loop)

    def unpack(x):
        a, b = x
        return a - b

    gm = fx.symbolic_trace(unpack)
    assert _calls(gm) == [
        ("call_function", "getitem"),
        ("call_function", "getitem"),
        ("call_function", "sub"),
    ]
    assert ember.equal(gm(ember.tensor([5.0, 3.0])), ember.tensor(2.0))


def test_len_of_a_proxy_points_to_fx_wrap():
    with pytest.raises(RuntimeError, match="'len' is not supported in symbolic tracing by default"):
        fx.symbolic_trace(lambda x: len(x))


def test_proxies_on_a_graph_appending_tracer_build_graphs():
    g = fx.Graph()
    tracer = GraphAppendingTracer(g)
    x = fx.Proxy(g.placeholder("x"), tracer)
    y = (x * 2).relu() + 1
    g.output(y.node)
    gm = fx.GraphModule(ember.nn.Module(), g)
    assert ember.equal(gm(ember.tensor([-1.0, 3.0])), ember.tensor([1.0, 7.0]))
    assert repr(x) == "Proxy(x)"


def test_trace_asserts_records_assert_statements():
    class AssertTracer(fx.Tracer):
        trace_asserts = True

    # compiled here, away from pytest's rewriting of assert statements
    scope = {}
    exec("def f(x):\n    assert x.sum() > 0\n    return x * 2\n", scope)
    graph = AssertTracer().trace(scope["f"])
    assert [n.name for n in graph.nodes] == ["x", "sum_1", "gt", "assert_fn", "mul", "output"]
    gm = fx.GraphModule(ember.nn.Module(), graph)
    np.testing.assert_array_equal(gm(ember.tensor([1.0])).numpy(), [2.0])
    with pytest.raises(AssertionError):
        gm(ember.tensor([-1.0]))


def test_function_that_is_not_recorded_reports_what_to_do():
    from ember.ops import elementwise

    with pytest.raises(TraceError, match="a function fx does not record received a traced value"):
        fx.symbolic_trace(lambda x: elementwise.relu(x))
