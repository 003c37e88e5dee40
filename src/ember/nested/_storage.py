"""What a nested tensor keeps in ``_data``: nothing an array kernel can use.

A nested tensor's numbers live in its dense ``_inner`` tensor; ``_data`` holds this object so
that a dense op reached with a nested tensor (one without a nested kernel) raises
``NotImplementedError`` naming the op, as PyTorch does, instead of failing inside NumPy.
"""

from __future__ import annotations

from ._errors import calling_op, unsupported


class _Flags:
    __slots__ = ()
    writeable = False
    c_contiguous = False
    f_contiguous = False


class NestedStorage:
    """The ``_data`` of a nested tensor: every array entry point raises a clear error."""

    __slots__ = ("layout",)
    base = None
    flags = _Flags()

    def __init__(self, layout: str):
        self.layout = layout

    def _fail(self, name: str | None = None):
        raise unsupported(calling_op(name or "this operation"), str.__str__(self.layout))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self._fail(ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        self._fail(func.__name__)

    def __array__(self, dtype=None, copy=None):
        self._fail("conversion to an array")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        self._fail(name)

    def __getitem__(self, key):
        self._fail("indexing")

    def __setitem__(self, key, value):
        self._fail("index assignment")

    def __iter__(self):
        self._fail("iteration")

    def __len__(self):
        self._fail("len")


def _operator(name: str):
    def op(self, *args):
        self._fail(name.strip("_"))

    return op


for _name in (
    "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__ "
    "__pow__ __rpow__ __mod__ __neg__ __abs__ __lt__ __le__ __gt__ __ge__ __and__ __or__ "
    "__xor__ __invert__ __iadd__ __isub__ __imul__ __itruediv__ __matmul__ __rmatmul__"
).split():
    setattr(NestedStorage, _name, _operator(_name))


class NestedKernels:
    """What ``array_module`` answers for a nested tensor's data: clear errors only."""

    __name__ = "ember.nested kernels"

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise unsupported(calling_op(name), "nested")


KERNELS = NestedKernels()
