"""Recording a step as a flat list of array calls.

While a step runs for recording, every array ember touches is a ``Traced`` view (a NumPy
subclass): ufuncs (operators, reductions, in-place updates) reach ``__array_ufunc__``, NumPy
functions ``__array_function__``, ember's backend module is swapped for ``TracingModule``
(creation functions too), and the methods that make views or copies are overridden. Each call
is run on plain arrays and appended to the recording with its arguments as slots (arrays made
during the step), external arrays (parameters, gradients, optimizer state, inputs) or
constants. A Python value read out of an array (``bool``, ``int``, ``float``, ``item``)
becomes a guard: replay checks that it comes out the same.

Kernels may also make plain arrays themselves (``np.empty`` as an ``out=`` buffer, a creation
function's zeros) and write into them, through any view. Such an array is adopted when a
recorded call writes into it or a tensor is made of it: its memory root becomes a slot, made
afresh at every replay from a copy of what it held then, and each view of it a slot rebuilt
over that root at the same offset and strides, so that writes through views reach the same
memory at replay as they did while recording.
"""

from __future__ import annotations

import operator

import numpy as np

from .. import _backend
from ..autograd import _watch
from .symbolic import Symbolic


class Untraceable(RuntimeError):
    """The step did something the recording cannot replay faithfully."""


class _WritingMethod:
    """A method call that changes its array in place (``fill``, ``sort``)."""

    def __init__(self, name: str, *args, **kwargs):
        self._call = operator.methodcaller(name, *args, **kwargs)

    def __call__(self, array):
        return self._call(array)


