"""ember.fx.Node (src/ember/fx/node.py): arguments, users, rewiring, printing."""

import operator

import pytest

import ember
import ember.fx as fx
from ember.fx.node import map_aggregate, map_arg


def _graph_x_relu_out():
    g = fx.Graph()
    x = g.placeholder("x")
    relu = g.call_function(ember.relu, (x,))
    out = g.output(relu)
    return g, x, relu, out


def test_node_records_op_target_args_kwargs_and_users():
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    cat = g.call_function(ember.cat, ([x, y],), {"dim": 0})
    assert (cat.op, cat.target, cat.name) == ("call_function", ember.cat, "cat")
    assert cat.args == ([x, y],) and cat.kwargs == {"dim": 0}
    assert list(x.users) == [cat] and list(y.users) == [cat]
    assert cat.all_input_nodes == [x, y]


def test_assigning_args_updates_users_both_ways():
    g, x, relu, out = _graph_x_relu_out()
    w = g.placeholder("w")
    relu.args = (w,)
    assert list(x.users) == [] and list(w.users) == [relu]
    relu.kwargs = {"other": x}
    assert list(x.users) == [relu] and relu.all_input_nodes == [w, x]


def test_node_args_cannot_be_mutated_in_place():
    g = fx.Graph()
    x = g.placeholder("x")
    cat = g.call_function(ember.cat, ([x, x],), {"dim": 0})
    with pytest.raises(TypeError, match="'immutable_list' object does not support mutation"):
        cat.args[0].append(x)
    with pytest.raises(TypeError, match="'immutable_dict' object does not support mutation"):
        cat.kwargs["dim"] = 1


def test_update_arg_insert_arg_and_update_kwarg():
    g = fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    add = g.call_function(ember.add, (x, 1))
    add.update_arg(1, y)
    assert add.args == (x, y) and add in y.users
    add.insert_arg(0, 5)
    assert add.args == (5, x, y)
    add.update_kwarg("alpha", 2)
    assert add.kwargs == {"alpha": 2}


def test_replace_all_uses_with_rewires_every_user():
    g, x, relu, out = _graph_x_relu_out()
    with g.inserting_after(relu):
        sig = g.call_function(ember.sigmoid, (x,))
    changed = relu.replace_all_uses_with(sig)
    assert changed == [out] and out.args == (sig,) and not relu.users


def test_replace_all_uses_with_delete_user_cb_keeps_chosen_users():
    g, x, relu, out = _graph_x_relu_out()
    with g.inserting_after(relu):
        neg = g.call_function(ember.neg, (relu,))
    relu.replace_all_uses_with(neg, delete_user_cb=lambda user: user is not neg)
    assert neg.args == (relu,) and out.args == (neg,)


def test_replace_input_with_changes_one_user():
    g, x, relu, out = _graph_x_relu_out()
    w = g.placeholder("w")
    relu.replace_input_with(x, w)
    assert relu.args == (w,) and not x.users


def test_format_node_prints_torchs_line():
    g = fx.Graph()
    x = g.placeholder("x", default_value=3)
    s = g.call_method("sum", (x,), {"dim": -1})
    g.output(s)
    assert x.format_node() == "%x : [num_users=1] = placeholder[target=x](default=3)"
    assert (
        s.format_node()
        == "%sum_1 : [num_users=1] = call_method[target=sum](args = (%x,), kwargs = {dim: -1})"
    )


def test_targets_print_with_their_public_names():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(operator.add, (x, x))
    b = g.call_function(getattr, (x, "shape"))
    c = g.call_function(ember.nn.functional.gelu, (x,))
    assert "target=operator.add" in a.format_node()
    assert "target=builtins.getattr" in b.format_node()
    assert "target=ember.nn.functional.gelu" in c.format_node()


def test_call_function_needs_a_callable_target():
    g = fx.Graph()
    with pytest.raises(ValueError, match="but a Callable is expected"):
        g.call_function("relu")


def test_map_arg_applies_to_nodes_only_and_keeps_structure():
    g = fx.Graph()
    x = g.placeholder("x")
    mapped = map_arg((x, [x, 2], {"k": x}, slice(x, 1)), lambda n: n.name)
    assert mapped == ("x", ["x", 2], {"k": "x"}, slice("x", 1, None))


def test_map_aggregate_applies_to_every_leaf_and_keeps_sizes():
    assert map_aggregate((1, [2, (3,)]), lambda v: v * 10) == (10, [20, (30,)])
    size = map_aggregate(ember.Size([2, 3]), lambda v: v)
    assert isinstance(size, ember.Size) and size == (2, 3)


def test_is_impure_keeps_inputs_outputs_and_random_draws():
    g = fx.Graph()
    x = g.placeholder("x")
    r = g.call_function(ember.rand_like, (x,))
    n = g.call_function(ember.neg, (x,))
    o = g.output(x)
    assert x.is_impure() and o.is_impure() and r.is_impure() and not n.is_impure()


def test_prepend_and_append_move_nodes_within_the_graph():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(ember.neg, (x,))
    b = g.call_function(ember.exp, (x,))
    out = g.output((a, b))
    a.prepend(b)
    assert [n.name for n in g.nodes] == ["x", "exp", "neg", "output"]
    out.append(b)
    assert [n.name for n in g.nodes] == ["x", "neg", "output", "exp"]
    assert (b.prev, b.next.op) == (out, "root")
