"""A factory's size argument read as torch's argument parser reads an int list.

``zeros(2, 3)``, ``zeros((2, 3))``, ``zeros([2, 3])`` and ``zeros(size=(2, 3))`` give (2, 3);
an int is anything with ``__index__`` (a NumPy integer, a 0-d integer tensor) but not a bool
where the parser decides what the argument is (a lone value, a list's first element). Anything
else raises torch's TypeError, a negative size torch's RuntimeError.

Example::
    >>> parse_size("ones", (2.5,))
    Traceback (most recent call last):
    TypeError: ones(): argument 'size' (position 1) must be tuple of ints, not float
"""

from __future__ import annotations

import operator

from . import _dtype as dt
from ._tensor import Tensor

_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python


def parse_size(
    op: str, listed: tuple, size=None, *, varargs: bool = True, position: int = 1
) -> tuple:
    """The shape in ``listed`` (the positional arguments) or ``size`` (the keyword).
    ``varargs``: the factory takes the size as separate ints too (``ones(2, 3)``; ``full``
    does not); ``position``: where a lone positional size sits, for the message."""
    if size is not None:
        if listed:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        where, items = "", size
        if not isinstance(size, (tuple, list)) or (size and not _is_int(size[0], True)):
            raise TypeError(f"{op}(): argument 'size' must be tuple of ints, not {_name(size)}")
    elif len(listed) == 1:
        where, value = f" (position {position})", listed[0]
        if isinstance(value, (tuple, list)):
            items = value
            if items and not _is_int(items[0], True):
                raise TypeError(
                    f"{op}(): argument 'size'{where} must be tuple of ints, but found element "
                    f"of type {_name(items[0])} at pos 0"
                )
        elif varargs and _is_int(value, True):
            items = listed
        else:
            raise TypeError(
                f"{op}(): argument 'size'{where} must be tuple of ints, not {_name(value)}"
            )
    else:  # no size at all is a 0-d shape here (torch refuses; ember's callers splat shapes)
        items = listed
        if items and not (varargs and _is_int(items[0], True)):
            raise TypeError(f"{op}() takes 1 positional argument but {len(items)} were given")
    for i, item in enumerate(items[1:], start=2):
        if not _is_int(item, False):
            raise TypeError(
                f"{op}(): argument 'size' failed to unpack the object at pos {i} with error "
                f'"type must be tuple of ints,but got {_name(item)}"'
            )
    shape = tuple(operator.index(s) for s in items)
    for s in shape:
        if s < 0:
            if op == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {list(shape)}"
            )
    return shape


def _is_int(value, refuse_bool: bool) -> bool:
    if isinstance(value, Tensor):  # only a 0-d integer tensor reads as an int
        return value.dim() == 0 and value.dtype.category == dt.INT
    if refuse_bool and isinstance(value, bool):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _name(value) -> str:
    """The type's name as CPython's ``tp_name`` spells it (``float``, ``numpy.float64``)."""
    kind = type(value)
    if kind.__flags__ & _HEAP_TYPE or kind.__module__ == "builtins":
        return kind.__name__
    return f"{kind.__module__}.{kind.__qualname__}"