class Traced(np.ndarray):
    """An array whose operations are recorded by the active ``Recorder``."""

    _recorder = None  # set on the class while recording

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = getattr(ufunc, method) if method != "__call__" else ufunc
        return _call(fn, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _call(func, args, kwargs)

    # --- methods that are not ufuncs ------------------------------------------------------
    def _method(name):  # noqa: N805 - builds methods at class creation
        kind = _WritingMethod if name in ("fill", "sort") else operator.methodcaller

        def method(self, *args, **kwargs):
            return _call(kind(name, *args, **kwargs), (self,), {})

        method.__name__ = name
        return method

    for _name in (
        "reshape",
        "transpose",
        "swapaxes",
        "astype",
        "copy",
        "view",
        "ravel",
        "flatten",
        "squeeze",
        "argmax",
        "argmin",
        "argsort",
        "nonzero",
        "dot",
        "repeat",
        "take",
        "diagonal",
        "cumsum",
        "cumprod",
        "round",
        "clip",
        "conj",
        "fill",
        "sort",
        "__copy__",
        "__deepcopy__",
    ):
        locals()[_name] = _method(_name)
    del _name, _method

    @property
    def T(self):  # noqa: N802 - NumPy's name
        return _call(operator.attrgetter("T"), (self,), {})

    @property
    def mT(self):  # noqa: N802
        return _call(operator.attrgetter("mT"), (self,), {})

    def __getitem__(self, key):
        return _call(operator.getitem, (self, key), {})

    def __setitem__(self, key, value):
        _call(operator.setitem, (self, key, value), {})

    # --- values read into Python: guards ----------------------------------------------------
    def __bool__(self):
        return _escape(self, bool)

    def __int__(self):
        return _escape(self, int)

    def __index__(self):
        return _escape(self, operator.index)

    def __float__(self):
        return _escape(self, float, symbolic=True)

    def item(self, *args):
        return _escape(self, lambda a: a.item(*args), symbolic=True)

    def tolist(self):
        return _escape(self, lambda a: a.tolist())

    def __iter__(self):
        if Traced._recorder is not None and not Traced._recorder.broken:
            Traced._recorder.broken = "iterating over an array inside the step"
        return iter(np.ndarray.view(self, np.ndarray))


_backend.BIT_SELECTABLE_TYPES.add(Traced)  # select()'s bit path records as NumPy calls


def _call(fn, args, kwargs):
    recorder = Traced._recorder
    if recorder is None:  # a traced array that outlived its recording: plain NumPy
        return fn(*_plain(args), **_plain(kwargs))
    return recorder.call(fn, args, kwargs)


def _escape(array, convert, symbolic: bool = False):
    recorder = Traced._recorder
    if recorder is None:
        return convert(np.ndarray.view(array, np.ndarray))
    return recorder.escape(array, convert, symbolic)


# NumPy functions of shapes and dtypes alone, never of values: a plan is made for one set of
# shapes and dtypes (they are part of its key), so these run as they are, unrecorded
_OF_SHAPES_AND_DTYPES = frozenset(
    (
        "broadcast_shapes",
        "result_type",
        "promote_types",
        "can_cast",
        "issubdtype",
        "shape",
        "ndim",
        "size",
        "iscomplexobj",
        "isrealobj",
    )
)


class TracingModule:
    """Stands in for NumPy as ember's backend module while recording: every function goes
    through the recorder (ufuncs pass as they are: they dispatch through ``Traced``)."""

    def __init__(self, recorder):
        self._recorder = recorder

    def __getattr__(self, name):
        value = getattr(np, name)
        if (
            isinstance(value, np.ufunc)
            or not callable(value)
            or isinstance(value, type)
            or name in _OF_SHAPES_AND_DTYPES
        ):
            return value
        recorder = self._recorder

        def traced(*args, **kwargs):
            return recorder.call(value, args, kwargs)

        traced.__name__ = name
        return traced

    def record_call(self, function, *args):
        """``function(*args)`` recorded as one call: a kernel (ember's fused recurrent layers)
        whose own array calls a replay need not repeat one by one. ``function`` takes plain
        arrays (in lists and tuples too) and constants and returns a tuple of new arrays."""
        return self._recorder.call(function, args, {})


class TracingGenerator:
    """Stands in for the default NumPy Generator: each draw is a step, so that replay draws
    fresh numbers (and advances the generator as eager code would)."""

    def __init__(self, recorder, rng):
        self._recorder = recorder
        self._rng = rng

    def __getattr__(self, name):
        value = getattr(self._rng, name)
        if not callable(value):
            return value
        recorder = self._recorder

        def traced(*args, **kwargs):
            recorder.draws.append(len(recorder.steps))
            return recorder.call(value, args, kwargs)

        return traced


SLOT, CONST, NESTED = 0, 1, 2


class Recorder(_watch.Observer):
    """Runs intercepted calls on plain arrays and keeps them as steps."""

    def __init__(self):
        # id(memory root) -> (root, slot): plain arrays made in the step and adopted
        self.adopted: dict = {}
        # ids of the memory roots of the arrays recorded calls made or read (kept alive by
        # ``keep``): a plain view of one was made outside the recording
        self.traced_roots: set = set()
        self.steps: list = []  # ("call", fn, args_spec, kwargs_spec, out_spec) / ("guard", ...)
        self.slot_of: dict = {}  # id(traced array) -> slot number
        self.keep: list = []  # the traced arrays (their ids must stay unique)
        self.externals: list = []  # (holder, attribute) per external slot
        self.n_slots = 0
        self.escapes: list = []  # (python value, slot) for values handed to Python
        self.returned_slots: set = set()  # slots of tensors the step returns
        self.output_slots: set = set()  # slots the return value is built from (numbers too)
        self.broken = ""  # why the recording was abandoned (the step then runs as eager code)
        self.writes: list = []  # (step index, external slot) for each write into an external
        self.draws: list = []  # step indexes of random draws
        self.arguments: dict = {}  # external slot -> argument position/keyword (or None)
        # external slots whose numbers read into Python stay replay values (optimizer counts)
        self.symbolic_slots: set = set()

    # --- arrays ----------------------------------------------------------------------------
    def new_slot(self) -> int:
        self.n_slots += 1
        return self.n_slots - 1

    def register(self, array: np.ndarray, slot: int) -> Traced:
        traced = np.ndarray.view(array, Traced)
        self.slot_of[id(traced)] = slot
        self.keep.append(traced)
        root = _watch.memory_root(array)
        if id(root) not in self.adopted:
            self.traced_roots.add(id(root))
        return traced

    def adopt(self, value: np.ndarray) -> Traced:
        """The traced stand-in of ``value``, a plain array made in the step: its memory root
        becomes a slot (made at every replay from a copy of what it holds now) and ``value``
        a view of that slot at the same offset and strides."""
        root = _watch.memory_root(value)
        entry = self.adopted.get(id(root))
        if entry is None:
            if id(root) in self.traced_roots:
                raise Untraceable("a kernel used a recorded array's memory outside the recording")
            if not isinstance(root, np.ndarray):
                raise Untraceable("an array over a foreign buffer reached a traced op")
            snapshot = np.array(root, order="K", copy=True)
            if _fresh(snapshot).strides != root.strides:
                raise Untraceable("a kernel made an array whose layout a copy cannot repeat")
            slot = self.new_slot()
            self.steps.append(("call", _fresh, [(CONST, snapshot)], {}, (slot, False)))
            entry = self.adopted[id(root)] = (self.register(root, slot), slot)
        traced_root, root_slot = entry
        if value is root:
            return traced_root
        offset = value.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        geometry = (value.shape, value.dtype, offset, value.strides)
        try:
            _view_into(root, geometry)
        except (TypeError, ValueError):
            raise Untraceable(
                "a kernel made a view that cannot be rebuilt over its buffer"
            ) from None
        slot = self.new_slot()
        self.steps.append(
            ("call", _view_into, [(SLOT, root_slot), (CONST, geometry)], {}, (slot, False))
        )
        return self.register(value, slot)

    def external(self, holder, attribute: str, argument=None) -> None:
        """Make ``holder.<attribute>`` (an array) an input read afresh at every replay; for a
        tensor argument, ``argument`` (position or keyword) says where to find it then."""
        array = getattr(holder, attribute)
        if id(array) in self.slot_of:
            return
        if isinstance(array, Traced):  # left over from an earlier recording
            array = np.ndarray.view(array, np.ndarray)
        slot = self.new_slot()
        self.externals.append((slot, holder, attribute, array))
        self.arguments[slot] = argument
        setattr(holder, attribute, self.register(array, slot))

    def spec(self, value):
        if isinstance(value, Symbolic):
            return (SLOT, value.slot) if value._recorder is self else (CONST, value.value)
        if isinstance(value, Traced):
            slot = self.slot_of.get(id(value))
            if slot is None:
                raise Untraceable("an array made outside the recording reached a traced op")
            return (SLOT, slot)
        if isinstance(value, np.ndarray):
            if id(_watch.memory_root(value)) in self.adopted:
                return (SLOT, self.slot_of[id(self.adopt(value))])
            if value.size > 1:
                # an array from before the step: it could change between calls unseen
                raise Untraceable(
                    "a tensor the step reaches other than through its arguments, closure, "
                    "globals, modules or optimizers"
                )
            return (CONST, value.copy())  # a scalar made in the step from Python values
        if isinstance(value, (tuple, list)):
            parts = [self.spec(v) for v in value]
            if all(kind == CONST for kind, _ in parts):
                return (CONST, value)
            return (NESTED, (type(value), parts))
        if isinstance(value, dict):
            parts = {k: self.spec(v) for k, v in value.items()}
            if all(kind == CONST for kind, _ in parts.values()):
                return (CONST, value)
            return (NESTED, (dict, parts))
        return (CONST, value)

    def call(self, fn, args, kwargs):
        if not self.broken:
            try:
                for target in _write_targets(fn, args, kwargs):
                    if type(target) is np.ndarray:  # a kernel's own buffer: now recorded
                        self.adopt(target)
                arg_specs = [self.spec(a) for a in args]
                kw_specs = {k: self.spec(v) for k, v in kwargs.items()}
            except Untraceable as why:
                self.broken = str(why)
        plain_args, plain_kwargs = _plain(args), _plain(kwargs)
        if not self.broken:
            self._note_write(fn, plain_args, plain_kwargs)
        out = fn(*plain_args, **plain_kwargs)
        if self.broken:
            return out
        # a Python answer: replay checks it. NumPy's float64 scalar (a full float64 sum) is a
        # float too, but of arrays it is an array result, kept 0-d as float32's is, so that a
        # float64 loss does not become a guard that fails whenever the loss changes
        if (
            out.__class__ in (bool, int, float)
            or isinstance(out, np.bool_)
            or (isinstance(out, float) and _has_symbolic(args, kwargs))
        ):
            if fn in _STRUCTURAL:  # about memory layout, the same for the same shapes
                return out
            slot = self.new_slot()  # ``None``: a Python number, never a reusable buffer
            self.steps.append(("call", fn, arg_specs, kw_specs, (slot, None)))
            if not isinstance(out, (bool, np.bool_)) and _has_symbolic(args, kwargs):
                return Symbolic(self, slot, out)  # arithmetic on a replay value
            self.steps.append(("guard", _same, slot, out))
            return out
        try:
            out_spec, result = self._outputs(out)
        except Untraceable as why:
            self.broken = str(why)
            return out
        self.steps.append(("call", fn, arg_specs, kw_specs, out_spec))
        if self.symbolic_slots and out_spec[0].__class__ is int and out.size == 1:
            # a count updated out of place (``step.add_(1)``) is a count still
            read = set()
            for spec in list(arg_specs) + list(kw_specs.values()):
                slots_in(spec, read)
            if read & self.symbolic_slots:
                self.symbolic_slots.add(out_spec[0])
        return result

    def tensor_created(self, t) -> None:
        """(As a watch observer) a tensor made by the step around a plain array (a creation
        function's, or a kernel's own buffer): the array is adopted, the tensor traced."""
        data = t._data
        if type(data) is np.ndarray and data.size and not self.broken:
            try:
                t._data = self.adopt(data)
            except Untraceable as why:
                self.broken = str(why)

    def _note_write(self, fn, args, kwargs) -> None:
        """Remember the steps that change external arrays (parameters, gradients, state): a
        replay that fails a guard after one of them must undo it before running eagerly."""
        for target in _write_targets(fn, args, kwargs):
            if not isinstance(target, np.ndarray):
                continue
            for slot, _holder, _attr, original in self.externals:
                if np.may_share_memory(target, original):
                    self.writes.append((len(self.steps), slot))

    def _outputs(self, out):
        if isinstance(out, np.ndarray) or isinstance(out, np.generic):
            array = np.asarray(out) if isinstance(out, np.generic) else out
            slot = self.new_slot()
            traced = self.register(array, slot)
            # NumPy's 0-d results come back as scalars: keep them 0-d arrays (ember wraps
            # them anyway), except for ops that hand Python a number
            return (slot, isinstance(out, np.generic)), traced
        if isinstance(out, tuple) and all(isinstance(o, np.ndarray) for o in out):
            slots = [self.new_slot() for _ in out]
            return (tuple(slots), False), tuple(self.register(o, s) for o, s in zip(out, slots))
        if out is None:
            return (None, False), None
        raise Untraceable(f"a traced call returned {type(out).__name__}")

    def escape(self, array, convert, symbolic: bool = False):
        value = convert(np.ndarray.view(array, np.ndarray))
        slot = self.slot_of.get(id(array))
        if slot is None and not self.broken:
            self.broken = "an array made outside the recording was read into Python"
        if self.broken:
            return value
        if symbolic and slot in self.symbolic_slots and isinstance(value, (int, float)):
            if not isinstance(value, bool):  # a count the replay reads afresh, not a guard
                out = self.new_slot()
                self.steps.append(("call", convert, [(SLOT, slot)], {}, (out, None)))
                return Symbolic(self, out, value)
        self.escapes.append((value, len(self.steps)))
        self.steps.append(("guard", convert, slot, value))
        return value

    def read_symbolic(self, number: Symbolic, convert):
        """The concrete value of a symbolic number, guarded like any value read out."""
        value = convert(number.value)
        self.steps.append(("guard", convert, number.slot, value))
        return value


def _same(value):
    return value


def _fresh(snapshot: np.ndarray) -> np.ndarray:
    """An adopted buffer made anew: a copy of what it held when adopted, in its layout."""
    return np.array(snapshot, order="K", copy=True)


def _view_into(root: np.ndarray, geometry: tuple) -> np.ndarray:
    """The view of ``root`` with ``geometry`` (shape, dtype, byte offset, strides)."""
    shape, dtype, offset, strides = geometry
    return np.ndarray(shape, dtype, buffer=root, offset=offset, strides=strides)


def _write_targets(fn, args, kwargs) -> list:
    """The arrays a call writes into: ``out=``, and the first argument of in-place writers."""
    targets = kwargs.get("out")
    targets = list(targets) if isinstance(targets, tuple) else [targets]
    if fn in _WRITERS or isinstance(fn, _WritingMethod) or getattr(fn, "__name__", "") == "at":
        targets.append(args[0])
    return [t for t in targets if isinstance(t, np.ndarray)]


_STRUCTURAL = {np.may_share_memory, np.shares_memory}
_WRITERS = {operator.setitem, np.copyto, np.put_along_axis, np.put, np.place, np.putmask}


def untrace(t) -> None:
    """Give a tensor that outlives the recording its plain array back."""
    if isinstance(t._data, Traced):
        t._data = np.ndarray.view(t._data, np.ndarray)


def slots_in(spec, found: set) -> None:
    """Add the slots an argument spec reads to ``found``."""
    kind, payload = spec
    if kind == SLOT:
        found.add(payload)
    elif kind == NESTED:
        for part in payload[1].values() if payload[0] is dict else payload[1]:
            slots_in(part, found)


def _has_symbolic(args, kwargs) -> bool:
    return any(isinstance(a, Symbolic) for a in args) or any(
        isinstance(v, Symbolic) for v in kwargs.values()
    )


def _plain(value):
    if isinstance(value, Traced):
        return np.ndarray.view(value, np.ndarray)
    if isinstance(value, Symbolic):
        return value.value
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
