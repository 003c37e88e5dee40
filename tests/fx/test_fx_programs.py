"""fx_programs.py, the torch.fx documentation's passes written with ``import ember as torch``,
gives PyTorch's graphs, code and results when the same source runs under torch."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).parent
_loaded: dict[str, types.ModuleType] = {}


def _load(library: str) -> types.ModuleType:
    """fx_programs.py as a module, importing ``library`` where it says ember."""
    if library not in _loaded:
        source = (HERE / "fx_programs.py").read_text()
        if library == "torch":
            source = source.replace("ember", "torch")
        module = types.ModuleType(f"fx_programs_{library}")
        module.__file__ = str(HERE / "fx_programs.py")
        sys.modules[module.__name__] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        _loaded[library] = module
    return _loaded[library]


@pytest.fixture
def em():
    return _load("ember")


@pytest.fixture
def tp(torch_mod):
    return _load("torch")


def _same_weights(ember_model, torch_model, torch) -> None:
    state = {k: torch.tensor(v.detach().numpy()) for k, v in ember_model.state_dict().items()}
    torch_model.load_state_dict(state)


def _pair(em, tp, torch, cls: str):
    ember_model, torch_model = getattr(em, cls)(), getattr(tp, cls)()
    _same_weights(ember_model, torch_model, torch)
    return ember_model, torch_model


def _target_name(target) -> str:
    return target if isinstance(target, str) else target.__name__


def _signature(gm) -> list[tuple[str, str, str]]:
    return [(n.op, n.name, _target_name(n.target)) for n in gm.graph.nodes]


def _close(ember_value, torch_value, atol=1e-6) -> None:
    if isinstance(ember_value, (tuple, list)):
        assert len(ember_value) == len(torch_value)
        for e, t in zip(ember_value, torch_value):
            _close(e, t, atol)
    elif hasattr(ember_value, "numpy"):
        np.testing.assert_allclose(
            ember_value.detach().numpy(), torch_value.detach().numpy(), atol=atol, rtol=1e-5
        )
    else:
        assert ember_value == torch_value


def _inputs(torch, *shape, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(data)


def test_traced_mlp_has_torchs_graph_code_and_outputs(em, tp, torch_mod):
    ember_model, torch_model = _pair(em, tp, torch_mod, "MLP")
    gm_e, gm_t = em.fx.symbolic_trace(ember_model), tp.fx.symbolic_trace(torch_model)
    assert _signature(gm_e) == _signature(gm_t)
    assert gm_e.code == gm_t.code.replace("torch.", "ember.")
    assert str(gm_e.graph) == str(gm_t.graph).replace("torch.", "ember.")
    x_e, x_t = _inputs(em.torch, 5, 4), _inputs(torch_mod, 5, 4)
    _close(gm_e(x_e), gm_t(x_t))
    _close(gm_e(x_e), ember_model(x_e), atol=0)


def test_traced_function_has_torchs_graph_code_and_outputs(em, tp, torch_mod):
    gm_e, gm_t = em.fx.symbolic_trace(em.pairwise), tp.fx.symbolic_trace(tp.pairwise)
    assert _signature(gm_e) == _signature(gm_t)
    assert gm_e.code == gm_t.code.replace("torch.", "ember.")
    args_e = (_inputs(em.torch, 3, 3), _inputs(em.torch, 3, 3, seed=1))
    args_t = (_inputs(torch_mod, 3, 3), _inputs(torch_mod, 3, 3, seed=1))
    _close(gm_e(*args_e), gm_t(*args_t), atol=1e-5)
    _close(gm_e(*args_e), em.pairwise(*args_e), atol=0)


def test_wrapped_leaf_function_and_math_call_are_recorded_as_torch_records_them(em, tp, torch_mod):
    ember_model, torch_model = _pair(em, tp, torch_mod, "WithLeafFunction")
    gm_e, gm_t = em.fx.symbolic_trace(ember_model), tp.fx.symbolic_trace(torch_model)
    assert _signature(gm_e) == _signature(gm_t)
    energy = next(n for n in gm_e.graph.nodes if n.name == "energy")
    assert energy.target is em.energy and energy.meta["is_wrapped"]
    assert 'ember.fx.wrap("fx_programs_ember_energy")' in gm_e.code
    _close(gm_e(_inputs(em.torch, 2, 4)), gm_t(_inputs(torch_mod, 2, 4)))


def test_leaf_module_tracer_keeps_blocks_whole_as_torch_does(em, tp, torch_mod):
    ember_model, torch_model = _pair(em, tp, torch_mod, "Stack")
    default_e, default_t = em.fx.symbolic_trace(ember_model), tp.fx.symbolic_trace(torch_model)
    assert _signature(default_e) == _signature(default_t)
    assert [n.target for n in default_e.graph.nodes if n.op == "call_module"] == [
        "block1.fc",
        "block2.fc",
        "head.0",
        "head.1",
    ]
    leaves_e, leaves_t = (
        em.trace_with_leaf_blocks(ember_model),
        tp.trace_with_leaf_blocks(torch_model),
    )
    assert _signature(leaves_e) == _signature(leaves_t)
    assert [n.target for n in leaves_e.graph.nodes if n.op == "call_module"] == [
        "block1",
        "block2",
        "head.0",
        "head.1",
    ]
    x_e, x_t = _inputs(em.torch, 3, 4), _inputs(torch_mod, 3, 4)
    _close(leaves_e(x_e), leaves_t(x_t))
    _close(default_e(x_e), ember_model(x_e), atol=0)


def test_add_to_mul_transform_matches_torch(em, tp, torch_mod):
    ember_model, torch_model = _pair(em, tp, torch_mod, "MLP")
    gm_e, gm_t = em.transform_add_to_mul(ember_model), tp.transform_add_to_mul(torch_model)
    assert "ember.mul(relu, sum_1)" in gm_e.code
    assert gm_e.code == gm_t.code.replace("torch.", "ember.")
    x_e, x_t = _inputs(em.torch, 5, 4), _inputs(torch_mod, 5, 4)
    _close(gm_e(x_e), gm_t(x_t))
    # and the result differs from the original model, which adds
    assert not np.allclose(gm_e(x_e)[0].detach().numpy(), ember_model(x_e)[0].detach().numpy())


def test_transformer_swapping_relu_for_gelu_matches_torch(em, tp, torch_mod):
    ember_model, torch_model = _pair(em, tp, torch_mod, "MLP")
    new_e = em.ReluToGelu(em.fx.symbolic_trace(ember_model)).transform()
    new_t = tp.ReluToGelu(tp.fx.symbolic_trace(torch_model)).transform()
    assert _signature(new_e) == _signature(new_t)
    assert "gelu = ember.nn.functional.gelu(fc1)" in new_e.code
    x_e, x_t = _inputs(em.torch, 5, 4), _inputs(torch_mod, 5, 4)
    _close(new_e(x_e), new_t(x_t), atol=1e-5)


def test_interpreter_with_overridden_calls_matches_torch(em, tp, torch_mod):
    ember_model, torch_model = _pair(em, tp, torch_mod, "MLP")
    x_e, x_t = _inputs(em.torch, 5, 4), _inputs(torch_mod, 5, 4)
    out_e = em.SwapSigmoidNeg(em.fx.symbolic_trace(ember_model)).run(x_e)
    out_t = tp.SwapSigmoidNeg(tp.fx.symbolic_trace(torch_model)).run(x_t)
    _close(out_e, out_t)
    y = ember_model.fc2(
        em.torch.add(em.torch.relu(ember_model.fc1(x_e)), x_e.sum(dim=-1, keepdim=True))
    )
    expected = em.torch.neg(y * ember_model.scale + ember_model.offset).clamp(min=0.1)
    _close(out_e[0], expected, atol=0)


def test_inserting_relus_after_linears_matches_torch(em, tp, torch_mod):
    ember_model, torch_model = _pair(em, tp, torch_mod, "MLP")
    gm_e, gm_t = em.relu_after_every_linear(ember_model), tp.relu_after_every_linear(torch_model)
    assert _signature(gm_e) == _signature(gm_t)
    assert gm_e.code == gm_t.code.replace("torch.", "ember.")
    _close(gm_e(_inputs(em.torch, 5, 4)), gm_t(_inputs(torch_mod, 5, 4)))


def test_dead_code_elimination_matches_torch(em, tp, torch_mod):
    ember_model, torch_model = _pair(em, tp, torch_mod, "MLP")
    gm_e, before_e, after_e, changed_e = em.add_dead_code_and_eliminate(ember_model)
    gm_t, before_t, after_t, changed_t = tp.add_dead_code_and_eliminate(torch_model)
    assert (
        (before_e, after_e, changed_e)
        == (before_t, after_t, changed_t)
        == (before_e, before_e - 2, True)
    )
    assert gm_e.code == gm_t.code.replace("torch.", "ember.")


def test_replace_pattern_matches_torch(em, tp, torch_mod):
    gm_e, gm_t = em.fx.symbolic_trace(em.add_then_relu), tp.fx.symbolic_trace(tp.add_then_relu)
    matches_e, matches_t = em.rewrite_add_relu(gm_e), tp.rewrite_add_relu(gm_t)
    assert len(matches_e) == len(matches_t) == 2
    assert _signature(gm_e) == _signature(gm_t)
    assert gm_e.code == gm_t.code.replace("torch.", "ember.")
    args_e = (_inputs(em.torch, 4), _inputs(em.torch, 4, seed=1))
    args_t = (_inputs(torch_mod, 4), _inputs(torch_mod, 4, seed=1))
    _close(gm_e(*args_e), gm_t(*args_t), atol=1e-5)


def test_shape_prop_annotates_as_torch_does(em, tp, torch_mod):
    ember_model, torch_model = _pair(em, tp, torch_mod, "MLP")
    gm_e, gm_t = em.fx.symbolic_trace(ember_model), tp.fx.symbolic_trace(torch_model)
    shapes_e = em.shapes_and_dtypes(gm_e, _inputs(em.torch, 5, 4))
    assert shapes_e == tp.shapes_and_dtypes(gm_t, _inputs(torch_mod, 5, 4))
    assert ("fc1", (5, 8), "float32") in shapes_e and ("fc2", (5, 3), "float32") in shapes_e


def test_data_dependent_control_flow_raises_torchs_trace_error(em, tp, torch_mod):
    expected = (
        "TraceError",
        "symbolically traced variables cannot be used as inputs to control flow",
    )
    assert em.control_flow_error() == tp.control_flow_error() == expected


def test_concrete_args_remove_the_branch_as_in_torch(em, tp, torch_mod):
    for use_relu in (True, False):
        gm_e, gm_t = em.specialized(use_relu), tp.specialized(use_relu)
        assert _signature(gm_e)[:3] == _signature(gm_t)[:3]
        assert [n.op for n in gm_e.graph.nodes] == [n.op for n in gm_t.graph.nodes]
        x_e, x_t = _inputs(em.torch, 4), _inputs(torch_mod, 4)
        _close(gm_e(x_e, use_relu), gm_t(x_t, use_relu))
    with pytest.raises(AssertionError, match="use_relu has been specialized to have value False"):
        em.specialized(False)(x_e, True)
