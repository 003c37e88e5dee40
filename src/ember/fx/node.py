"""``Node``: one operation in a ``Graph``, and the helpers that walk its arguments.

A node's ``op`` says what kind of operation it is:

- ``placeholder``: a function input; ``target`` is the argument's name, ``args`` holds its
  default value, if any.
- ``get_attr``: fetch a parameter, buffer or submodule; ``target`` is its dotted path.
- ``call_function``: call a free function (``target``) on ``args`` and ``kwargs``.
- ``call_module``: call the submodule at path ``target`` (``args`` exclude ``self``).
- ``call_method``: call the method named ``target`` on ``args[0]``.
- ``output``: the ``return`` statement; ``args[0]`` is the value returned.

Nodes form a doubly linked list in their graph and keep their edges both ways: each node's
``users`` are the nodes that read its value, kept up to date when ``args`` change.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ember

from ._naming import pretty_print_target, public_path, unwrap_recording
from .immutable_collections import immutable_dict, immutable_list

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["Node", "map_arg", "map_aggregate", "has_side_effect", "Argument", "Target"]

Argument = Any  # tuples, lists, dicts, slices, Nodes and plain values (numbers, str, dtypes)
Target = Any  # a callable for call_function, a str otherwise

_LEGAL_OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output")

# Calls dead-code elimination keeps even when nothing reads their value.
_side_effectful_functions: set[Callable[..., Any]] = {operator.setitem}


def has_side_effect(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Registers ``fn`` as a call ``Graph.eliminate_dead_code`` must keep.

    Example::
        >>> @has_side_effect
        ... def log_value(x):
        ...     print(x)
    """
    _side_effectful_functions.add(fn)
    return fn


def _random_functions() -> tuple[Callable[..., Any], ...]:
    return (
        ember.rand,
        ember.randn,
        ember.randint,
        ember.randperm,
        ember.rand_like,
        ember.randn_like,
        ember.randint_like,
        ember.normal,
        ember.poisson,
        ember.bernoulli,
        ember.multinomial,
    )


def _type_repr(obj: object) -> str:
    if isinstance(obj, type):
        path = public_path(obj)
        if path is not None:
            return path  # ember.Tensor, not ember._tensor.Tensor
        return (
            obj.__qualname__
            if obj.__module__ == "builtins"
            else f"{obj.__module__}.{obj.__qualname__}"
        )
    if obj is ...:
        return "..."
    return repr(obj)


def _format_arg(arg: object) -> str:
    """An argument as the graph printout shows it: ``%name`` for nodes, ``{k: v}`` dicts."""
    if isinstance(arg, list):
        return f"[{', '.join(_format_arg(a) for a in arg)}]"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items}{',' if len(arg) == 1 else ''})"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


