"""Python numbers read from optimizer state while recording, kept as values of the replay.

Adam reads its step count into Python (``state["step"].item()``) and folds it into the
bias corrections, ``lr / (1 - beta1**step)``, that it hands NumPy as scalars. A plain guard
would stop every replay, since the count changes each step. A ``Symbolic`` stands for such a
number: arithmetic on it and NumPy calls that take it are recorded like array calls, so that
a replay computes the corrections from the count it reads then. Anything that needs the
concrete value in Python (``float()``, comparisons, ``math.sqrt``, formatting) gets it
through a guard, as any value read out of an array does. It is deliberately not a ``float``
subclass: C code reads a float's value without asking, which would freeze it unseen.
"""

from __future__ import annotations

import math
import operator


class Symbolic:
    """A number computed during recording whose value is a replay slot."""

    __slots__ = ("_recorder", "slot", "value")

    def __init__(self, recorder, slot: int, value):
        self._recorder = recorder
        self.slot = slot
        self.value = value

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = getattr(ufunc, method) if method != "__call__" else ufunc
        return _call(fn, inputs, kwargs)

    def _concrete(self, convert):
        from .trace import Traced

        if Traced._recorder is not self._recorder:  # the recording is over
            return convert(self.value)
        return self._recorder.read_symbolic(self, convert)

    # --- values read into Python: guards ----------------------------------------------------
    def __float__(self) -> float:
        return self._concrete(float)

    def __int__(self) -> int:
        return self._concrete(int)

    def __index__(self) -> int:
        return self._concrete(operator.index)

    def __bool__(self) -> bool:
        return self._concrete(bool)

    def __hash__(self) -> int:
        return hash(self._concrete(_same))

    def __repr__(self) -> str:
        return repr(self._concrete(_same))

    def __format__(self, spec: str) -> str:
        return format(self._concrete(_same), spec)

    def __round__(self, ndigits=None):
        return self._concrete(lambda v: round(v, ndigits))

    def __trunc__(self):
        return self._concrete(math.trunc)

    def __floor__(self):
        return self._concrete(math.floor)

    def __ceil__(self):
        return self._concrete(math.ceil)


def _same(value):
    return value


def _binary(fn):
    def forward(self, other):
        return _apply(fn, (self, other))

    def reflected(self, other):
        return _apply(fn, (other, self))

    return forward, reflected


def _unary(fn):
    def method(self):
        return _apply(fn, (self,))

    return method


def _compare(fn):
    def method(self, other):
        return _apply(fn, (self, other))  # a bool: the recorder guards it

    return method


def _apply(fn, args):
    return _call(fn, args, {})


def _call(fn, args, kwargs):
    from .trace import _call as record_call  # trace imports this module

    return record_call(fn, args, kwargs)


for _name, _fn in (
    ("add", operator.add),
    ("sub", operator.sub),
    ("mul", operator.mul),
    ("truediv", operator.truediv),
    ("floordiv", operator.floordiv),
    ("mod", operator.mod),
    ("pow", operator.pow),
):
    _forward, _reflected = _binary(_fn)
    setattr(Symbolic, f"__{_name}__", _forward)
    setattr(Symbolic, f"__r{_name}__", _reflected)
for _name, _fn in (("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs)):
    setattr(Symbolic, f"__{_name}__", _unary(_fn))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(Symbolic, f"__{_name}__", _compare(getattr(operator, _name)))
del _name, _fn, _forward, _reflected
