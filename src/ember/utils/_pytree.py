"""Pytrees: nests of tuples, lists, dicts (and registered types) with tensors at the leaves.

The API of ``torch.utils._pytree``: ``tree_flatten`` splits a tree into its leaves and a
:class:`TreeSpec` that describes the containers; ``tree_unflatten`` rebuilds it. ``ember.func``
uses these to take dicts of parameters and tuples of dicts where PyTorch's transforms do.

Containers are the registered node types (tuple, list, dict, namedtuple, OrderedDict,
defaultdict, deque and whatever :func:`register_pytree_node` adds); anything else, ``None``
included, is a leaf.

Example::
    >>> from ember.utils._pytree import tree_flatten, tree_unflatten
    >>> leaves, spec = tree_flatten({"a": 1, "b": (2, 3)})
    >>> leaves
    [1, 2, 3]
    >>> tree_unflatten([x * 10 for x in leaves], spec)
    {'a': 10, 'b': (20, 30)}
"""

from __future__ import annotations

import dataclasses
import types
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

__all__ = [
    "GetAttrKey",
    "LeafSpec",
    "MappingKey",
    "SequenceKey",
    "TreeSpec",
    "is_namedtuple",
    "is_namedtuple_class",
    "is_namedtuple_instance",
    "key_get",
    "keystr",
    "register_pytree_node",
    "tree_all",
    "tree_all_only",
    "tree_any",
    "tree_any_only",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_is_leaf",
    "tree_iter",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_",
    "tree_map_only",
    "tree_map_only_",
    "tree_map_with_path",
    "tree_structure",
    "tree_unflatten",
    "treespec_pprint",
]

PyTree = Any
Context = Any


class NodeDef(NamedTuple):
    """How a container type splits into children (and a context) and is rebuilt from them."""

    type: Any
    flatten_fn: Callable
    unflatten_fn: Callable
    flatten_with_keys_fn: Callable | None


SUPPORTED_NODES: dict = {}


def register_pytree_node(
    cls: type,
    flatten_fn: Callable,
    unflatten_fn: Callable,
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context: Callable | None = None,
    from_dumpable_context: Callable | None = None,
    flatten_with_keys_fn: Callable | None = None,
) -> None:
    """Make ``cls`` a container: ``flatten_fn(obj) -> (children, context)`` and
    ``unflatten_fn(children, context) -> obj``. (The serialization arguments are accepted for
    PyTorch's signature; ember has no ``treespec_dumps``.)

    Example::
        >>> class Pair:
        ...     def __init__(self, a, b):
        ...         self.a, self.b = a, b
        >>> register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda c, _: Pair(*c))
        >>> tree_leaves(Pair(1, [2, 3]))
        [1, 2, 3]
    """
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


# --- key paths: how to reach a leaf from the root ------------------------------------------


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence):
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping):
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj):
        return getattr(obj, self.name)


def keystr(kp: tuple) -> str:
    """A key path as the source text that reaches the leaf: ``[0]['w'].bias``."""
    return "".join(str(k) for k in kp)


def key_get(obj, kp: tuple):
    """The leaf of ``obj`` at the key path ``kp``."""
    for k in kp:
        obj = k.get(obj)
    return obj


# --- the built-in containers ---------------------------------------------------------------


def is_namedtuple_class(cls) -> bool:
    return (
        isinstance(cls, type)
        and issubclass(cls, tuple)
        and isinstance(getattr(cls, "_fields", None), tuple)
        and callable(getattr(cls, "_make", None))
    )


def is_namedtuple_instance(obj) -> bool:
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj) -> bool:
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def _dict_keys_with(d, children: list) -> list:
    return [(MappingKey(k), v) for k, v in zip(d, children)]


