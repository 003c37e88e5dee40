"""``ember.torch_version.TorchVersion``: a version string that compares as a version
(``ember.__version__ >= "0.1"``), with strings, tuples and versions, as ``torch.__version__``.
Parsing is ``packaging.version`` (PEP 440; already installed with matplotlib)."""

from __future__ import annotations

from collections.abc import Iterable


def _parse(value):
    from packaging.version import InvalidVersion, Version

    if isinstance(value, Version):
        return value
    if isinstance(value, str):
        return Version(value)
    if isinstance(value, Iterable):
        return Version(".".join(str(item) for item in value))
    raise InvalidVersion(value)


_SYMBOLS = {"__gt__": ">", "__ge__": ">=", "__lt__": "<", "__le__": "<=", "__eq__": "=="}


class TorchVersion(str):
    """A ``str`` whose comparisons parse both sides as versions (``"0.10" > "0.9"``)."""

    def _compare(self, other, method: str) -> bool:
        from packaging.version import InvalidVersion

        try:
            theirs = _parse(other)
        except InvalidVersion:
            names = f"'{type(self).__name__}' and '{type(other).__name__}'"
            raise TypeError(
                f"'{_SYMBOLS[method]}' not supported between instances of {names}"
            ) from None
        return getattr(_parse(str(self)), method)(theirs)

    def __gt__(self, other) -> bool:
        return self._compare(other, "__gt__")

    def __ge__(self, other) -> bool:
        return self._compare(other, "__ge__")

    def __lt__(self, other) -> bool:
        return self._compare(other, "__lt__")

    def __le__(self, other) -> bool:
        return self._compare(other, "__le__")

    def __eq__(self, other) -> bool:
        try:
            return self._compare(other, "__eq__")
        except TypeError:
            return False

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__


__all__ = ["TorchVersion"]
