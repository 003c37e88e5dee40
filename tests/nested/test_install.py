"""ember's functions reach the nested kernels; dense calls are unchanged; import stays lazy."""

import inspect
import subprocess
import sys

import numpy as np

import ember
import ember.nn.functional as F

from .helpers import arrays, nested


def test_functions_are_patched_in_place_keeping_identity_and_signature():
    from ember.nested import _install, _pointwise

    def double(input, scale=2.0, *, shift=0.0):
        return input * scale + shift

    held = double  # a reference taken before patching, as other modules hold ember's
    _install._patch(double, _pointwise.unary)
    assert held is double and double.__nested_dispatch__
    assert list(inspect.signature(double).parameters) == ["input", "scale", "shift"]
    assert held(ember.ones(2), shift=1.0).tolist() == [3.0, 3.0]
    out = held(nested(ember, arrays()), 3.0)
    assert out.is_nested and np.allclose(out.unbind()[0].numpy(), arrays()[0] * 3)
    assert ember.relu.__nested_dispatch__ and F.linear.__nested_dispatch__
    assert list(inspect.signature(F.linear).parameters) == ["input", "weight", "bias"]
    assert F.relu.__code__.co_name == "relu"


def test_dense_calls_pass_through_unchanged():
    x = ember.tensor([[-1.0, 2.0]], requires_grad=True)
    y = ember.add(F.relu(x), x, alpha=2)
    assert y.tolist() == [[-2.0, 6.0]] and not y.is_nested
    y.sum().backward()
    assert x.grad.tolist() == [[2.0, 3.0]]


def test_keyword_and_second_position_nested_arguments_dispatch():
    nt = nested(ember, arrays())
    out = F.linear(input=nt, weight=ember.ones(2, 4))
    assert out.is_nested and out.size(-1) == 2
    summed = ember.add(ember.ones(4), nt)
    for got, a in zip(summed.unbind(), arrays()):
        np.testing.assert_allclose(got.numpy(), a + 1)


def test_import_ember_does_not_import_nested_and_jagged_loads_it():
    code = (
        "import sys, ember\n"
        "assert 'ember.nested' not in sys.modules\n"
        "assert ember.jagged == 'jagged' and 'ember.nested' in sys.modules\n"
        "assert ember.nested.nested_tensor([ember.ones(2)], layout=ember.jagged).is_nested\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()


def test_patched_functions_keep_the_users_line_in_anomaly_reports():
    import pytest

    x = ember.tensor([-1.0, 0.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = ember.sqrt(x)  # a patched function: its trampoline is one of ember's frames
        with pytest.raises(RuntimeError, match=r"created in forward at .*test_install\.py"):
            y.sum().backward()
