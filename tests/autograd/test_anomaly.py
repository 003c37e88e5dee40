"""Anomaly mode: forward stacks on nodes, and NaN/inf in backward named with their source."""

import pytest

import ember


def test_nan_in_backward_names_the_op_and_its_forward_source_line():
    x = ember.tensor([0.0, 4.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = x.sqrt() * ember.tensor([0.0, 1.0])  # sqrt'(0) * 0 = inf * 0 = nan
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    message = str(info.value)
    assert message.startswith("Function 'SqrtBackward0' returned nan values in its 0th output.")
    assert f"{__file__}:" in message
    assert "y = x.sqrt() * ember.tensor([0.0, 1.0])" in message
    assert "Traceback of forward call that caused the error" in message


def test_inf_in_backward_is_reported_as_inf():
    x = ember.tensor([0.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = x.sqrt()
        with pytest.raises(RuntimeError, match="'SqrtBackward0' returned inf values") as info:
            y.sum().backward()
    assert "y = x.sqrt()" in str(info.value)


def test_check_nan_false_records_stacks_but_does_not_raise():
    x = ember.tensor([0.0], requires_grad=True)
    with ember.autograd.detect_anomaly(check_nan=False):
        assert ember.autograd.is_anomaly_enabled()
        assert not ember.autograd.is_anomaly_check_nan_enabled()
        y = x.sqrt()
        y.sum().backward()
    assert not ember.autograd.is_anomaly_enabled()
    assert x.grad.isinf().all()


def test_set_detect_anomaly_switches_it_on_and_off():
    ember.autograd.set_detect_anomaly(True)
    try:
        assert ember.autograd.is_anomaly_enabled()
        y = ember.ones(2, requires_grad=True) * 2
        assert "test_anomaly.py" in y.grad_fn._trace[-1].filename
    finally:
        ember.autograd.set_detect_anomaly(False)
    assert not ember.autograd.is_anomaly_enabled()
    assert (ember.ones(2, requires_grad=True) * 2).grad_fn._trace is None


def test_an_error_inside_backward_gets_the_forward_trace_as_a_note():
    class Bad(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("broken backward")

    x = ember.ones(2, requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = Bad.apply(x)
        with pytest.raises(ValueError, match="broken backward") as info:
            y.sum().backward()
    notes = "\n".join(getattr(info.value, "__notes__", [])) or str(info.value)
    assert "Error detected in BadBackward" in notes and "y = Bad.apply(x)" in notes


def test_no_trace_is_recorded_outside_anomaly_mode():
    y = ember.ones(2, requires_grad=True).exp()
    assert y.grad_fn._trace is None
