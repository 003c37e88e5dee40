"""ember's functions reach the nested kernels; dense calls are unchanged; import stays lazy."""

import inspect
import subprocess
import sys

import numpy as np

import ember
import ember.nn.functional as F

from .helpers import arrays, nested


def test_functions_are_patched_in_place_keeping_identity_and_signature():
    from ember.ops import activation, linalg

    assert ember.relu.__nested_dispatch__ and F.linear.__nested_dispatch__
    assert F.relu is activation.relu and F.linear is linalg.linear  # the same objects
    assert list(inspect.signature(F.linear).parameters) == ["input", "weight", "bias"]
    assert ember.add.__name__ == "add" and F.relu.__code__.co_name == "relu"


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
