"""Replaying a recording: the steps' calls on fresh inputs, with no tensors, graph or dispatch."""

from __future__ import annotations

import numpy as np

from .trace import CONST, SLOT, slots_in

# the kinds of plan steps (the first field of each)
CALL, GENERAL, GUARD, BUFFERED = 0, 1, 2, 3


class GuardFailure(Exception):
    """A value read into Python during recording came out differently: replay cannot go on."""


def _build(spec):
    """A resolver for one argument: (is_constant, value or function of the slot list)."""
    kind, payload = spec
    if kind == CONST:
        return True, payload
    if kind == SLOT:
        return False, payload
    container, parts = payload
    if container is dict:
        built = {k: _build(v) for k, v in parts.items()}
        return False, ("dict", built)
    return False, ("seq", container, [_build(p) for p in parts])


def _resolve(resolver, values):
    if isinstance(resolver, int):
        return values[resolver]
    if resolver[0] == "dict":
        return {k: (v if c else _resolve(v, values)) for k, (c, v) in resolver[1].items()}
    _, container, parts = resolver
    return container(v if c else _resolve(v, values) for c, v in parts)


def _escaping(recorder, kept: set) -> set:
    """Slots whose arrays outlive a replay: what the step hands back or stores (``kept``),
    and every array those may be views of. Their memory must be new at every replay."""
    escaping = set(kept) | set(recorder.returned_slots)
    for step in reversed(recorder.steps):
        if step[0] != "call":
            continue
        _, fn, arg_specs, kw_specs, (out, _scalar) = step
        outs = {out} if out.__class__ is int else set(out or ())
        # a ufunc makes a new array unless it writes into ``out=``; anything else may view,
        # except a recorded kernel that says its results are new (``fresh_outputs``)
        fresh = isinstance(fn, np.ufunc) or getattr(fn, "fresh_outputs", False)
        if outs & escaping and (not fresh or "out" in kw_specs):
            for spec in list(arg_specs) + list(kw_specs.values()):
                slots_in(spec, escaping)
    return escaping