register_pytree_node(
    tuple,
    lambda t: (list(t), None),
    lambda children, _: tuple(children),
    flatten_with_keys_fn=lambda t: ([(SequenceKey(i), v) for i, v in enumerate(t)], None),
)
register_pytree_node(
    list,
    lambda t: (list(t), None),
    lambda children, _: list(children),
    flatten_with_keys_fn=lambda t: ([(SequenceKey(i), v) for i, v in enumerate(t)], None),
)
register_pytree_node(
    dict,
    lambda d: (list(d.values()), list(d.keys())),
    lambda children, keys: dict(zip(keys, children)),
    flatten_with_keys_fn=lambda d: ([(MappingKey(k), v) for k, v in d.items()], list(d)),
)
# every namedtuple class is a node under the one type ``namedtuple``, its class the context
register_pytree_node(
    namedtuple,
    lambda t: (list(t), type(t)),
    lambda children, cls: cls(*children),
    flatten_with_keys_fn=lambda t: (
        [(GetAttrKey(f), v) for f, v in zip(t._fields, t)],
        type(t),
    ),
)
register_pytree_node(
    OrderedDict,
    lambda d: (list(d.values()), list(d.keys())),
    lambda children, keys: OrderedDict(zip(keys, children)),
    flatten_with_keys_fn=lambda d: ([(MappingKey(k), v) for k, v in d.items()], list(d)),
)
register_pytree_node(
    defaultdict,
    lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
    lambda children, ctx: defaultdict(ctx[0], zip(ctx[1], children)),
    flatten_with_keys_fn=lambda d: (
        [(MappingKey(k), v) for k, v in d.items()],
        [d.default_factory, list(d)],
    ),
)
register_pytree_node(
    deque,
    lambda d: (list(d), d.maxlen),
    lambda children, maxlen: deque(children, maxlen=maxlen),
    flatten_with_keys_fn=lambda d: ([(SequenceKey(i), v) for i, v in enumerate(d)], d.maxlen),
)

_BUILTIN_TYPES = frozenset(SUPPORTED_NODES)
_DICT_TYPES = frozenset({dict, OrderedDict, defaultdict})


def _node_type(tree) -> Any:
    cls = type(tree)
    return namedtuple if is_namedtuple_class(cls) else cls


