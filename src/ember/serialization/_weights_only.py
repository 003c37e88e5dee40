"""``weights_only=True``: ember's own restricted unpickler, following torch's.

It runs only the opcodes torch's weights-only unpickler runs (protocol 2: what ``torch.save``
writes), looks up only the globals torch allows (``_rebuild.torch_globals``) plus those a user
allowlists, calls only those, appends only to lists, sets items only on dicts, and BUILDs only
OrderedDicts and allowlisted classes: never a tensor. Every refusal is torch's
``UnpicklingError`` with torch's message.

Where torch would let a small file grow without bound through an allowed global, ember refuses:
``bytearray(n)`` larger than the pickle, ``_codecs.encode`` with a codec other than latin-1
(what pickle uses for bytes; nested 'hex' encodes double per level), containers built from
anything but the pickle's own lists (``set()`` of a stride-0 tensor of 2**40 elements), and
``torch.Tensor(sizes)``.
"""

from __future__ import annotations

import codecs
import pickle
import struct
import warnings
from collections import Counter, OrderedDict

from .. import _backend, _legacy
from .._tensor import Size, Tensor
from ..nn.parameter import Parameter
from . import _rebuild, _safe_globals
from ._errors import SerializationError

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `ember.load` with `weights_only` set to `False` will "
    "likely succeed, but it can result in arbitrary code execution. Do it only if you got the "
    "file from a trusted source."
)
_DOCS_MESSAGE = (
    "\n\nCheck the documentation of torch.load to learn more about types accepted by default with "
    "weights_only https://pytorch.org/docs/stable/generated/torch.load.html."
)

# modules never allowed, even allowlisted by the user (as in torch)
_BLOCKED_MODULES = frozenset({"sys", "os", "posix", "nt"})

# Python 2's names for what a protocol-2 pickle may name (the renames torch applies)
_PY2_MODULES = {
    "__builtin__": "builtins",
    "copy_reg": "copyreg",
    "Queue": "queue",
    "repr": "reprlib",
    "_abcoll": "collections.abc",
    "UserDict": "collections",
    "UserList": "collections",
    "UserString": "collections",
    "whichdb": "dbm",
    "StringIO": "io",
    "cStringIO": "io",
}
_PY2_NAMES = {
    ("__builtin__", "xrange"): ("builtins", "range"),
    ("__builtin__", "reduce"): ("functools", "reduce"),
    ("__builtin__", "intern"): ("sys", "intern"),
    ("__builtin__", "unichr"): ("builtins", "chr"),
    ("__builtin__", "unicode"): ("builtins", "str"),
    ("__builtin__", "long"): ("builtins", "int"),
    ("__builtin__", "basestring"): ("builtins", "str"),
    ("itertools", "izip"): ("builtins", "zip"),
    ("itertools", "imap"): ("builtins", "map"),
    ("itertools", "ifilter"): ("builtins", "filter"),
    ("itertools", "ifilterfalse"): ("itertools", "filterfalse"),
    ("itertools", "izip_longest"): ("itertools", "zip_longest"),
    ("UserDict", "IterableUserDict"): ("collections", "UserDict"),
    ("UserDict", "UserDict"): ("collections", "UserDict"),
    ("UserList", "UserList"): ("collections", "UserList"),
    ("UserString", "UserString"): ("collections", "UserString"),
    ("exceptions", "StandardError"): ("builtins", "Exception"),
}


def allowed_global_names() -> set:
    """The dotted names a weights-only load allows by default: exactly torch's."""
    return set(_rebuild.torch_globals())


class Refusal(pickle.UnpicklingError):
    """What the weights-only unpickler refuses; ``load`` words it as torch does."""


def refusal_message(detail: str) -> str:
    """torch's wording around a weights-only refusal (``torch.load``'s ``_get_wo_message``)."""
    if "was not an allowed global by default." in detail:
        return (
            "Weights only load failed. This file can still be loaded, to do so you have two "
            "options, \033[1mdo those steps only if you trust the source of the checkpoint"
            f"\033[0m. \n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with "
            "`weights_only=True` please check the recommended steps in the following error "
            "message.\n\tWeightsUnpickler error: " + detail + _DOCS_MESSAGE
        )
    message = f"Weights only load failed. {UNSAFE_MESSAGE}\n"
    if "is blocked" not in detail:
        message += (
            "Please file an issue with the following so that we can make `weights_only=True` "
            "compatible with your use case: WeightsUnpickler error: "
        )
    return message + "\n\n" + detail + _DOCS_MESSAGE


def as_torch_refusal(exc: Refusal) -> pickle.UnpicklingError:
    """The refusal as torch raises it: a plain UnpicklingError with torch's message."""
    return pickle.UnpicklingError(refusal_message(str(exc)))


