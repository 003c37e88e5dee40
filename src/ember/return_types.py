"""``ember.return_types``: the named tuples ops return (``torch.return_types``), printed as
torch prints them::

    >>> ember.tensor([[1.0, 3.0]]).max(1)
    ember.return_types.max(
    values=tensor([3.]),
    indices=tensor([1]))
"""

from __future__ import annotations

from collections import namedtuple


def _repr(self) -> str:
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"ember.return_types.{type(self).__name__}(\n{fields})"


def define(name: str, fields) -> type:
    """The named-tuple type ``ember.return_types.<name>`` with ``fields`` (made once; pickles
    by its name here)."""
    known = globals().get(name)
    if isinstance(known, type) and issubclass(known, tuple):
        return known
    base = namedtuple(name, fields)
    cls = type(name, (base,), {"__slots__": (), "__repr__": _repr, "__str__": _repr})
    cls.__module__ = __name__
    cls.__qualname__ = name
    globals()[name] = cls
    return cls


for _name in ("max", "min", "sort", "topk", "kthvalue", "mode", "median", "nanmedian"):
    define(_name, ["values", "indices"])
for _name in ("cummax", "cummin"):
    define(_name, ["values", "indices"])
define("aminmax", ["min", "max"])
define("histogram", ["hist", "bin_edges"])
define("histogramdd", ["hist", "bin_edges"])
define("frexp", ["mantissa", "exponent"])
del _name
