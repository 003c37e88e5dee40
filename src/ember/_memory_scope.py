"""``ember.memory_scope``: tensor bytes allocated, freed and at peak inside a block, and what
is still alive at its end (and which graph keeps it alive)."""

from __future__ import annotations

import sys
import weakref
from dataclasses import dataclass, field

from .autograd import _watch
from .autograd.graph import saved_arrays, saved_bytes, walk

LEAK_HINT = (
    "a tensor with a grad_fn keeps its whole backward graph alive; to keep a running total, "
    "add float(loss) or loss.item() (or loss.detach()) instead of loss."
)


@dataclass
class HeldGraph:
    """A tensor created in the scope that is still alive and holds a backward graph."""

    name: str
    shape: tuple
    grad_fn: str
    nodes: int
    saved_tensors: int
    saved_bytes: int


@dataclass
class LiveTensor:
    """A tensor created in the scope that is still alive at its end."""

    name: str
    shape: tuple
    dtype: str
    nbytes: int
    held_by: str = field(default="")


def format_bytes(n: float) -> str:
    """400 B, 1.5 KB, 2.0 MB ..."""
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


class memory_scope(_watch.Observer):
    """Count the tensor memory allocated and freed inside a ``with`` block, and its peak.

    Memory is counted per buffer (a view adds nothing); ``peak`` is the most bytes of buffers
    allocated inside the block that were alive at once. On exit the scope lists the tensors
    created inside it that are still alive, and the graphs that hold them; with
    ``report=True`` it prints that summary to stderr when something is still held.

    Example::
        >>> with ember.memory_scope() as mem:
        ...     loss = model(x).sum()
        ...     loss.backward()
        >>> mem.peak, mem.allocated, mem.freed
    """

    def __init__(self, report: bool = False):
        self.report = report
        self.allocated = 0
        self.freed = 0
        self.current = 0
        self.peak = 0
        self.alive: list[LiveTensor] = []
        self.graphs: list[HeldGraph] = []
        self._buffers: dict = {}  # id(buffer) -> (nbytes, finalizer)
        self._last = None
        self._peak_before = 0
        self._created: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._saver: dict = {}  # id(saved tensor) -> weakref to the node that saved it
        self._frame = None

    # --- observer ---------------------------------------------------------------------------
    def tensor_created(self, t) -> None:
        self._created[id(t)] = t
        root = _watch.memory_root(t._data)
        key = id(root)
        if key in self._buffers:
            self._last = None
            return
        try:
            finalizer = weakref.finalize(root, self._release, key)
        except TypeError:  # a buffer that cannot be weakly referenced is not counted
            return
        n = int(root.nbytes)
        self._buffers[key] = (n, finalizer)
        self._last = key
        self._peak_before = self.peak
        self.allocated += n
        self.current += n
        if self.current > self.peak:
            self.peak = self.current

    def view_made(self, t) -> None:
        # the view's buffer belongs to an older tensor: undo the count tensor_created made
        key = id(_watch.memory_root(t._data))
        if key == self._last:
            n, finalizer = self._buffers.pop(key)
            finalizer.detach()
            self.allocated -= n
            self.current -= n
            self.peak = self._peak_before
        self._last = None

    def node_created(self, node, out, saved) -> None:
        self.tensor_created(out)
        ref = weakref.ref(node)
        for s in saved:
            if getattr(s, "_data", None) is not None:
                self._saver[id(s)] = ref

    def _release(self, key) -> None:
        entry = self._buffers.pop(key, None)
        if entry is not None:
            self.freed += entry[0]
            self.current -= entry[0]

    # --- context ----------------------------------------------------------------------------
    def __enter__(self) -> memory_scope:
        self._frame = sys._getframe(1)
        _watch.add(self)
        return self

    def __exit__(self, *exc) -> bool:
        _watch.remove(self)
        names = _names_in(self._frame)
        self._frame = None
        self._summarise(names)
        for _n, finalizer in self._buffers.values():
            finalizer.detach()  # stop counting; the figures are final
        self._buffers.clear()
        if self.report and (self.graphs or self.alive):
            print(self.summary(), file=sys.stderr)
        return False

    def _summarise(self, names: dict) -> None:
        alive = list(self._created.values())
        self._created = weakref.WeakValueDictionary()
        saver = {id(t): self._live_saver(t) for t in alive}
        holder_of_node: dict = {}
        # a graph is held by a live tensor with a grad_fn that no other node saved
        for t in alive:
            fn = t.grad_fn
            if fn is None or saver[id(t)] is not None or fn in holder_of_node:
                continue
            nodes = walk(fn)
            name = names.get(id(t), f"a tensor of shape {tuple(t.shape)}")
            for n in nodes:
                holder_of_node.setdefault(n, name)
            self.graphs.append(
                HeldGraph(
                    name=name,
                    shape=tuple(t.shape),
                    grad_fn=fn.name(),
                    nodes=len(nodes),
                    saved_tensors=sum(len(saved_arrays(n)) for n in nodes),
                    saved_bytes=saved_bytes(nodes),
                )
            )
        for t in alive:
            node = saver[id(t)]
            if node is not None:
                held_by = f"saved by {node.name()}"
                if node in holder_of_node:
                    held_by += f" in the graph held by {holder_of_node[node]}"
            elif t.grad_fn is not None:
                held_by = f"holds the graph of {t.grad_fn.name()}"
            elif id(t) in names:
                held_by = f"the variable {names[id(t)]}"
            else:
                held_by = "referenced elsewhere (a .grad, optimizer state, a container ...)"
            self.alive.append(
                LiveTensor(
                    name=names.get(id(t), ""),
                    shape=tuple(t.shape),
                    dtype=str(t.dtype),
                    nbytes=int(t._data.nbytes),
                    held_by=held_by,
                )
            )
        self._saver.clear()

    def _live_saver(self, t):
        ref = self._saver.get(id(t))
        node = ref() if ref is not None else None
        if node is not None and node._saved and any(s is t for s in node._saved):
            return node
        return None

    # --- report -----------------------------------------------------------------------------
    def summary(self) -> str:
        """The scope's figures, the graphs still held and the tensors still alive, as text."""
        lines = [
            f"memory_scope: allocated {format_bytes(self.allocated)}, freed "
            f"{format_bytes(self.freed)}, peak {format_bytes(self.peak)}; "
            f"{len(self.alive)} tensors created inside are still alive "
            f"({format_bytes(sum(a.nbytes for a in self.alive))})"
        ]
        for g in self.graphs:
            lines.append(
                f"  {g.name} ({g.grad_fn}) holds a backward graph of {g.nodes} nodes with "
                f"{g.saved_tensors} saved tensors ({format_bytes(g.saved_bytes)})"
            )
        shown = [a for a in self.alive if not a.held_by.startswith("holds")][:20]
        for a in shown:
            label = a.name or f"tensor {a.shape}"
            lines.append(f"  alive: {label}, {a.dtype}, {format_bytes(a.nbytes)} - {a.held_by}")
        hidden = len(self.alive) - len(shown) - len(self.graphs)
        if hidden > 0:
            lines.append(f"  ... and {hidden} more")
        if self.graphs:
            lines.append(f"Hint: {LEAK_HINT}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"memory_scope(allocated={self.allocated}, freed={self.freed}, peak={self.peak}, "
            f"alive={len(self.alive)}, graphs={len(self.graphs)})"
        )


def _names_in(frame) -> dict:
    """id -> variable name, for the tensors the code around the scope can see."""
    from ._tensor import Tensor

    names: dict = {}
    if frame is None:
        return names
    for scope in (frame.f_globals, frame.f_locals):
        for name, value in scope.items():
            if isinstance(value, Tensor):
                names[id(value)] = name
    return names