def tree_is_leaf(tree: PyTree, is_leaf: Callable | None = None) -> bool:
    """Whether ``tree`` is a leaf: not a registered container, or ``is_leaf(tree)``."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_type(tree) not in SUPPORTED_NODES


# --- TreeSpec --------------------------------------------------------------------------------


def _hashable(context):
    if isinstance(context, list):
        return tuple(_hashable(c) for c in context)
    if isinstance(context, dict):
        return tuple((k, _hashable(v)) for k, v in context.items())
    return context


class TreeSpec:
    """The containers of a pytree without its leaves: a node's type, its context (a dict's
    keys, a namedtuple's class) and one spec per child; a leaf's spec is :class:`LeafSpec`."""

    __slots__ = ("type", "_context", "_children", "num_nodes", "num_leaves", "num_children")

    def __init__(self, type: Any, context: Context, children_specs: list) -> None:
        self.type = type
        self._context = context
        self._children = list(children_specs)
        self.num_children = len(self._children)
        self.num_nodes = 1 + sum(c.num_nodes for c in self._children)
        self.num_leaves = sum(c.num_leaves for c in self._children)

    @property
    def context(self) -> Context:
        return self._context

    @property
    def children_specs(self) -> list:
        return self._children

    def children(self) -> list:
        return list(self._children)

    def child(self, index: int) -> TreeSpec:
        return self._children[index]

    def is_leaf(self) -> bool:
        return self.num_nodes == 1 and self.num_leaves == 1

    def __repr__(self, indent: int = 0) -> str:
        inner = indent + 2
        children = ("," + "\n" + " " * inner).join(c.__repr__(inner) for c in self._children)
        return f"TreeSpec({self.type.__name__}, {self._context}, [{children}])"

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (
            str(self.type) == str(other.type)
            and self._context == other._context
            and self._children == other._children
        )

    def __hash__(self) -> int:
        return hash((str(self.type), _hashable(self._context), tuple(self._children)))

    def flatten_up_to(self, tree: PyTree) -> list:
        """The subtrees of ``tree`` at this spec's leaves (``tree`` has this spec as a prefix).

        Example::
            >>> tree_structure((0, 0)).flatten_up_to(([1, 2], 3))
            [[1, 2], 3]
        """
        out: list = []
        self._flatten_up_to(tree, out)
        return out

    def _flatten_up_to(self, tree, out: list) -> None:
        if self.is_leaf():
            out.append(tree)
            return
        node_type = _node_type(tree)
        both_dicts = self.type in _DICT_TYPES and node_type in _DICT_TYPES
        if not both_dicts and node_type is not self.type:
            raise ValueError(f"Node type mismatch; expected {self.type!r}, but got {node_type!r}.")
        children, context = SUPPORTED_NODES[node_type].flatten_fn(tree)
        if len(children) != self.num_children:
            raise ValueError(
                f"Node arity mismatch; expected {self.num_children}, but got {len(children)}."
            )
        if both_dicts:  # dicts match by keys, in this spec's order
            expected = self._context[1] if self.type is defaultdict else self._context
            if set(tree) != set(expected):
                missing, extra = set(expected) - set(tree), set(tree) - set(expected)
                message = f"; missing key(s): {missing}" if missing else ""
                message += f"; extra key(s): {extra}" if extra else ""
                raise ValueError(f"Node keys mismatch{message}.")
            children = [tree[k] for k in expected]
        elif node_type is not deque and context != self._context:  # a deque's maxlen may differ
            raise ValueError(
                f"Node context mismatch for node type {self.type!r}; expected "
                f"{self._context!r}, but got {context!r}."
            )
        for child, spec in zip(children, self._children):
            spec._flatten_up_to(child, out)

    def unflatten(self, leaves: Iterable) -> PyTree:
        """The tree of this structure with ``leaves`` in order."""
        leaves = leaves if isinstance(leaves, (list, tuple)) else list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec "
                f"refers to a pytree that holds {self.num_leaves} items ({self})."
            )
        return self._unflatten(leaves, 0)

    def _unflatten(self, leaves, start: int):
        if self.is_leaf():
            return leaves[start]
        children = []
        for spec in self._children:
            children.append(spec._unflatten(leaves, start))
            start += spec.num_leaves
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self._context)


class LeafSpec(TreeSpec):
    """The spec of a leaf, shown as ``*``."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_leaves = 1

    def is_leaf(self) -> bool:
        return True

    def __repr__(self, indent: int = 0) -> str:
        return "*"


_LEAF_SPEC = LeafSpec()


# --- flattening and mapping ----------------------------------------------------------------