# --- allowed calls, bounded -----------------------------------------------------------------
def _only(name: str, args: tuple, kinds: tuple, most: int = 1) -> None:
    if len(args) > most or any(not isinstance(a, kinds) for a in args[:1]):
        got = ", ".join(type(a).__name__ for a in args)
        raise Refusal(
            f"{name}({got}) is refused: weights-only loads build {name} from the pickle's own "
            f"{' or '.join(k.__name__ for k in kinds)} only"
        )


class _Guards:
    """The allowed globals that take data, each checked before it is called."""

    def __init__(self, pickle_size: int):
        self.pickle_size = pickle_size
        # id of an allowed global -> the callable that REDUCE runs for it
        self.calls = {
            id(set): self.set,
            id(Counter): self.counter,
            id(OrderedDict): self.ordered_dict,
            id(bytearray): self.bytearray,
            id(codecs.encode): self.encode,
            id(Size): self.size,
            id(_backend.device): self.device,
            id(Parameter): self.parameter,
            id(Tensor): self.empty_tensor(Tensor),
        }
        legacy_classes = list(_legacy.CPU_TYPES.values()) + list(_legacy.CUDA_TYPES.values())
        for cls in legacy_classes:
            self.calls[id(cls)] = self.empty_tensor(cls)
        # ember's classes that NEWOBJ builds through these calls (__new__ alone leaves them empty)
        self.built_by_init = {id(Size), id(_backend.device), id(Tensor)}
        self.built_by_init.update(id(cls) for cls in legacy_classes)

    def set(self, *args):
        _only("set", args, (list, tuple))
        return set(*args)

    def counter(self, *args):
        _only("collections.Counter", args, (dict, list, tuple))
        return Counter(*args)

    def ordered_dict(self, *args):
        _only("collections.OrderedDict", args, (dict, list, tuple))
        if args and not isinstance(args[0], dict):
            # dict() turns each item into a list first: an item must be a pair already
            if not all(isinstance(item, (list, tuple)) for item in args[0]):
                raise Refusal("collections.OrderedDict is built from (key, value) pairs only")
        return OrderedDict(*args)

    def bytearray(self, *args):
        if len(args) == 1 and type(args[0]) is int:
            if not 0 <= args[0] <= self.pickle_size:
                raise Refusal(
                    f"bytearray({args[0]}) is refused: it would allocate more bytes than the "
                    f"{self.pickle_size}-byte pickle holds"
                )
            return bytearray(args[0])
        _only("bytearray", args, (str, bytes, bytearray, list, tuple), most=2)
        return bytearray(*args)

    def encode(self, text, encoding="utf-8", *rest):
        # pickle writes bytes as _codecs.encode(text, 'latin1'); other codecs can grow
        if not isinstance(text, str) or not isinstance(encoding, str) or rest:
            raise Refusal("_codecs.encode is allowed on a string with the latin-1 codec only")
        try:
            codec = codecs.lookup(encoding).name
        except LookupError:
            codec = encoding
        if codec != "iso8859-1":
            raise Refusal(
                f"_codecs.encode with codec {encoding!r} is refused (pickle encodes bytes as "
                "latin-1)"
            )
        return codecs.encode(text, encoding)

    def size(self, *args):
        _only("torch.Size", args, (list, tuple))
        if args and not all(type(s) is int for s in args[0]):
            raise SerializationError(f"ember.load: torch.Size of {args[0]!r}")
        return Size(*args)

    def device(self, *args):
        _only("torch.device", args, (str, _backend.device), most=2)
        return _backend.device(*args)

    def parameter(self, *args):
        _only("torch.nn.Parameter", args, (Tensor,), most=2)
        return Parameter(*args)

    def empty_tensor(self, cls):
        def build(*args):
            if args:
                raise Refusal(
                    f"{cls!r} called with {len(args)} arguments is refused: it would allocate "
                    "memory the file does not hold"
                )
            return cls(0)  # torch.Tensor(): an empty tensor

        return build


