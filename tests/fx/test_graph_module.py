"""ember.fx.GraphModule (src/ember/fx/graph_module.py): generated code, recompile, state,
saving, copying, printing."""

import copy
import importlib
import io
import sys

import pytest

import ember
import ember.fx as fx
import ember.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.act = nn.Tanh()
        self.fc2 = nn.Linear(6, 2)
        self.register_buffer("shift", ember.tensor([0.5, -0.5]))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) + self.shift


def _x():
    return ember.randn(3, 4)


def test_code_is_readable_python():
    gm = fx.symbolic_trace(Net())
    assert gm.code == (
        "\n\n\n"
        "def forward(self, x):\n"
        "    fc1 = self.fc1(x);  x = None\n"
        "    act = self.act(fc1);  fc1 = None\n"
        "    fc2 = self.fc2(act);  act = None\n"
        "    shift = self.shift\n"
        "    add = fc2 + shift;  fc2 = shift = None\n"
        "    return add\n"
        "    "
    )


def test_state_dict_has_the_roots_keys_and_loads_back():
    net = Net()
    gm = fx.symbolic_trace(net)
    assert sorted(gm.state_dict()) == sorted(net.state_dict())
    other = fx.symbolic_trace(Net())
    other.load_state_dict(gm.state_dict())
    x = _x()
    assert ember.equal(other(x), net(x))
    assert gm.fc1 is net.fc1  # submodules are shared with the root, as in torch


def test_recompile_after_editing_the_graph_changes_forward():
    net = Net()
    gm = fx.symbolic_trace(net)
    add = next(n for n in gm.graph.nodes if n.name == "add")
    with gm.graph.inserting_after(add):
        doubled = gm.graph.call_function(ember.mul, (add, 2.0))
    add.replace_all_uses_with(doubled, delete_user_cb=lambda user: user is not doubled)
    x = _x()
    assert ember.equal(gm(x), net(x))  # not recompiled yet
    gm.recompile()
    assert "mul = ember.mul(add, 2.0);  add = None" in gm.code
    assert ember.allclose(gm(x), net(x) * 2.0)


def test_assigning_a_graph_recompiles():
    gm = fx.symbolic_trace(lambda x: x + 1)
    gm.graph = fx.symbolic_trace(lambda x: x * 3).graph
    assert ember.equal(gm(ember.tensor([2.0])), ember.tensor([6.0]))


def test_graph_module_from_a_dict_root():
    g = fx.Graph()
    x = g.placeholder("x")
    lin = g.call_module("layers.first", (x,))
    g.output(g.call_function(ember.add, (lin, g.get_attr("bias"))))
    first, bias = nn.Linear(2, 2), ember.tensor([1.0, 1.0])
    gm = fx.GraphModule({"layers.first": first, "bias": bias}, g, "Built")
    x_val = ember.ones(1, 2)
    assert ember.equal(gm(x_val), first(x_val) + bias)
    assert type(gm).__name__ == "Built" and "bias" in dict(gm.named_buffers())
    with pytest.raises(
        RuntimeError, match="referenced target bias but that target was not provided"
    ):
        fx.GraphModule({"layers.first": first}, g)


def test_to_folder_writes_a_module_that_loads_with_the_weights(tmp_path, monkeypatch):
    net = Net()
    gm = fx.symbolic_trace(net)
    with pytest.warns(UserWarning, match=r"saved as pickled files instead: \['act'\]"):
        gm.to_folder(tmp_path / "saved_net", "SavedNet")
    source = (tmp_path / "saved_net" / "module.py").read_text()
    assert "setattr(self, 'fc1', Linear(in_features=4, out_features=6, bias=True))" in source
    assert "self.register_buffer('shift', ember.empty([2], dtype=ember.float32))" in source
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("saved_net")
    try:
        loaded = module.SavedNet()
        x = _x()
        assert ember.equal(loaded(x), net(x))
    finally:
        sys.modules.pop("saved_net", None)
        sys.modules.pop("saved_net.module", None)


def test_save_and_load_rebuild_the_graph_from_the_code():
    net = Net()
    gm = fx.symbolic_trace(net)
    buffer = io.BytesIO()
    ember.save(gm, buffer)
    buffer.seek(0)
    loaded = ember.load(buffer, weights_only=False)
    assert isinstance(loaded, fx.GraphModule) and type(loaded).__name__ == "Net"
    assert loaded.code == gm.code
    x = _x()
    assert ember.equal(loaded(x), net(x))


def test_deepcopy_is_independent_of_the_original():
    net = Net()
    gm = fx.symbolic_trace(net)
    clone = copy.deepcopy(gm)
    assert clone.fc1 is not gm.fc1 and clone.graph is not gm.graph
    with ember.no_grad():
        clone.fc1.weight.zero_()
    x = _x()
    assert ember.equal(gm(x), net(x)) and not ember.equal(clone(x), net(x))
    assert clone.code == gm.code and type(clone).__name__ == "Net"


def test_each_graph_module_has_its_own_forward():
    a = fx.symbolic_trace(lambda x: x + 1)
    b = fx.symbolic_trace(lambda x: x - 1)
    x = ember.tensor([0.0])
    assert ember.equal(a(x), ember.tensor([1.0])) and ember.equal(b(x), ember.tensor([-1.0]))


def test_print_shows_module_code_and_readable_shows_shapes(capsys):
    from ember.fx.passes.shape_prop import ShapeProp

    gm = fx.symbolic_trace(Net())
    text = str(gm)
    assert text.startswith("Net(\n  (fc1): Linear(in_features=4, out_features=6, bias=True)")
    assert text.endswith("# To see more debug info, please use `graph_module.print_readable()`")
    ShapeProp(gm).propagate(_x())
    readable = gm.print_readable(print_output=False)
    assert readable.startswith(
        'class Net(ember.nn.Module):\n    def forward(self, x: "f32[3, 4]"):'
    )
    assert 'fc1: "f32[3, 6]" = self.fc1(x);  x = None' in readable
    gm.print_readable()
    assert capsys.readouterr().out.startswith("class Net(ember.nn.Module):")


def test_submodule_editing_and_unused_submodule_removal():
    gm = fx.symbolic_trace(Net())
    assert gm.add_submodule("extra.inner", nn.ReLU())
    assert isinstance(gm.get_submodule("extra.inner"), nn.ReLU)
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "extra") and hasattr(gm, "fc1")
    assert gm.delete_submodule("act") and not gm.delete_submodule("act")


def test_errors_in_generated_code_show_the_generated_line():
    gm = fx.symbolic_trace(lambda x: x.view(5))
    with pytest.raises(RuntimeError) as info:
        gm(ember.ones(4))
    frames = [frame for frame in info.traceback if "eval_with_key" in str(frame.path)]
    assert frames and "view = x.view(5)" in str(frames[0].statement)


def test_annotations_become_typed_signature():
    def f(x: ember.Tensor, n: int = 2) -> ember.Tensor:
        return x * n

    gm = fx.symbolic_trace(f)
    assert "def forward(self, x : ember.Tensor, n : int = 2) -> ember.Tensor:" in gm.code
    assert "%x : ember.Tensor [num_users=1] = placeholder[target=x]" in str(gm.graph)
    assert ember.equal(gm(ember.ones(2)), ember.full((2,), 2.0))
