"""ember.fx.Interpreter and Transformer (src/ember/fx/interpreter.py)."""

import pytest

import ember
import ember.fx as fx
import ember.nn as nn
import ember.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.bias = nn.Parameter(ember.tensor([0.1, 0.2, 0.3]))

    def forward(self, x):
        return ember.relu(self.fc(x)).neg() + ember.add(x, self.bias)


def test_interpreter_run_gives_the_modules_output():
    net = Net()
    gm = fx.symbolic_trace(net)
    x = ember.randn(2, 3)
    assert ember.equal(fx.Interpreter(gm).run(x), net(x))


def test_interpreter_with_overridden_call_function_and_call_method():
    class SwapReluNeg(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target == ember.relu:
                return ember.sigmoid(*args)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "neg":
                return args[0] * 10
            return super().call_method(target, args, kwargs)

    net = Net()
    x = ember.randn(2, 3)
    out = SwapReluNeg(fx.symbolic_trace(net)).run(x)
    assert ember.allclose(out, ember.sigmoid(net.fc(x)) * 10 + x + net.bias)


def test_run_node_override_sees_every_node_in_order():
    class Recorder(fx.Interpreter):
        def __init__(self, module):
            super().__init__(module)
            self.seen = []

        def run_node(self, n):
            self.seen.append((n.op, n.name))
            return super().run_node(n)

    recorder = Recorder(fx.symbolic_trace(Net()))
    recorder.run(ember.randn(1, 3))
    assert [name for _, name in recorder.seen] == [
        "x",
        "fc",
        "relu",
        "neg",
        "bias",
        "add",
        "add_1",
        "output",
    ]


def test_interpreter_frees_values_after_last_use():
    class Watch(fx.Interpreter):
        sizes = []

        def run_node(self, n):
            result = super().run_node(n)
            self.sizes.append(len(self.env))
            return result

    Watch(fx.symbolic_trace(lambda x: ((x + 1) * 2) - 3)).run(ember.ones(2))
    assert max(Watch.sizes) <= 2


def test_initial_env_and_boxed_run():
    gm = fx.symbolic_trace(lambda x, y: x * y)
    x_node, y_node = list(gm.graph.nodes)[:2]
    interp = fx.Interpreter(gm)
    out = interp.run(initial_env={x_node: ember.tensor(2.0), y_node: ember.tensor(5.0)})
    assert out.item() == 10.0
    args = [ember.tensor(3.0), ember.tensor(4.0)]
    assert fx.Interpreter(gm).boxed_run(args).item() == 12.0 and args == []


def test_errors_name_the_failing_node():
    gm = fx.symbolic_trace(lambda x: x.view(7))
    with pytest.raises(
        RuntimeError, match=r"While executing %view : \[num_users=1\] = call_method\[target=view\]"
    ):
        fx.Interpreter(gm).run(ember.ones(4))


def test_missing_argument_is_reported():
    gm = fx.symbolic_trace(lambda x, y: x + y)
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter y"):
        fx.Interpreter(gm).run(ember.ones(1))


def test_transformer_swaps_relu_for_gelu():
    class ReluToGelu(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target == ember.relu:
                return super().call_function(F.gelu, args, kwargs)
            return super().call_function(target, args, kwargs)

    net = Net()
    new = ReluToGelu(fx.symbolic_trace(net)).transform()
    assert [n.target for n in new.graph.nodes if n.op == "call_function"][0] is F.gelu
    assert "gelu = ember.nn.functional.gelu(fc);  fc = None" in new.code
    x = ember.randn(2, 3)
    assert ember.allclose(new(x), F.gelu(net.fc(x)).neg() + x + net.bias)


def test_transformer_overrides_may_call_ember_functions_on_proxies():
    class SigmoidThenDouble(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target == ember.relu:
                return ember.sigmoid(*args) * 2
            return super().call_function(target, args, kwargs)

    net = Net()
    new = SigmoidThenDouble(fx.symbolic_trace(net)).transform()
    assert "sigmoid = ember.sigmoid(fc);  fc = None\n    mul = sigmoid * 2" in new.code
    x = ember.randn(2, 3)
    assert ember.allclose(new(x), (ember.sigmoid(net.fc(x)) * 2).neg() + x + net.bias)


def test_plain_transformer_copies_the_graph():
    gm = fx.symbolic_trace(Net())
    copied = fx.Transformer(gm).transform()
    assert copied.code == gm.code
    x = ember.randn(2, 3)
    assert ember.equal(copied(x), gm(x))
