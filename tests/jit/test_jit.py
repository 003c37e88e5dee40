"""ember.jit (src/ember/jit): trace records through the ONNX exporter and runs in ONNX
Runtime for inference; outputs always equal eager ones."""

import io

import numpy as np
import pytest

import ember
import ember.nn as nn

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
import ember.jit  # noqa: E402


def _model():
    from ember.cli.demo import build_model

    return build_model("cnn").eval()


def test_traced_module_matches_eager_and_rerecords_for_new_shapes():
    model = _model()
    x = ember.randn(4, 1, 8, 8)
    traced = ember.jit.trace(model, x)
    with ember.no_grad():
        for batch in (4, 7, 4):
            inputs = ember.randn(batch, 1, 8, 8)
            np.testing.assert_allclose(
                traced(inputs).numpy(), model(inputs).numpy(), rtol=1e-5, atol=1e-5
            )
    assert len(traced._recordings) == 2
    assert sorted(traced.state_dict()) == sorted(f"original.{k}" for k in model.state_dict())


def test_traced_module_runs_eagerly_when_gradients_are_needed():
    model = _model()
    traced = ember.jit.trace(model, ember.randn(2, 1, 8, 8))
    out = traced(ember.randn(2, 1, 8, 8))
    out.sum().backward()
    assert model[0].weight.grad is not None


def test_traced_module_follows_parameter_updates():
    model = nn.Linear(3, 2).eval()
    x = ember.randn(5, 3)
    traced = ember.jit.trace(model, x)
    with ember.no_grad():
        model.weight.mul_(2.0)
        np.testing.assert_allclose(traced(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_trace_of_a_function_warns_on_data_dependent_branch():
    def fn(x):
        return x * 2 if x.sum() > 0 else -x

    assert ember.jit.TracerWarning is ember.onnx.TracerWarning
    with pytest.warns(ember.jit.TracerWarning):
        traced = ember.jit.trace(fn, ember.ones(3))
    with ember.no_grad():
        assert traced(ember.tensor([1.0, 2.0, 3.0])).tolist() == [2.0, 4.0, 6.0]


def test_save_and_load_run_without_the_python_class(tmp_path):
    model = _model()
    x = ember.randn(3, 1, 8, 8)
    traced = ember.jit.trace(model, x)
    ember.jit.save(traced, tmp_path / "cnn.onnx")
    loaded = ember.jit.load(tmp_path / "cnn.onnx")
    with ember.no_grad():
        np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5)
    assert "Conv" in traced.graph and traced.code == traced.graph


def test_script_freeze_and_decorators_are_thin_front_doors():
    model = nn.Linear(2, 2)
    assert ember.jit.script(model) is model
    scripted = ember.jit.script(model.eval(), example_inputs=[(ember.ones(1, 2),)])
    assert isinstance(scripted, ember.jit.ScriptModule)
    assert ember.jit.freeze(model) is model and not model.training

    def fn(x):
        return x

    assert ember.jit.ignore(fn) is fn and ember.jit.ignore(drop=True)(fn) is fn
    assert ember.jit.unused(fn) is fn and ember.jit.export(fn) is fn
    assert not ember.jit.is_scripting() and not ember.jit.is_tracing()


def test_trace_of_an_unexportable_function_replays_eagerly_with_a_warning():
    with pytest.warns(ember.jit.TracerWarning, match="op 'det'"):
        traced = ember.jit.trace(lambda x: ember.linalg.det(x), ember.eye(2) * 2)
    with ember.no_grad():
        assert traced(ember.eye(3) * 2).item() == pytest.approx(8.0)
    with pytest.raises(RuntimeError, match="could not be recorded"):
        traced.save(io.BytesIO())
