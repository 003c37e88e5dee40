"""``Graph``: the list of ``Node`` s a traced program became, and the edits passes make on it.

Example::
    >>> import ember, ember.fx
    >>> g = ember.fx.Graph()
    >>> x = g.placeholder("x")
    >>> y = g.call_function(ember.relu, (x,))
    >>> _ = g.output(y)
    >>> print(g)
    graph():
        %x : [num_users=1] = placeholder[target=x]
        %relu : [num_users=1] = call_function[target=ember.relu](args = (%x,), kwargs = {})
        return relu
"""

from __future__ import annotations

import copy
import inspect
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .. import nn
from ._codegen import MAGIC_METHODS, REFLECTABLE_MAGIC_METHODS, CodeGen, PythonCode
from ._naming import _Namespace, is_magic, snake_case
from .immutable_collections import immutable_dict
from .node import _LEGAL_OPS, Argument, Node, Target, map_arg

if TYPE_CHECKING:
    from .graph_module import GraphModule

__all__ = ["Graph", "PythonCode", "CodeGen", "magic_methods", "reflectable_magic_methods"]

magic_methods = MAGIC_METHODS
reflectable_magic_methods = REFLECTABLE_MAGIC_METHODS


class _InsertPoint:
    """Where ``create_node`` puts new nodes until the ``with`` block ends."""

    def __init__(self, graph: Graph, new_insert: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        self.graph._insert = self.orig_insert


class _NodeList:
    """The graph's nodes in order (or reversed); erasing nodes while iterating is safe."""

    def __init__(self, graph: Graph, forward: bool = True) -> None:
        self.graph = graph
        self.forward = forward

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self.graph._root
        step = "_next" if self.forward else "_prev"
        current = getattr(root, step)
        while current is not root:
            if not current._erased:
                yield current
            current = getattr(current, step)

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self.graph, not self.forward))

    def __repr__(self) -> str:
        return repr(list(self))


