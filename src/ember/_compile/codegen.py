"""A plan's steps as one straight-line Python function, made once its buffers exist.

The interpreter in ``plan.py`` pays per step for unpacking the step, testing its kind,
building an argument list and storing the result in the slot list (~1 µs, a few hundred
steps in a transformer's step). The function made here does the same calls in the same order
with the same arguments, each slot a local variable and each function, constant and buffer
a global of its own: one line per step. A slot is dropped (``del``) after the last step that
reads it, as eager code frees an intermediate once its node has run, so the replay holds
no more memory than it needs and NumPy reuses freed, cache-warm blocks; the slots the caller
reads afterwards (``kept``) are returned in a dict.
"""

from __future__ import annotations

import itertools
import keyword
import linecache
import weakref

import numpy as np

from .plan import BUFFERED, CALL, GUARD

_serial = itertools.count()


class _Names:
    """Globals of the generated function: functions, constants and buffers, by identity."""

    def __init__(self, namespace: dict):
        self.namespace = namespace
        self._by_id: dict = {}

    def __call__(self, value) -> str:
        key = id(value)
        name = self._by_id.get(key)
        if name is None:
            name = self._by_id[key] = f"k{len(self._by_id)}"
            self.namespace[name] = value
        return name


def _resolver_code(resolver, name) -> str:
    """Source for one patched argument (``plan._build``'s resolver): a slot or a container."""
    if isinstance(resolver, int):
        return f"s{resolver}"
    if resolver[0] == "dict":
        items = ", ".join(
            f"{name(k)}: {name(v) if constant else _resolver_code(v, name)}"
            for k, (constant, v) in resolver[1].items()
        )
        return "{" + items + "}"
    _, container, parts = resolver
    inner = [name(v) if constant else _resolver_code(v, name) for constant, v in parts]
    if container is tuple:
        return "(" + "".join(f"{p}, " for p in inner) + ")"
    if container is list:
        return "[" + ", ".join(inner) + "]"
    return f"{name(container)}(({''.join(f'{p}, ' for p in inner)}))"


def _reads(step) -> list:
    """The slots a plan step reads."""
    kind, _fn, a, b, _out, _scalar = step
    if kind in (CALL, BUFFERED):
        return list(a)
    if kind == GUARD:
        return [a]
    found: list = []
    patches, _kwargs, kw_patches = b
    for _, r in list(patches) + list(kw_patches):
        _resolver_slots(r, found)
    return found


def _resolver_slots(resolver, found: list) -> None:
    if isinstance(resolver, int):
        found.append(resolver)
    elif resolver[0] == "dict":
        for constant, v in resolver[1].values():
            if not constant:
                _resolver_slots(v, found)
    else:
        for constant, v in resolver[2]:
            if not constant:
                _resolver_slots(v, found)


def _written(step) -> list:
    out = step[4]
    if out is None or step[0] == GUARD:
        return []
    return [out] if out.__class__ is int else list(out)


def replay_function(steps: list, buffers: list, inputs: list, kept: set, guard_failure):
    """The steps (``Plan.steps``) as a function of the ``inputs`` slots' arrays (in that
    order) that returns ``{slot: value}`` for the ``kept`` slots, or None when a step cannot
    be written as source (a keyword argument that is not a Python name)."""
    namespace = {"GuardFailure": guard_failure, "asarray": np.asarray}
    name = _Names(namespace)
    last_read: dict = {}
    for index, step in enumerate(steps):
        for slot in _reads(step):
            last_read[slot] = index
    lines = [f"def replay({''.join(f's{s}, ' for s in inputs)}):"]
    for index, step in enumerate(steps):
        kind, fn, a, b, out, scalar = step
        f = name(fn)
        if kind == GUARD:
            lines.append(f"    if {f}(s{a}) != {name(b)}:")
            lines.append("        raise GuardFailure")
        else:
            if kind == BUFFERED:
                call = f"{f}({''.join(f's{s}, ' for s in a)}out={name(buffers[b])})"
            elif kind == CALL:
                call = f"{f}({', '.join(f's{s}' for s in a)})"
            else:
                patches, kwargs, kw_patches = b
                args = [name(v) for v in a]
                for i, r in patches:
                    args[i] = _resolver_code(r, name)
                keywords = [(k, name(v)) for k, v in kwargs.items()]
                keywords += [(k, _resolver_code(r, name)) for k, r in kw_patches]
                if any(not k.isidentifier() or keyword.iskeyword(k) for k, _ in keywords):
                    return None
                call = f"{f}({', '.join(args + [f'{k}={v}' for k, v in keywords])})"
            if scalar is True:  # a NumPy scalar result, kept as a 0-d array (as ``run`` does)
                call = f"asarray({call})"
            written = _written(step)
            live = [s for s in written if s in kept or last_read.get(s, -1) > index]
            if not written or not live:
                lines.append(f"    {call}")
            elif out.__class__ is int:
                lines.append(f"    s{out} = {call}")
            else:
                targets = ", ".join(f"s{s}" if s in live else "_" for s in written)
                lines.append(f"    {targets}, = {call}")
        dead = [s for s in _reads(step) if last_read[s] == index and s not in kept]
        if dead:
            lines.append(f"    del {', '.join(f's{s}' for s in dict.fromkeys(dead))}")
    lines.append(f"    return {{{', '.join(f'{s}: s{s}' for s in sorted(kept))}}}")
    source = "\n".join(lines) + "\n"
    # the source kept where tracebacks look for it: an error in a replayed call shows its line
    filename = f"<ember.compile replay {next(_serial)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    replay = namespace["replay"]
    weakref.finalize(replay, linecache.cache.pop, filename, None)  # dropped with its plan
    return replay
