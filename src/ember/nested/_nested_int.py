"""The size of a jagged nested tensor's ragged dimension: a symbolic ``j1``, ``j2``, ...

PyTorch gives each ragged structure (each offsets tensor, or lengths tensor when there are
holes) one nested int, numbered in order of creation. Nested tensors sharing the structure
(the results of pointwise ops, ``nested_tensor_from_jagged(new_values, nt.offsets())``) show
the same ``jN`` and may be combined; two structures with equal lengths but different offsets
tensors may not, as in PyTorch.
"""

from __future__ import annotations

import itertools
import threading
import weakref


class NestedInt:
    """A ragged dimension's size: equal only to itself, printed as ``j1`` (``3*j1`` scaled).

    Example::
        >>> parts = [ember.ones(2, 3), ember.ones(4, 3)]
        >>> nt = ember.nested.nested_tensor(parts, layout=ember.jagged)
        >>> nt.size(1) == nt.shape[1], nt.size(1) == 2
        (True, False)
    """

    __slots__ = ("_id", "_coeff")

    def __init__(self, ident: int, coeff: int = 1):
        self._id = ident
        self._coeff = coeff

    def __repr__(self) -> str:
        return f"j{self._id}" if self._coeff == 1 else f"{self._coeff}*j{self._id}"

    __str__ = __repr__

    def __eq__(self, other):
        if isinstance(other, NestedInt):
            return self._id == other._id and self._coeff == other._coeff
        if isinstance(other, int):
            return False
        return NotImplemented

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(("nested int", self._id, self._coeff))

    def __mul__(self, other):
        if isinstance(other, int) and not isinstance(other, bool):
            return NestedInt(self._id, self._coeff * other)
        return NotImplemented

    __rmul__ = __mul__

    # a ragged size is at least 2 (PyTorch's convention), so some comparisons are decided
    def __ge__(self, other):
        if isinstance(other, int) and other <= 2:
            return True
        raise ValueError("ge: relation is indeterminate")

    def __gt__(self, other):
        if isinstance(other, int) and other < 2:
            return True
        raise ValueError("gt: relation is indeterminate")

    def __lt__(self, other):
        if isinstance(other, int) and other <= 2:
            return False
        raise ValueError("lt: relation is indeterminate")

    def __le__(self, other):
        if isinstance(other, int) and other < 2:
            return False
        raise ValueError("le: relation is indeterminate")

    def __int__(self):
        raise RuntimeError(
            f"{self!r} is the symbolic size of a ragged dimension and has no single integer "
            "value; use nt.offsets().diff() (or nt.lengths()) for the lengths"
        )

    __index__ = __int__


_lock = threading.Lock()
_counter = itertools.count(1)
_by_source: dict[int, tuple] = {}  # id(offsets or lengths tensor) -> (weakref, NestedInt)


def nested_int_for(source) -> NestedInt:
    """The nested int of the ragged structure that ``source`` (offsets or lengths) describes."""
    key = id(source)
    with _lock:
        entry = _by_source.get(key)
        if entry is not None and entry[0]() is source:
            return entry[1]
        size = NestedInt(next(_counter))
        _by_source[key] = (weakref.ref(source, lambda _, key=key: _by_source.pop(key, None)), size)
        return size
