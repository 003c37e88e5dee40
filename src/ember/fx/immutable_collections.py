"""The list and dict types a Node's ``args`` and ``kwargs`` are stored in.

A Node tracks who uses whom; editing its arguments in place would leave that bookkeeping stale,
so the containers refuse mutation and point at the supported way: assign a new value.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["immutable_list", "immutable_dict"]

_HOW_TO_EDIT = (
    "If you are attempting to modify the kwargs or args of a ember.fx.Node object,\n"
    "instead create a new copy of it and assign the copy to the node:\n\n"
    "    new_args = ...  # copy and mutate args\n"
    "    node.args = new_args"
)


def _refuse_mutation(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"{type(self).__name__!r} object does not support mutation. {_HOW_TO_EDIT}")


class immutable_list(list):  # noqa: N801 - torch's name
    """A list that cannot be changed in place (a Node's list arguments).

    Example::
        >>> lst = immutable_list([1, 2])
        >>> lst + [3]
        [1, 2, 3]
    """

    __delitem__ = _refuse_mutation
    __iadd__ = _refuse_mutation
    __imul__ = _refuse_mutation
    __setitem__ = _refuse_mutation
    append = _refuse_mutation
    clear = _refuse_mutation
    extend = _refuse_mutation
    insert = _refuse_mutation
    pop = _refuse_mutation
    remove = _refuse_mutation
    reverse = _refuse_mutation
    sort = _refuse_mutation

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self):
        return (type(self), (tuple(self),))


class immutable_dict(dict):  # noqa: N801 - torch's name
    """A dict that cannot be changed in place (a Node's keyword arguments).

    Example::
        >>> d = immutable_dict({"dim": 0})
        >>> {**d, "keepdim": True}
        {'dim': 0, 'keepdim': True}
    """

    __delitem__ = _refuse_mutation
    __ior__ = _refuse_mutation
    __setitem__ = _refuse_mutation
    clear = _refuse_mutation
    pop = _refuse_mutation
    popitem = _refuse_mutation
    setdefault = _refuse_mutation
    update = _refuse_mutation  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self):
        return (type(self), (tuple(self.items()),))