class Graph:
    """The nodes of a traced program, in execution order, with the edits passes use.

    Nodes are made through ``placeholder``, ``get_attr``, ``call_function``,
    ``call_method``, ``call_module`` and ``output``, at the current insert point (the end,
    or where ``inserting_before``/``inserting_after`` put it).
    """

    def __init__(
        self,
        owning_module: GraphModule | None = None,
        tracer_cls: type | None = None,
        tracer_extras: dict[str, Any] | None = None,
    ) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._insert: Callable[[Node], None] = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()
        self._co_fields: dict[str, Any] = {}

    @property
    def owning_module(self) -> GraphModule | None:
        return self._owning_module

    @owning_module.setter
    def owning_module(self, module: GraphModule | None) -> None:
        self._owning_module = module

    @property
    def nodes(self) -> _NodeList:
        """The nodes in order; ``reversed(graph.nodes)`` walks them backwards."""
        return _NodeList(self)

    def output_node(self) -> Node:
        node = next(iter(reversed(self.nodes)))
        if node.op != "output":
            raise RuntimeError(f"the last node is {node.op} {node.name}, not the output")
        return node

    def find_nodes(self, *, op: str, target: Target | None = None, sort: bool = True) -> list[Node]:
        """The nodes with this ``op`` (and ``target``, when given), in graph order."""
        if op == "call_function" and target is None:
            raise ValueError("find_nodes(op='call_function') needs a target")
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # --- making nodes -----------------------------------------------------------------------
    def create_node(
        self,
        op: str,
        target: Target,
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        name: str | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """A new node at the insert point; ``name`` (or the target's name) made unique."""
        if op not in _LEGAL_OPS:
            raise ValueError(f"op '{op}' is not one of {', '.join(_LEGAL_OPS)}")
        if not args:
            args = ()
        elif not isinstance(args, tuple):
            raise TypeError(f"args must be a tuple, got {type(args).__name__}")
        if not kwargs:
            kwargs = immutable_dict()
        elif not isinstance(kwargs, dict):
            raise TypeError(f"kwargs must be a dict, got {type(kwargs).__name__}")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        node = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, node)
        self._insert(node)
        self._len += 1
        return node

    def placeholder(
        self, name: str, type_expr: Any | None = None, default_value: Any = inspect.Signature.empty
    ) -> Node:
        """A function input named ``name``, with ``default_value`` when given."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        """Fetch the parameter, buffer or submodule at ``qualified_name`` of the module."""
        module = self.owning_module
        if module is not None and not _attribute_exists(module, qualified_name):
            warnings.warn(
                "Attempted to insert a get_attr Node with no underlying reference in the owning "
                "GraphModule! Call GraphModule.add_submodule to add the necessary submodule, "
                "GraphModule.add_parameter to add the necessary Parameter, or "
                "nn.Module.register_buffer to add the necessary buffer",
                stacklevel=2,
            )
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(
        self,
        module_name: str,
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """Call the submodule at ``module_name`` (``args`` without ``self``)."""
        module = self.owning_module
        if module is not None:
            try:
                module.get_submodule(module_name)
            except AttributeError:
                warnings.warn(
                    "Attempted to insert a call_module Node with no underlying reference in the "
                    "owning GraphModule! Call GraphModule.add_submodule to add the necessary "
                    "submodule",
                    stacklevel=2,
                )
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(
        self,
        method_name: str,
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        type_expr: Any | None = None,
    ) -> Node:
        """Call method ``method_name`` of ``args[0]`` with the remaining arguments."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(
        self,
        the_function: Callable[..., Any],
        args: tuple[Argument, ...] | None = None,
        kwargs: dict[str, Argument] | None = None,
        type_expr: Any | None = None,
        name: str | None = None,
    ) -> Node:
        """Call ``the_function`` (an ember function, an ``operator``, any callable)."""
        return self.create_node(
            "call_function", the_function, args, kwargs, name=name, type_expr=type_expr
        )

    def output(self, result: Argument, type_expr: Any | None = None) -> Node:
        """The ``return result`` node."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(
        self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x
    ) -> Node:
        """A copy of ``node`` (from any graph) here, its node arguments mapped by
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        copied = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        copied.meta = copy.copy(node.meta)
        return copied

    def graph_copy(
        self, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False
    ) -> Any:
        """Copy ``g``'s nodes here (filling ``val_map`` old -> new); returns the value ``g``
        returned, in this graph's nodes."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                value = map_arg(node.args[0], lambda n: val_map[n])
                return (value, node) if return_output_node else value
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict | None = None) -> Graph:
        memo = memo if memo is not None else {}
        g = Graph(tracer_cls=self._tracer_cls)
        result = g.graph_copy(self, val_map=memo, return_output_node=True)
        g._codegen = copy.deepcopy(self._codegen)
        if result is not None:
            value, old_output = result
            new_output = g.output(value, type_expr=old_output.type)
            new_output.meta = copy.copy(old_output.meta)
        return g

    def _target_to_str(self, target: Target) -> str:
        if callable(target):
            op = target.__name__
        else:
            op = target
            if is_magic(op):
                op = op[2:-2]
        return snake_case(op)

    # --- editing ----------------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Remove a node nothing uses any more."""
        if to_erase.users:
            raise RuntimeError(
                f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                f"users in the graph: {to_erase.users}!"
            )
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs(
            map_arg(to_erase._args, lambda n: None), map_arg(to_erase._kwargs, lambda n: None)
        )

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """New nodes go before ``n`` (the graph's start when None); restored after ``with``."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise ValueError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """New nodes go after ``n`` (the graph's end when None); restored after ``with``.

        Example::
            >>> import ember, ember.fx
            >>> g = ember.fx.Graph()
            >>> x = g.placeholder("x")
            >>> out = g.output(x)
            >>> with g.inserting_after(x):
            ...     y = g.call_function(ember.neg, (x,))
            >>> [n.name for n in g.nodes]
            ['x', 'neg', 'output']
        """
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise ValueError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase the nodes whose values nobody uses and that have no side effect (see
        ``Node.is_impure``). Returns whether anything was erased."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and not node.users:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph is well formed: nodes owned by this graph, each argument defined
        before use, unique names, and (with an owning module) targets that exist."""
        seen_values: set[Node] = set()
        seen_names: set[str] = set()
        for node in self.nodes:
            if node.op not in _LEGAL_OPS:
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(
                        f"Argument '{arg}' of Node '{node}' does not belong to this Graph, but "
                        "was used as an argument! If you are copying nodes from another graph, "
                        f"make sure to use ``arg_transform`` on node_copy() to remap values\n{self}"
                    )
                if arg not in seen_values:
                    raise RuntimeError(
                        f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                        f"Please check that Nodes in the graph are topologically ordered\n{self}"
                    )
            seen_values.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
        if self.owning_module is None:
            return
        for node in self.nodes:
            if node.op == "call_function":
                if not callable(node.target):
                    raise ValueError(
                        f"Node {node} target {node.target} has type "
                        f"{type(node.target).__name__} but a Callable is expected"
                    )
                continue
            if not isinstance(node.target, str):
                raise ValueError(
                    f"Node {node} target {node.target} has type {type(node.target).__name__} "
                    "but a str is expected"
                )
            if node.op in ("get_attr", "call_module"):
                _check_target_path(self.owning_module, node)

    # --- printing ---------------------------------------------------------------------------
    def python_code(self, root_module: str, *, verbose: bool = False) -> PythonCode:
        """The graph as the source of ``forward`` (``root_module`` names ``self``)."""
        namespace = _Namespace()
        with _names_from(self, namespace):
            return self._codegen.gen_python_code(self, root_module, namespace, verbose=verbose)

    def __str__(self) -> str:
        # As torch prints it: placeholders as lines of their own, no return annotation.
        placeholder_names: list[str] = []
        lines = [node.format_node(placeholder_names) for node in self.nodes]
        text = f"graph({', '.join(placeholder_names)}):"
        for line in lines:
            if line:
                text += "\n    " + line
        return text

    def print_tabular(self) -> None:
        """Print one row per node (opcode, name, target, args, kwargs); needs ``tabulate``."""
        try:
            from tabulate import tabulate
        except ImportError:
            print(
                "`print_tabular` relies on the library `tabulate`, which could not be found on "
                "this machine. Run `pip install tabulate` to install the library."
            )
            raise
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

    def set_codegen(self, codegen: CodeGen) -> None:
        self._codegen = codegen

    def process_inputs(self, *args: Any) -> Any:
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out: Any) -> Any:
        return self._codegen.process_outputs(out)

    def on_generate_code(self, make_transformer: Callable[[Any], Callable[[list[str]], list[str]]]):
        """Register a transformer of the generated body's lines; usable as a context
        manager that restores the previous one."""
        previous = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(previous)

        @contextmanager
        def restore():
            try:
                yield
            finally:
                self._codegen._body_transformer = previous

        return restore()


