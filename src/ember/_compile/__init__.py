"""``ember.compile``: record a step once, then replay its array calls.

The first call with a new signature runs eagerly while ``trace`` records every array call of
forward, backward and the optimizer update. Later calls with the same signature replay those
calls (``plan``) on the current parameters, gradients, optimizer state and inputs: no tensors,
graph nodes or dispatch, the same NumPy calls on the same values, so the same results to the
bit. The signature (the guards) covers the shapes, dtypes and devices of tensor arguments,
other arguments' values, grad mode, training flags, optimizer hyperparameters and state, and
whether each gradient exists. A value read into Python during recording (``bool``, ``int``,
``item`` ...) must come out the same at replay, or the call runs eagerly and is recorded again,
as does a call that breaks a guard; both warn once. The exception is an optimizer's step count
(Adam's bias corrections): read into Python, it stays a value of the replay (``symbolic``).
Replayed outputs carry no graph.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .. import _backend, _random
from .._tensor import Tensor
from ..autograd import _watch
from ..autograd.grad_mode import is_grad_enabled
from ..nn.modules.module import Module
from ..optim import _fused
from ..optim.optimizer import Optimizer
from .plan import GuardFailure, Plan
from .symbolic import Symbolic
from .trace import Recorder, Traced, TracingGenerator, TracingModule, _call, untrace

# the fused optimizer updates' kernel calls (ctypes, numba: unseen by NumPy's dispatch) record
# through the tracer; optim sits a layer below and never imports it
_fused.RECORD_CALL = _call


class CompileWarning(UserWarning):
    """ember.compile fell back to eager execution."""


def _roots(fn) -> list:
    """What ``fn`` reaches directly: its bound object, closure cells and named globals."""
    target = getattr(fn, "__func__", fn)
    roots = [fn.__self__] if hasattr(fn, "__self__") else []
    for cell in getattr(target, "__closure__", None) or ():
        try:
            roots.append(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    code = getattr(target, "__code__", None)
    if code is not None:
        g = target.__globals__
        roots += [g[name] for name in code.co_names if name in g]
    return roots


class _Holders:
    """The modules, optimizers and tensors a step reaches through its closure and globals
    (two levels down: containers and the functions it calls), with what guards read."""

    def __init__(self, roots: list):
        seen, self.modules, self.optimizers, self.tensors = set(), [], [], []

        def visit(value, depth):
            if id(value) in seen:
                return
            seen.add(id(value))
            if isinstance(value, Module):
                self.modules.append(value)
            elif isinstance(value, Optimizer):
                self.optimizers.append(value)
            elif isinstance(value, Tensor):
                self.tensors.append(value)
            elif depth < 2 and isinstance(value, (list, tuple)):
                for v in value:
                    visit(v, depth + 1)
            elif depth < 2 and isinstance(value, dict):
                for v in value.values():
                    visit(v, depth + 1)
            elif depth < 2 and callable(value) and hasattr(value, "__code__"):
                for r in _roots(value):
                    visit(r, depth + 1)

        for r in roots:
            visit(r, 0)
        self.submodules = [sub for m in self.modules for sub in m.modules()]
        self.params = []
        for m in self.modules:
            self.params += list(m.parameters()) + [b for b in m.buffers() if b is not None]
        for o in self.optimizers:
            for group in o.param_groups:
                self.params += group["params"]
        seen_params = set()
        self.params = [
            t for t in self.params if not (id(t) in seen_params or seen_params.add(id(t)))
        ]


_CPU = str(_backend.CPU)


def _describe(value):
    if isinstance(value, Tensor):
        d = value._data
        device = _CPU if d.__class__ is np.ndarray else str(_backend.device_of(d))
        return ("T", d.shape, d.dtype, device, value._rg)
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return ("v", value)


def _state_tensors(optimizer) -> list:
    found = []
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, Tensor):
                found.append(value)
    return found


def _signature(args, kwargs, holders: _Holders) -> tuple:
    parts = [is_grad_enabled(), tuple(m.training for m in holders.submodules)]
    parts += [_describe(a) for a in args]
    parts += [(k, _describe(v)) for k, v in sorted(kwargs.items())]
    for o in holders.optimizers:
        for group in o.param_groups:
            parts.append(tuple((k, v) for k, v in group.items() if k != "params"))
        for key, state in o.state.items():
            parts.append((id(key), tuple([(k, _describe(state[k])) for k in sorted(state)])))
    for t in holders.params + holders.tensors:
        grad = t._grad
        parts.append((id(t), t._data.shape, grad is None or grad._data.shape))
    return tuple(parts)


class CompiledFunction:
    """What ``ember.compile(fn)`` returns: call it as you would call ``fn``."""

    def __init__(self, fn):
        self.fn = fn
        self.plans: dict = {}
        self.replays = 0
        self.recordings = 0
        self.fallbacks = 0  # replays stopped by a guard (undone, then run eagerly)
        self._warned = False
        self._holders = (None, None)  # (ids of the roots, _Holders)
        functools.update_wrapper(self, fn)

    def _reach(self, args, kwargs) -> _Holders:
        roots = _roots(self.fn) + [a for a in args if isinstance(a, (Module, Optimizer))]
        key = tuple(map(id, roots))
        if self._holders[0] != key:  # a rebound global or closure variable: look again
            self._holders = (key, _Holders(roots))
        return self._holders[1]

    def _warn(self, why: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(f"ember.compile: {why}; running eagerly", CompileWarning, stacklevel=3)

    def __call__(self, *args, **kwargs):
        holders = self._reach(args, kwargs)
        key = _signature(args, kwargs, holders)
        plan = self.plans.get(key)
        if plan is _EAGER:
            return self.fn(*args, **kwargs)
        if plan is not None:
            try:
                values = plan.run(args, kwargs)
            except GuardFailure:
                self.fallbacks += 1
                self._warn("a value read during recording changed (data-dependent control flow)")
                del self.plans[key]
                return self.fn(*args, **kwargs)
            self.replays += 1
            return plan.finish(values)
        if self.plans and not self._warned and self.recordings:
            self._warn("the arguments or state changed (a guard failed); recording again")
        return self._record(key, args, kwargs, holders)

    def _record(self, key, args, kwargs, holders: _Holders):
        tensors, optimizers = holders.tensors, holders.optimizers
        params = list(holders.params)
        for o in optimizers:
            params += _state_tensors(o)
        given = [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]
        if any(not isinstance(t._data, np.ndarray) for t in params + tensors + given):
            self._warn("only CPU (NumPy) tensors are compiled")
            self.plans[key] = _EAGER
            return self.fn(*args, **kwargs)
        recorder = Recorder()
        externals = []
        for t in params + tensors:
            externals.append(t)
            if t._grad is not None:
                externals.append(t._grad)
        seen = set()
        externals = [t for t in externals if not (id(t) in seen or seen.add(id(t)))]
        arguments = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
        arguments += [(k, v) for k, v in kwargs.items() if isinstance(v, Tensor)]
        previous_module = _backend._MODULE_OF_TYPE.get(Traced)
        generator = _random.default_generator
        previous_rng = generator._rng
        try:
            _watch.add(recorder)
            Traced._recorder = recorder
            _backend._MODULE_OF_TYPE[Traced] = TracingModule(recorder)
            generator._rng = TracingGenerator(recorder, previous_rng)
            for t in externals:
                recorder.external(t, "_data")
            for where, t in arguments:
                if id(t) not in seen:  # the same tensor as a parameter: read it there
                    recorder.external(t, "_data", argument=where)
            for o in optimizers:  # step counts: Adam folds them into Python scalars
                for t in _state_tensors(o):
                    if t._data.size == 1:
                        recorder.symbolic_slots.add(recorder.slot_of[id(t._data)])
            out = self.fn(*args, **kwargs)
        finally:
            _watch.remove(recorder)
            Traced._recorder = None
            # a gradient made during the recording is rebound at every replay, whether its
            # tensor is a parameter or a tensor the step reaches (an input, a closure's)
            grown = list(dict.fromkeys(params + tensors + given))
            rebinds = self._restore(recorder, grown, generator, previous_rng, previous_module)
            for o in optimizers:  # state made during the recording holds traced views
                for t in _state_tensors(o):
                    untrace(t)
        outputs = _output_builder(out, recorder)
        if recorder.broken:  # the step ran as eager code; this signature stays eager
            self.why_eager = recorder.broken
            self._warn(f"the step cannot be recorded ({recorder.broken})")
            self.plans[key] = _EAGER
            return _plain_outputs(out)
        self.plans[key] = _FinishedPlan(recorder, outputs, rebinds, previous_rng)
        self.recordings += 1
        return _plain_outputs(out)

    @staticmethod
    def _restore(recorder, params, generator, previous_rng, previous_module):
        generator._rng = previous_rng
        if previous_module is None:
            _backend._MODULE_OF_TYPE.pop(Traced, None)
        rebinds = []
        for slot, holder, attr, original in recorder.externals:
            current = getattr(holder, attr)
            if isinstance(current, Traced):
                new_slot = recorder.slot_of.get(id(current))
                if new_slot != slot:
                    rebinds.append((holder, attr, new_slot, False))
                setattr(
                    holder,
                    attr,
                    original if new_slot == slot else np.ndarray.view(current, np.ndarray),
                )
        for p in params:
            grad = p._grad
            if grad is not None and isinstance(grad._data, Traced):
                rebinds.append((p, "_grad", recorder.slot_of[id(grad._data)], True))
                untrace(grad)
            untrace(p)
        return rebinds


_EAGER = object()  # the plan of a signature whose step cannot be recorded


class _FinishedPlan(Plan):
    def finish(self, values):
        for holder, attr, slot, wrap in self.rebinds:
            if wrap:
                setattr(holder, attr, Tensor._wrap(values[slot]))
            else:
                setattr(holder, attr, values[slot])
        return self.outputs(values)


def _output_builder(out, recorder):
    floats = {id(value): index for value, index in recorder.escapes if isinstance(value, float)}

    def build(value):
        if isinstance(value, Tensor) and isinstance(value._data, Traced):
            slot = recorder.slot_of[id(value._data)]
            recorder.returned_slots.add(slot)
            recorder.output_slots.add(slot)
            return lambda values: Tensor._wrap(values[slot])
        if isinstance(value, Symbolic) and value._recorder is recorder:
            slot, kind = value.slot, type(value.value)
            recorder.output_slots.add(slot)
            return lambda values: kind(values[slot])
        if isinstance(value, float) and id(value) in floats:
            index = floats[id(value)]
            _, convert, slot, _ = recorder.steps[index]
            recorder.steps[index] = ("output",)  # handed back, not a guard
            recorder.output_slots.add(slot)
            return lambda values: convert(values[slot])
        if isinstance(value, (tuple, list)):
            parts = [build(v) for v in value]
            kind = type(value)
            return lambda values: kind(p(values) for p in parts)
        if isinstance(value, dict):
            parts = {k: build(v) for k, v in value.items()}
            return lambda values: {k: p(values) for k, p in parts.items()}
        return lambda values: value

    return build(out)


def _plain_outputs(out):
    """What the recording call hands back: plain arrays, and numbers for symbolic ones."""
    if isinstance(out, Tensor):
        untrace(out)
    elif isinstance(out, Symbolic):
        return out.value
    elif isinstance(out, (tuple, list)):
        plain = [_plain_outputs(v) for v in out]
        if any(p is not v for p, v in zip(plain, out)):
            return type(out)(plain)
    elif isinstance(out, dict):
        for k, v in out.items():
            out[k] = _plain_outputs(v)
    return out


def compile(fn=None, **options):  # noqa: A001 - PyTorch's name
    """Record ``fn`` (a training or inference step) on its first call and replay it after.

    Example::
        >>> @ember.compile
        ... def step(x, y):
        ...     opt.zero_grad()
        ...     loss = loss_fn(model(x), y)
        ...     loss.backward()
        ...     opt.step()
        ...     return loss.item()
    """
    if fn is None:
        return lambda f: CompiledFunction(f)
    return CompiledFunction(fn)
