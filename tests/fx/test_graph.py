"""ember.fx.Graph (src/ember/fx/graph.py): building, inserting, erasing, lint, dead code,
printing and generated code."""

import copy
import operator

import pytest

import ember
import ember.fx as fx


def _names(graph):
    return [n.name for n in graph.nodes]


def test_graph_built_by_hand_runs_as_a_graph_module():
    g = fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("weight")
    mm = g.call_function(ember.matmul, (x, w))
    relu = g.call_method("relu", (mm,))
    lin = g.call_module("lin", (relu,))
    g.output(lin)
    root = ember.nn.Module()
    root.weight = ember.nn.Parameter(ember.eye(2) * 2)
    root.lin = ember.nn.Linear(2, 2)
    gm = fx.GraphModule(root, g)
    x_val = ember.tensor([[1.0, -1.0]])
    expected = root.lin(ember.matmul(x_val, root.weight).relu())
    assert ember.equal(gm(x_val), expected)
    assert _names(g) == ["x", "weight", "matmul", "relu", "lin", "output"]


def test_repeated_names_get_numbered_and_builtins_are_not_shadowed():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.add, (x, 1))
    b = g.call_function(operator.add, (a, 1))
    p = g.call_function(operator.pow, (b, 2))
    s = g.call_method("sum", (p,))
    assert [a.name, b.name, p.name, s.name] == ["add", "add_1", "pow_1", "sum_1"]


def test_printed_graph_follows_torchs_format():
    g = fx.Graph()
    x = g.placeholder("x")
    relu = g.call_function(ember.relu, (x,))
    g.output((relu, x))
    assert str(g) == (
        "graph():\n"
        "    %x : [num_users=2] = placeholder[target=x]\n"
        "    %relu : [num_users=1] = call_function[target=ember.relu](args = (%x,), kwargs = {})\n"
        "    return (relu, x)"
    )


def test_inserting_before_and_after_place_new_nodes():
    g = fx.Graph()
    x = g.placeholder("x")
    out = g.output(x)
    with g.inserting_before(out):
        a = g.call_function(ember.neg, (x,))
    with g.inserting_after(x):
        b = g.call_function(ember.exp, (x,))
    c = g.create_node("call_function", ember.sin, (x,))  # insert point restored: at the end
    assert _names(g) == ["x", "exp", "neg", "output", "sin"]
    assert [a.prev.name, b.next.name, c.prev.name] == ["exp", "neg", "output"]


def test_erase_node_refuses_nodes_still_in_use():
    g = fx.Graph()
    x = g.placeholder("x")
    relu = g.call_function(ember.relu, (x,))
    out = g.output(relu)
    with pytest.raises(RuntimeError, match="Tried to erase Node relu but it still had 1 users"):
        g.erase_node(relu)
    out.args = (x,)
    g.erase_node(relu)
    assert _names(g) == ["x", "output"] and not x.users.get(relu) and len(g.nodes) == 2


def test_erasing_while_iterating_visits_the_rest():
    g = fx.Graph()
    x = g.placeholder("x")
    for _ in range(3):
        g.call_function(ember.neg, (x,))
    g.output(x)
    seen = []
    for node in g.nodes:
        seen.append(node.name)
        if node.op == "call_function":
            g.erase_node(node)
    assert seen == ["x", "neg", "neg_1", "neg_2", "output"] and _names(g) == ["x", "output"]


def test_lint_finds_use_before_definition():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(ember.neg, (x,))
    with g.inserting_before(a):
        b = g.call_function(ember.exp, (a,))
    g.output(b)
    with pytest.raises(
        RuntimeError, match="Argument 'neg' of Node 'exp' was used before it has been defined"
    ):
        g.lint()


def test_lint_finds_nodes_of_another_graph():
    g1, g2 = fx.Graph(), fx.Graph()
    x1 = g1.placeholder("x")
    g2.placeholder("y")
    g2.call_function(ember.neg, (x1,))
    with pytest.raises(RuntimeError, match="does not belong to this Graph"):
        g2.lint()


def test_lint_with_owning_module_checks_targets_exist():
    gm = fx.symbolic_trace(ember.nn.Sequential(ember.nn.Linear(2, 2)))
    node = next(n for n in gm.graph.nodes if n.op == "call_module")
    node.target = "missing"
    with pytest.raises(RuntimeError, match="references nonexistent attribute missing"):
        gm.graph.lint()


def test_eliminate_dead_code_removes_unused_pure_nodes_only():
    g = fx.Graph()
    x = g.placeholder("x")
    g.call_function(ember.neg, (x,))  # dead
    g.call_function(ember.randn_like, (x,))  # dead but draws random numbers: kept
    g.call_method("exp", (x,))  # dead
    g.output(x)
    assert g.eliminate_dead_code() is True
    assert _names(g) == ["x", "randn_like", "output"]
    assert g.eliminate_dead_code() is False


def test_python_code_releases_values_after_their_last_use():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.mul, (x, 2))
    b = g.call_function(ember.relu, (a,))
    g.output(g.call_function(operator.add, (a, b)))
    assert g.python_code("self").src == (
        "\n\n\n"
        "def forward(self, x):\n"
        "    mul = x * 2;  x = None\n"
        "    relu = ember.relu(mul)\n"
        "    add = mul + relu;  mul = relu = None\n"
        "    return add\n"
        "    "
    )


def test_print_tabular_lists_every_node(capsys):
    pytest.importorskip("tabulate")
    g = fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_method("relu", (x,)))
    g.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert lines[2].split() == ["placeholder", "x", "x", "()", "{}"]
    assert lines[3].split() == ["call_method", "relu", "relu", "(x,)", "{}"]
    assert lines[4].split() == ["output", "output", "output", "(relu,)", "{}"]


def test_deepcopy_and_graph_copy_copy_every_node():
    gm = fx.symbolic_trace(lambda x: ember.relu(x) * 2)
    g2 = copy.deepcopy(gm.graph)
    assert _names(g2) == _names(gm.graph) and all(n.graph is g2 for n in g2.nodes)
    g3 = fx.Graph()
    val_map = {}
    result = g3.graph_copy(gm.graph, val_map)
    assert result.name == "mul" and len(val_map) == 3


def test_find_nodes_by_op_and_target():
    gm = fx.symbolic_trace(lambda x: ember.relu(x) + ember.relu(x).neg())
    relus = gm.graph.find_nodes(op="call_function", target=ember.relu)
    assert [n.name for n in relus] == ["relu", "relu_1"]
    assert [n.name for n in gm.graph.find_nodes(op="call_method")] == ["neg"]
    assert gm.graph.output_node().op == "output"