class Plan:
    """The recorded calls, ready to run again on the current external arrays.

    The first replay interprets the steps (``_steps``), making the buffers that later replays
    write into; from the second on they run as one generated function (``codegen``), unless
    ``straight_line`` is off (tests compare the two)."""

    straight_line = True
    # making the function costs ~30-60 us a step (most of it Python's ``compile``) and saves
    # ~0.7 us a step per replay: beyond this many steps the one-off pause is too long
    MAX_GENERATED_STEPS = 20_000

    def __init__(self, recorder, outputs, rebinds, rng=None):
        self.n_slots = recorder.n_slots
        # what a failed guard must undo: external arrays written, and random draws made,
        # before the last guard
        guards = [i for i, step in enumerate(recorder.steps) if step[0] == "guard"]
        last_guard = guards[-1] if guards else -1
        self.undo_slots = sorted({slot for i, slot in recorder.writes if i < last_guard})
        self.rng = rng if any(i < last_guard for i in recorder.draws) else None
        self.externals = [
            (slot, holder, attr, recorder.arguments.get(slot))
            for slot, holder, attr, _ in recorder.externals
        ]
        position = {slot: i for i, (slot, *_) in enumerate(self.externals)}
        self.undo_inputs = [position[slot] for slot in self.undo_slots]
        self.outputs = outputs  # builds the return value from the slots
        self.rebinds = rebinds  # (holder, attribute, slot, wrap) to set after a replay
        # what ``finish`` reads from a replay's slots
        self.kept = set(recorder.output_slots) | {slot for _, _, slot, _ in rebinds}
        self._replay = None  # the generated function (False: not made; interpret)
        # each step: (kind, fn, a, b, out, scalar); CALL: fn(*slots a), GENERAL: a = constant
        # args, b = (patches, kwargs, kw_patches); GUARD: fn(slot a) must equal b; BUFFERED: a
        # ufunc of slots written into its own buffer from the previous replay (b: its index)
        self.steps = []
        self.buffers: list = []
        escaping = _escaping(recorder, {slot for _, _, slot, _ in rebinds})
        for step in recorder.steps:
            if step[0] == "output":
                continue
            if step[0] == "guard":
                _, convert, slot, value = step
                self.steps.append((GUARD, convert, slot, value, None, False))
                continue
            _, fn, arg_specs, kw_specs, (out, scalar) = step
            if not kw_specs and all(kind == SLOT for kind, _ in arg_specs):
                slots = tuple(payload for _, payload in arg_specs)
                if (
                    isinstance(fn, np.ufunc)
                    and fn.nout == 1
                    and out.__class__ is int
                    and scalar is False  # an array result (not 0-d, not a Python number)
                    and out not in escaping
                ):
                    self.steps.append((BUFFERED, fn, slots, len(self.buffers), out, False))
                    self.buffers.append(None)
                else:
                    self.steps.append((CALL, fn, slots, None, out, scalar))
                continue
            args, patches = [], []
            for i, spec in enumerate(arg_specs):
                constant, value = _build(spec)
                args.append(value if constant else None)
                if not constant:
                    patches.append((i, value))
            kwargs, kw_patches = {}, []
            for k, spec in kw_specs.items():
                constant, value = _build(spec)
                if constant:
                    kwargs[k] = value
                else:
                    kw_patches.append((k, value))
            self.steps.append(
                (GENERAL, fn, tuple(args), (patches, kwargs, kw_patches), out, scalar)
            )

    def run(self, args: tuple = (), kwargs: dict | None = None):
        """Replay the steps on the current external arrays; the slots ``finish`` reads."""
        inputs = []
        for _slot, holder, attr, argument in self.externals:
            if argument is None:
                inputs.append(getattr(holder, attr))
            elif argument.__class__ is int:
                inputs.append(args[argument]._data)
            else:
                inputs.append(kwargs[argument]._data)
        undo = [(inputs[i], inputs[i].copy()) for i in self.undo_inputs]
        rng_state = self.rng.bit_generator.state if self.rng is not None else None
        try:
            replay = self._replay
            if replay:
                return replay(*inputs)
            values = [None] * self.n_slots
            for (slot, *_), array in zip(self.externals, inputs):
                values[slot] = array
            values = self._steps(values)
            if replay is None:  # every buffer exists now
                self._replay = self._generate()
            return values
        except GuardFailure:
            for array, copy in undo:
                np.copyto(array, copy)
            if rng_state is not None:
                self.rng.bit_generator.state = rng_state
            raise

    def _generate(self):
        if not self.straight_line:
            return None
        if len(self.steps) > self.MAX_GENERATED_STEPS:
            return False
        from .codegen import replay_function

        inputs = [slot for slot, *_ in self.externals]
        made = replay_function(self.steps, self.buffers, inputs, self.kept, GuardFailure)
        return made if made is not None else False

    def _steps(self, values: list) -> list:
        asarray = np.asarray
        buffers = self.buffers
        for kind, fn, a, b, out, scalar in self.steps:
            if kind == BUFFERED:
                buffer = buffers[b]
                args = [values[i] for i in a]
                if buffer is None:
                    result = buffers[b] = fn(*args)
                else:
                    result = fn(*args, out=buffer)
                values[out] = result
                continue
            if kind == CALL:
                result = fn(*[values[i] for i in a])
            elif kind == GENERAL:
                patches, kwargs, kw_patches = b
                args = list(a)
                for i, r in patches:
                    args[i] = values[r] if r.__class__ is int else _resolve(r, values)
                if kw_patches:
                    kwargs = dict(kwargs)
                    for k, r in kw_patches:
                        kwargs[k] = values[r] if r.__class__ is int else _resolve(r, values)
                result = fn(*args, **kwargs)
            else:  # a guard: the value read into Python must come out the same
                if fn(values[a]) != b:
                    raise GuardFailure
                continue
            if out is None:
                continue
            if out.__class__ is int:
                values[out] = asarray(result) if scalar else result
            else:
                for s, r in zip(out, result):
                    values[s] = r
        return values