class Node:
    """One operation in a ``Graph`` (see the module docstring for the ops).

    Build nodes through the graph (``graph.call_function(...)``), not directly.

    Example::
        >>> import ember, ember.fx
        >>> g = ember.fx.Graph()
        >>> x = g.placeholder("x")
        >>> y = g.call_function(ember.relu, (x,))
        >>> y.op, y.target is ember.relu, y.args, list(x.users)
        ('call_function', True, (x,), [relu])
    """

    def __init__(
        self,
        graph: Graph,
        name: str,
        op: str,
        target: Target,
        args: tuple[Argument, ...],
        kwargs: dict[str, Argument],
        return_type: Any | None = None,
    ) -> None:
        if op == "call_function":
            if not callable(target):
                raise ValueError(
                    f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                    f"{type(target).__name__} but a Callable is expected"
                )
        elif op not in _LEGAL_OPS and op != "root":
            raise ValueError(f"op '{op}' is not one of {', '.join(_LEGAL_OPS)}")
        elif not isinstance(target, str):
            raise ValueError(
                f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                f"{type(target).__name__} but a str is expected"
            )
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self._repr_fn: Callable[[Node], str] | None = None
        self.meta: dict[str, Any] = {}
        self._args: tuple[Argument, ...] = ()
        self._kwargs: dict[str, Argument] = immutable_dict()
        self._update_args_kwargs(args, kwargs)

    # --- target: a tracing wrapper never becomes a target, the ember function behind it does
    @property
    def target(self) -> Target:
        return self._target

    @target.setter
    def target(self, value: Target) -> None:
        self._target = unwrap_recording(value)

    # --- the linked list ----------------------------------------------------------------------
    @property
    def next(self) -> Node:
        """The next node in the graph's list."""
        return self._next

    @property
    def prev(self) -> Node:
        """The previous node in the graph's list."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move ``x`` (a node of the same graph) to just before this node."""
        if self.graph is not x.graph:
            raise RuntimeError("Attempting to move a Node into a different Graph")
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Move ``x`` (a node of the same graph) to just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        # The node keeps its own links so that an iteration standing on it can step on.
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    # --- arguments ----------------------------------------------------------------------------
    @property
    def args(self) -> tuple[Argument, ...]:
        """The positional arguments; assign a new tuple to change them (users update)."""
        return self._args

    @args.setter
    def args(self, a: tuple[Argument, ...]) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict[str, Argument]:
        """The keyword arguments; assign a new dict to change them (users update)."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict[str, Argument]) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes this node reads, in the order they appear in ``args`` then ``kwargs``."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Set ``args[idx]`` to ``arg``."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg: Argument) -> None:
        """Insert ``arg`` into ``args`` before position ``idx``."""
        if not 0 <= idx <= len(self._args):
            raise IndexError(f"insert_arg index must be between 0 and {len(self._args)}, got {idx}")
        self.args = self._args[:idx] + (arg,) + self._args[idx:]

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Set ``kwargs[key]`` to ``arg``."""
        self.kwargs = {**self._kwargs, key: arg}

    def _update_args_kwargs(
        self, new_args: tuple[Argument, ...], new_kwargs: dict[str, Argument]
    ) -> None:
        self._args = map_aggregate(tuple(new_args), _identity)
        self._kwargs = map_aggregate(dict(new_kwargs), _identity)
        for old_use in self._input_nodes:
            old_use.users.pop(self)
        self._input_nodes = {}
        map_arg(self._args, self._input_nodes.setdefault)
        map_arg(self._kwargs, self._input_nodes.setdefault)
        for new_use in self._input_nodes:
            new_use.users.setdefault(self)

    def _replace_input_with(self, old_input: Node, new_input: Node) -> None:
        def swap(n: Node) -> Node:
            return new_input if n is old_input else n

        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Make this node read ``new_input`` wherever it read ``old_input``."""
        self._replace_input_with(old_input, new_input)

    def replace_all_uses_with(
        self,
        replace_with: Node,
        delete_user_cb: Callable[[Node], bool] | None = None,
        *,
        propagate_meta: bool = False,
    ) -> list[Node]:
        """Make every user of this node read ``replace_with`` instead.

        ``delete_user_cb(user)`` returning False keeps that user on this node. Returns the
        users that changed.

        Example::
            >>> import ember, ember.fx
            >>> g = ember.fx.Graph()
            >>> x = g.placeholder("x")
            >>> a = g.call_function(ember.relu, (x,))
            >>> out = g.output(a)
            >>> b = g.call_function(ember.sigmoid, (x,))
            >>> a.replace_all_uses_with(b)
            [output]
        """
        if propagate_meta:
            if replace_with.meta:
                raise RuntimeError(
                    "Called node.replace_all_uses_with(replace_with, propagate_meta=True), "
                    "but replace_with already has .meta keys"
                )
            replace_with.meta.update(self.meta)
        changed = []
        for user in list(self.users):
            if delete_user_cb is not None and not delete_user_cb(user):
                continue
            changed.append(user)
            user._replace_input_with(self, replace_with)
        return changed

    # --- analysis -----------------------------------------------------------------------------
    def is_impure(self) -> bool:
        """Whether dead-code elimination must keep this node even when unused: inputs, the
        output, random draws (they advance the generator) and registered side effects
        (``has_side_effect``). As in torch, method calls count as pure, in-place ones too."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _side_effectful_functions or self.target in _random_functions()
        if self.op == "call_module":
            module = self.graph.owning_module
            if module is None:
                raise RuntimeError("self.graph.owning_module not set for purity check")
            return getattr(module.get_submodule(self.target), "_is_impure", False)
        return False

    @property
    def stack_trace(self) -> str | None:
        """Where the traced program made this node, when the tracer recorded stack traces."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    # --- printing -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        if self._repr_fn is not None:
            return self._repr_fn(self)
        return self.name

    def _pretty_print_target(self, target: object) -> str:
        return pretty_print_target(target)

    def format_node(
        self,
        placeholder_names: list[str] | None = None,
        maybe_return_typename: list[str] | None = None,
    ) -> str | None:
        """This node as a line of ``print(graph)``: ``%relu : [num_users=1] = ...``."""
        users = f"[num_users={len(self.users)}]"
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        if self.op == "placeholder":
            if placeholder_names:  # as in torch, Graph.__str__'s empty list prints the line
                typed = f": {_type_repr(self.type)}" if self.type else ""
                placeholder_names.append(f"{self.target}{typed}")
                return None
            default = f"(default={self.args[0]})" if self.args else ""
            return f"%{self.name} : {typename}{users} = {self.op}[target={self.target}]{default}"
        target = self._pretty_print_target(self.target)
        if self.op == "get_attr":
            return f"%{self.name} : {typename}{users} = {self.op}[target={target}]"
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        return (
            f"%{self.name} : {typename}{users} = {self.op}[target={target}]"
            f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"
        )

    def _rename(self, candidate: str) -> None:
        if candidate == self.name:
            return
        name = self.graph._graph_namespace.create_name(candidate, None)
        self.name = name
        self.graph._graph_namespace.rename_object(self, name)


def _identity(x: Any) -> Any:
    return x


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """``fn`` applied to every leaf of ``a`` (tuples, lists, dicts and slices are walked);
    lists come back as ``immutable_list`` and dicts as ``immutable_dict``.

    Example::
        >>> map_aggregate((1, [2, {"k": 3}]), lambda v: v * 10)
        (10, [20, {'k': 30}])
    """
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(elem, fn) for elem in a)
        if type(a) is tuple:
            return mapped
        return type(a)(*mapped) if hasattr(a, "_fields") else type(a)(mapped)  # Size stays a Size
    if isinstance(a, list):
        return immutable_list(map_aggregate(elem, fn) for elem in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(
            map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn)
        )
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """``fn`` applied to every ``Node`` inside ``a``; other values are kept.

    Example::
        >>> import ember.fx
        >>> g = ember.fx.Graph()
        >>> x = g.placeholder("x")
        >>> map_arg((x, [x, 2]), lambda n: n.name)
        ('x', ['x', 2])
    """
    if not callable(fn):
        raise TypeError("ember.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)
