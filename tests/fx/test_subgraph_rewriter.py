"""ember.fx.subgraph_rewriter.replace_pattern (src/ember/fx/subgraph_rewriter.py and the
matcher in src/ember/fx/_matcher.py)."""

import ember
import ember.fx as fx
import ember.nn as nn
from ember.fx.subgraph_rewriter import replace_pattern_with_filters


def pattern(x, w):
    return ember.relu(ember.matmul(x, w))


def replacement(x, w):
    return ember.clamp(x @ w, min=0.0)


def test_every_occurrence_is_replaced_and_results_are_kept():
    def f(a, b, c):
        return pattern(a, b) + pattern(b, c).sum()

    gm = fx.symbolic_trace(f)
    matches = fx.replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"].count(ember.clamp) == 2
    assert all(n.target is not ember.relu for n in gm.graph.nodes)
    a, b, c = ember.randn(3, 3), ember.randn(3, 3), ember.randn(3, 3)
    assert ember.allclose(gm(a, b, c), f(a, b, c))
    gm.graph.lint()


def test_match_reports_pattern_anchor_and_node_map():
    gm = fx.symbolic_trace(lambda x, y: pattern(x, y) * 2)
    (match,) = fx.replace_pattern(gm, pattern, replacement)
    assert match.anchor.name == "relu" and match.anchor.graph is not gm.graph
    mapped = {p.name: g.name for p, g in match.nodes_map.items()}
    assert mapped == {"x": "x", "w": "y", "matmul": "matmul", "relu": "relu"}


def test_occurrence_whose_inner_value_is_used_elsewhere_is_left_alone():
    def f(x, w):
        inner = ember.matmul(x, w)
        return ember.relu(inner) + inner

    gm = fx.symbolic_trace(f)
    assert fx.replace_pattern(gm, pattern, replacement) == []
    assert any(n.target is ember.relu for n in gm.graph.nodes)


def test_targets_and_literals_must_match():
    def f(x):
        return ember.add(x, 1.0).neg() + ember.add(x, 2.0).neg()

    def add_one_neg(x):
        return ember.add(x, 1.0).neg()

    def sub_one(x):
        return ember.sub(ember.neg(x), 1.0)

    gm = fx.symbolic_trace(f)
    assert len(fx.replace_pattern(gm, add_one_neg, sub_one)) == 1
    x = ember.tensor([1.0, 2.0])
    assert ember.equal(gm(x), f(x))
    gm2 = fx.symbolic_trace(f)
    replaced = replace_pattern_with_filters(gm2, add_one_neg, sub_one, ignore_literals=True)
    assert len(replaced) == 2


def test_filters_choose_which_matches_are_replaced():
    gm = fx.symbolic_trace(lambda a, b: pattern(a, b) + pattern(b, a))

    def first_input_is_a(match, original_graph, pattern_graph):
        return match.placeholder_nodes[0].name == "a"

    replaced = replace_pattern_with_filters(gm, pattern, replacement, [first_input_is_a])
    assert len(replaced) == 1
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"].count(ember.relu) == 1


def test_pattern_with_a_module_call_matches_module_targets():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            return ember.sigmoid(self.fc(x))

    net = Net()
    gm = fx.symbolic_trace(net)
    assert len(fx.replace_pattern(gm, lambda x: ember.sigmoid(x), lambda x: ember.tanh(x))) == 1
    x = ember.randn(2, 2)
    assert ember.allclose(gm(x), ember.tanh(net.fc(x)))
