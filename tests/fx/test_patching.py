"""How ember calls reach the tracer (src/ember/fx/_patching.py): wrappers exist only while a
trace runs, act only on proxies, and concurrent traces and eager code in other threads are
unaffected."""

import threading

import pytest

import ember
import ember.fx as fx
import ember.nn as nn
import ember.nn.functional as F
from ember import relu as imported_relu
from ember.fx._patching import PatchSession, _Recording

ORIGINAL_RELU = vars(ember)["relu"]
ORIGINAL_GELU = vars(F)["gelu"]
ORIGINAL_TENSOR_ADD = vars(ember.Tensor)["add"]
ORIGINAL_MODULE_CALL = vars(nn.Module)["__call__"]


def _assert_nothing_patched():
    assert vars(ember)["relu"] is ORIGINAL_RELU and vars(F)["gelu"] is ORIGINAL_GELU
    assert vars(ember.Tensor)["add"] is ORIGINAL_TENSOR_ADD
    assert vars(nn.Module)["__call__"] is ORIGINAL_MODULE_CALL
    assert globals()["imported_relu"] is ORIGINAL_RELU


def test_wrappers_are_removed_after_a_trace():
    gm = fx.symbolic_trace(lambda x: F.gelu(ember.relu(x)).add(x))
    _assert_nothing_patched()
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [
        ORIGINAL_RELU,
        ORIGINAL_GELU,
    ]


def test_wrappers_are_removed_when_the_trace_fails():
    def bad(x):
        if x.sum() > 0:
            return x
        return x

    with pytest.raises(fx.proxy.TraceError):
        fx.symbolic_trace(bad)
    _assert_nothing_patched()


def test_names_imported_from_ember_are_recorded():
    gm = fx.symbolic_trace(lambda x: imported_relu(x))
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [ORIGINAL_RELU]
    _assert_nothing_patched()


def test_wrapper_equals_the_function_it_wraps_and_calls_through_without_proxies():
    with PatchSession() as session:
        session.install_ember()
        wrapper = vars(ember)["relu"]
        assert isinstance(wrapper, _Recording)
        assert (
            wrapper == ORIGINAL_RELU
            and ORIGINAL_RELU == wrapper
            and hash(wrapper) == hash(ORIGINAL_RELU)
        )
        assert {ORIGINAL_RELU: "found"}[wrapper] == "found"
        assert ember.equal(ember.relu(ember.tensor([-1.0, 1.0])), ember.tensor([0.0, 1.0]))
        assert ember.equal(ember.tensor([1.0]).add(ember.tensor([2.0])), ember.tensor([3.0]))
    _assert_nothing_patched()


def test_nested_sessions_keep_wrappers_until_the_last_closes():
    outer = PatchSession()
    outer.install_ember()
    inner = PatchSession()
    inner.install_ember()
    outer.close()
    assert isinstance(vars(ember)["relu"], _Recording)
    inner.close()
    _assert_nothing_patched()


def test_concurrent_traces_and_eager_code_in_other_threads():
    inside_trace = threading.Event()
    may_finish = threading.Event()

    class Slow(nn.Module):
        def forward(self, x):
            inside_trace.set()
            may_finish.wait(30)
            return ember.relu(x) + 1

    results = {}

    def trace_slow():
        results["slow"] = fx.symbolic_trace(Slow())

    thread = threading.Thread(target=trace_slow)
    thread.start()
    try:
        assert inside_trace.wait(30)
        assert isinstance(vars(ember)["relu"], _Recording)  # the other thread is tracing
        # eager calls here run as usual, and module calls are not captured by that trace
        layer = nn.Linear(2, 2)
        x = ember.tensor([[-1.0, 2.0]])
        assert ember.equal(ember.relu(x), ember.tensor([[0.0, 2.0]]))
        assert ember.allclose(layer(x), x @ layer.weight.T + layer.bias)
        # and a second trace runs alongside
        gm = fx.symbolic_trace(lambda v: ember.relu(v) * 2)
        assert ember.equal(gm(x), ember.relu(x) * 2)
    finally:
        may_finish.set()
        thread.join(30)
    slow = results["slow"]
    assert [n.op for n in slow.graph.nodes] == [
        "placeholder",
        "call_function",
        "call_function",
        "output",
    ]
    assert ember.equal(slow(ember.tensor([-3.0])), ember.tensor([1.0]))
    _assert_nothing_patched()