# --- the unpickler ------------------------------------------------------------------------------
class WeightsOnlyUnpickler:
    """Runs a protocol-2 pickle with torch's weights-only rules (see the module docstring).

    ``persistent_load(pid)`` resolves ``("storage", ...)`` ids; ``encoding`` decodes Python 2
    byte strings (SHORT_BINSTRING), as ``torch.load``'s does.
    """

    def __init__(self, file, persistent_load, *, encoding: str = "utf-8", pickle_size: int = 0):
        self.read, self.readline = file.read, file.readline
        self.persistent_load = persistent_load
        self.encoding = encoding
        self.memo: dict = {}
        self.allowed = _rebuild.torch_globals()
        self.user = _safe_globals.user_globals()
        allowed_objects = list(self.allowed.values()) + list(self.user.values())
        self.allowed_ids = {id(obj) for obj in allowed_objects}
        self.allowed_types = {id(obj) for obj in allowed_objects if isinstance(obj, type)}
        self.user_ids = {id(obj) for obj in self.user.values()}
        guards = _Guards(pickle_size)
        self.calls, self.built_by_init = guards.calls, guards.built_by_init

    # the stack
    def _pop_mark(self) -> list:
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def load(self):
        self.metastack: list = []
        self.stack: list = []
        ops = _OPS
        while True:
            key = self.read(1)
            if not key:
                raise EOFError("the pickle ends before its STOP opcode")
            op = ops.get(key[0])
            if op is None:
                raise Refusal(f"Unsupported operand {key[0]}")
            if op is _stop:
                return self.stack.pop()
            op(self)

    # globals
    def _read_global(self) -> tuple[str, str]:
        module = self.readline()[:-1].decode("utf-8")
        name = self.readline()[:-1].decode("utf-8")
        if (module, name) in _PY2_NAMES:
            return _PY2_NAMES[(module, name)]
        return _PY2_MODULES.get(module, module), name

    def find_global(self):
        module, name = self._read_global()
        full = f"{module}.{name}"
        if module in _BLOCKED_MODULES:
            raise Refusal(
                f"Trying to load unsupported GLOBAL {full} whose module {module} is blocked."
            )
        if full in self.allowed:
            obj = self.allowed[full]
            if isinstance(obj, _rebuild.Missing) and not full.startswith("torch._utils."):
                obj()  # a dtype or class ember lacks: say so now
            return obj
        if full in self.user:
            return self.user[full]
        if full.startswith("builtins."):
            full = full[len("builtins.") :]
        raise Refusal(
            f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
            f"`ember.serialization.add_safe_globals([{full}])` or the "
            f"`ember.serialization.safe_globals([{full}])` context manager to allowlist this "
            "global if you trust this class/function."
        )

    def call(self, func, args: tuple):
        guard = self.calls.get(id(func))
        if guard is not None and id(func) not in self.user_ids:
            return guard(*args)
        return func(*args)

    def new_object(self, cls, args: tuple):
        if cls is Parameter:
            return self.calls[id(Parameter)](*args)
        if id(cls) not in self.allowed_types:
            raise Refusal(
                "Can only create new object for nn.Parameter or classes allowlisted via "
                f"`add_safe_globals` but got {cls}"
            )
        if id(cls) in self.built_by_init and id(cls) not in self.user_ids:
            return self.calls[id(cls)](*args)
        return cls.__new__(cls, *args)

    def build(self, inst, state) -> None:
        if isinstance(inst, Tensor):
            raise Refusal(
                f"BUILD on a tensor ({type(inst).__name__}) is refused: a checkpoint rebuilds "
                "tensors with torch._utils' rebuild functions, never by setting their fields"
            )
        if type(inst) is OrderedDict:
            inst.__dict__.update(state)
            return
        if id(type(inst)) not in self.allowed_types:
            raise Refusal(
                "Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                f"`add_safe_globals`, but got {type(inst)}"
            )
        if hasattr(inst, "__setstate__") and id(type(inst)) in self.user_ids:
            inst.__setstate__(state)
            return
        slots = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slots = state
        if state:
            inst.__dict__.update(state)
        if slots:
            for k, v in slots.items():
                setattr(inst, k, v)


def _stop(self):  # a marker: load() returns on it
    pass


def _op_global(self):
    self.stack.append(self.find_global())


def _op_newobj(self):
    args = self.stack.pop()
    cls = self.stack.pop()
    self.stack.append(self.new_object(cls, args))


def _op_reduce(self):
    args = self.stack.pop()
    func = self.stack[-1]
    if id(func) not in self.allowed_ids:
        message = f"Trying to call reduce for unrecognized function {func}"
        if hasattr(func, "__self__"):
            message += f" which belongs to {func.__self__}"
        raise Refusal(message)
    self.stack[-1] = self.call(func, args)


def _op_build(self):
    state = self.stack.pop()
    self.build(self.stack[-1], state)


def _op_append(self):
    item = self.stack.pop()
    target = self.stack[-1]
    if type(target) is not list:
        raise Refusal(f"Can only append to lists, but got {type(target)}")
    target.append(item)


def _op_appends(self):
    items = self._pop_mark()
    target = self.stack[-1]
    if type(target) is not list:
        raise Refusal(f"Can only extend lists, but got {type(target)}")
    target.extend(items)


def _check_mapping(self, opcode: str):
    if type(self.stack[-1]) not in (dict, OrderedDict, Counter):
        raise Refusal(
            f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, but got "
            f"{type(self.stack[-1])}"
        )


def _op_setitem(self):
    value, key = self.stack.pop(), self.stack.pop()
    _check_mapping(self, "SETITEM")
    self.stack[-1][key] = value