@contextmanager
def _names_from(graph: Graph, namespace: _Namespace):
    """While generating code, nodes print as names unique among locals and globals."""
    saved = {}
    for node in graph.nodes:
        saved[node] = node._repr_fn
        node._repr_fn = lambda n: namespace.create_name(n.name, n)
    try:
        yield
    finally:
        for node, repr_fn in saved.items():
            node._repr_fn = repr_fn


def _attribute_exists(module: Any, qualified_name: str) -> bool:
    path, _, name = qualified_name.rpartition(".")
    try:
        owner = module.get_submodule(path)
    except AttributeError:
        return False
    if not hasattr(owner, name):
        return False
    value = getattr(owner, name)
    return isinstance(value, (nn.Module, nn.Parameter)) or name in owner._buffers


def _check_target_path(module: Any, node: Node) -> None:
    atoms = node.target.split(".")
    value = module
    for i, atom in enumerate(atoms):
        next_value = getattr(value, atom, None)
        seen = ".".join(atoms[:i])
        if next_value is None:
            raise RuntimeError(
                f"Node {node} target {node.target} references nonexistent attribute {atom} "
                f"of {seen}"
            )
        if node.op == "call_module" and not isinstance(next_value, nn.Module):
            raise RuntimeError(
                f"Node {node} target {node.target} {atom} of {seen} does not reference an nn.Module"
            )
        value = next_value