def tree_flatten(tree: PyTree, is_leaf: Callable | None = None) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` in order, and its :class:`TreeSpec`."""
    leaves: list = []

    def walk(node) -> TreeSpec:
        if tree_is_leaf(node, is_leaf):
            leaves.append(node)
            return _LEAF_SPEC
        node_type = _node_type(node)
        children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
        return TreeSpec(node_type, context, [walk(c) for c in children])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves: Iterable, treespec: TreeSpec) -> PyTree:
    """The tree of structure ``treespec`` holding ``leaves`` (the inverse of tree_flatten)."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(
            "tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec "
            f"but got item of type {type(treespec)}."
        )
    return treespec.unflatten(leaves)


def tree_iter(tree: PyTree, is_leaf: Callable | None = None):
    yield from tree_flatten(tree, is_leaf)[0]


def tree_leaves(tree: PyTree, is_leaf: Callable | None = None) -> list:
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Callable | None = None) -> TreeSpec:
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: Callable | None = None):
    """``tree`` with each leaf ``x`` replaced by ``func(x, *xs)``, ``xs`` the matching
    subtrees of ``rests`` (which have ``tree``'s structure as a prefix).

    Example::
        >>> tree_map(lambda x: x + 1, {"x": 7, "y": (42, 64)})
        {'x': 8, 'y': (43, 65)}
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten([func(*xs) for xs in zip(*flat)])


def tree_map_(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: Callable | None = None):
    """Call ``func`` on each leaf (for its side effect); returns ``tree`` itself."""
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    for xs in zip(*flat):
        func(*xs)
    return tree


def _type_predicate(type_or_types_or_pred) -> Callable:
    """A leaf filter: the given type(s) (a type, a tuple of types, a union) or a predicate."""
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        return lambda x: isinstance(x, type_or_types_or_pred)
    if callable(type_or_types_or_pred):
        return type_or_types_or_pred
    raise TypeError("Argument must be a type, a tuple of types, or a callable.")


def _only(type_or_types_or_pred, func: Callable) -> Callable:
    wanted = _type_predicate(type_or_types_or_pred)
    return lambda x: func(x) if wanted(x) else x


def tree_map_only(type_or_types_or_pred, func: Callable, tree: PyTree, is_leaf=None):
    """tree_map of ``func`` over the leaves of the given type(s) (or passing the predicate);
    the other leaves are kept."""
    return tree_map(_only(type_or_types_or_pred, func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred, func: Callable, tree: PyTree, is_leaf=None):
    return tree_map_(_only(type_or_types_or_pred, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable, tree: PyTree, is_leaf: Callable | None = None) -> bool:
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable, tree: PyTree, is_leaf: Callable | None = None) -> bool:
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types, pred: Callable, tree: PyTree, is_leaf=None) -> bool:
    wanted = _type_predicate(type_or_types)
    return all(pred(x) for x in tree_iter(tree, is_leaf) if wanted(x))


def tree_any_only(type_or_types, pred: Callable, tree: PyTree, is_leaf=None) -> bool:
    wanted = _type_predicate(type_or_types)
    return any(pred(x) for x in tree_iter(tree, is_leaf) if wanted(x))


# --- with key paths --------------------------------------------------------------------------


def tree_flatten_with_path(
    tree: PyTree, is_leaf: Callable | None = None
) -> tuple[list[tuple[tuple, Any]], TreeSpec]:
    """Like tree_flatten, each leaf paired with its key path.

    Example::
        >>> tree_flatten_with_path({"a": [5]})[0]
        [((MappingKey(key='a'), SequenceKey(idx=0)), 5)]
    """
    pairs: list = []

    def walk(node, path: tuple) -> None:
        if tree_is_leaf(node, is_leaf):
            pairs.append((path, node))
            return
        node_type = _node_type(node)
        with_keys = SUPPORTED_NODES[node_type].flatten_with_keys_fn
        if with_keys is None:
            raise ValueError(
                f"Did not find a flatten_with_keys_fn for type: {node_type}. Please pass a "
                "flatten_with_keys_fn argument to register_pytree_node."
            )
        for key, child in with_keys(node)[0]:
            walk(child, (*path, key))

    walk(tree, ())
    return pairs, tree_structure(tree, is_leaf)


def tree_leaves_with_path(tree: PyTree, is_leaf: Callable | None = None) -> list:
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func: Callable, tree: PyTree, *rests, is_leaf=None):
    """``tree`` with each leaf ``x`` replaced by ``func(key_path, x, *xs)``."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    flat = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(
        [func(path, x, *xs) for (path, x), *xs in zip(pairs, *flat)]
        if rests
        else [func(path, x) for path, x in pairs]
    )


# --- helpers for ember.func --------------------------------------------------------------------


class _Asterisk(str):
    __slots__ = ()

    def __repr__(self) -> str:
        return "*"


def treespec_pprint(treespec: TreeSpec) -> str:
    """The structure as Python source with ``*`` for each leaf: ``({'a': *}, *)``."""
    return repr(treespec.unflatten([_Asterisk("*")] * treespec.num_leaves))


def _broadcast_to_and_flatten(tree: PyTree, treespec: TreeSpec, is_leaf=None) -> list | None:
    """``tree`` (a prefix of the structure ``treespec``) with each of its leaves repeated over
    the leaves it covers, flattened; None when ``tree`` is no prefix of it. vmap's ``in_dims=0``
    covers every argument, ``({"w": 0, "b": None}, 0)`` one leaf at a time."""
    full = treespec.unflatten([0] * treespec.num_leaves)
    out: list = []
    try:
        leaves, spec = tree_flatten(tree, is_leaf)
        for value, subtree in zip(leaves, spec.flatten_up_to(full)):
            out.extend([value] * tree_structure(subtree, is_leaf).num_leaves)
    except ValueError:
        return None
    return out