def _op_setitems(self):
    items = self._pop_mark()
    _check_mapping(self, "SETITEMS")
    target = self.stack[-1]
    for i in range(0, len(items), 2):  # an odd item out raises IndexError: a malformed pickle
        target[items[i]] = items[i + 1]


def _op_mark(self):
    self.metastack.append(self.stack)
    self.stack = []


def _op_tuple(self):
    items = tuple(self._pop_mark())  # before reading self.stack: the pop replaces it
    self.stack.append(items)


def _op_tuple1(self):
    self.stack[-1] = (self.stack[-1],)


def _op_tuple2(self):
    self.stack[-2:] = [(self.stack[-2], self.stack[-1])]


def _op_tuple3(self):
    self.stack[-3:] = [(self.stack[-3], self.stack[-2], self.stack[-1])]


def _push(value):
    def op(self):
        self.stack.append(value() if callable(value) else value)

    return op


def _read_exact(self, n: int) -> bytes:
    data = self.read(n)
    if len(data) != n:
        raise EOFError(f"the pickle ends inside a {n}-byte argument")
    return data


def _op_binint(self):
    self.stack.append(struct.unpack("<i", _read_exact(self, 4))[0])


def _op_binint1(self):
    self.stack.append(_read_exact(self, 1)[0])


def _op_binint2(self):
    self.stack.append(struct.unpack("<H", _read_exact(self, 2))[0])


def _op_long1(self):
    n = _read_exact(self, 1)[0]
    self.stack.append(int.from_bytes(_read_exact(self, n), "little", signed=True))


def _op_binfloat(self):
    self.stack.append(struct.unpack(">d", _read_exact(self, 8))[0])


def _op_binunicode(self):
    n = struct.unpack("<I", _read_exact(self, 4))[0]
    self.stack.append(str(_read_exact(self, n), "utf-8", "surrogatepass"))


def _op_short_binstring(self):
    data = _read_exact(self, _read_exact(self, 1)[0])
    self.stack.append(data if self.encoding == "bytes" else data.decode(self.encoding, "strict"))


def _op_binpersid(self):
    pid = self.stack.pop()
    if type(pid) is not tuple and type(pid) is not int:
        raise Refusal(f"persistent_load id must be tuple or int, but got {type(pid)}")
    if type(pid) is tuple and pid:
        kind = pid[0].decode("ascii") if isinstance(pid[0], bytes) else pid[0]
        if kind != "storage":
            raise Refusal(f"Only persistent_load of storage is allowed, but got {type(pid[0])}")
    self.stack.append(self.persistent_load(pid))


def _op_binget(self):
    self.stack.append(self.memo[_read_exact(self, 1)[0]])


def _op_long_binget(self):
    self.stack.append(self.memo[struct.unpack("<I", _read_exact(self, 4))[0]])


def _op_binput(self):
    self.memo[_read_exact(self, 1)[0]] = self.stack[-1]


def _op_long_binput(self):
    self.memo[struct.unpack("<I", _read_exact(self, 4))[0]] = self.stack[-1]


def _op_proto(self):
    protocol = _read_exact(self, 1)[0]
    if protocol != 2:
        warnings.warn(
            f"Detected pickle protocol {protocol} in the checkpoint, which was not the default "
            "pickle protocol used by `ember.load` (2). The weights_only Unpickler might not "
            "support all instructions implemented by this protocol, please file an issue for "
            "adding support if you encounter this.",
            stacklevel=4,
        )


# torch's weights-only opcodes, and no others
_OPS = {
    ord("c"): _op_global,
    0x81: _op_newobj,
    ord("R"): _op_reduce,
    ord("b"): _op_build,
    ord("a"): _op_append,
    ord("e"): _op_appends,
    ord("s"): _op_setitem,
    ord("u"): _op_setitems,
    ord("("): _op_mark,
    ord("t"): _op_tuple,
    0x85: _op_tuple1,
    0x86: _op_tuple2,
    0x87: _op_tuple3,
    ord("N"): _push(None),
    0x89: _push(False),
    0x88: _push(True),
    ord(")"): _push(()),
    ord("]"): _push(list),
    ord("}"): _push(dict),
    0x8F: _push(set),
    ord("J"): _op_binint,
    ord("K"): _op_binint1,
    ord("M"): _op_binint2,
    ord("G"): _op_binfloat,
    ord("X"): _op_binunicode,
    ord("U"): _op_short_binstring,
    ord("Q"): _op_binpersid,
    ord("h"): _op_binget,
    ord("j"): _op_long_binget,
    ord("q"): _op_binput,
    ord("r"): _op_long_binput,
    0x8A: _op_long1,
    0x80: _op_proto,
    ord("."): _stop,
}
