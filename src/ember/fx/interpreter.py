"""``Interpreter`` runs a graph node by node; ``Transformer`` runs it on proxies to build a new one.

Each node is executed by the method named after its op (``placeholder``, ``get_attr``,
``call_function``, ``call_method``, ``call_module``, ``output``), so a subclass changes
what one kind of node does by overriding one method.

Example::
    >>> import ember, ember.fx
    >>> gm = ember.fx.symbolic_trace(lambda x: ember.relu(x) + 1)
    >>> class NegateRelu(ember.fx.Interpreter):
    ...     def call_function(self, target, args, kwargs):
    ...         if target == ember.relu:
    ...             return ember.neg(*args)
    ...         return super().call_function(target, args, kwargs)
    >>> NegateRelu(gm).run(ember.tensor([1.0, -2.0]))
    tensor([0., 3.])
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from .. import nn
from ._patching import PatchSession
from ._symbolic_trace import Tracer
from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs ``module.graph`` (or ``graph``) on real values.

    ``garbage_collect_values`` drops each value after its last use, as the generated code
    does.
    """

    def __init__(
        self, module: nn.Module, garbage_collect_values: bool = True, graph: Graph | None = None
    ) -> None:
        self.module = module
        self.submodules = dict(self.module.named_modules())
        self.graph = graph if graph is not None else self.module.graph
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            last_use: dict[Node, Node] = {}
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            for node in reversed(self.graph.nodes):
                for used in node._input_nodes:
                    if used not in last_use:
                        last_use[used] = node
                        self.user_to_last_uses.setdefault(node, []).append(used)

    def run(
        self,
        *args: Any,
        initial_env: dict[Node, Any] | None = None,
        enable_io_processing: bool = True,
    ) -> Any:
        """Run the graph on ``args``; returns what the output node returns.

        ``initial_env`` maps nodes to values to use instead of running them.
        """
        self.env = initial_env if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    message = f"While executing {node.format_node()}"
                    e.args = (f"{e.args[0]}\n\n{message}" if e.args else message,) + e.args[1:]
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                output = self.env[node]
                return self.graph.process_outputs(output) if enable_io_processing else output
        return None

    def boxed_run(self, args_list: list[Any]) -> Any:
        """``run`` with the arguments in a list it empties (so they can be freed early)."""
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(args_list) != len(placeholders):
            raise RuntimeError(
                f"Interpreter.boxed_run expected {len(placeholders)} arguments for placeholders "
                f"but received {len(args_list)}"
            )
        env = dict(zip(placeholders, args_list))
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its arguments from the environment, call ``self.<n.op>``."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # --- one method per op ------------------------------------------------------------------
    def placeholder(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        """The next positional argument (all the rest for ``*args``), else the default."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as stop:
            if args:
                return args[0]
            raise RuntimeError(
                f"Expected positional argument for parameter {target}, but one was not passed in!"
            ) from stop

    def get_attr(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        return self.fetch_attr(target)

    def call_function(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        return target(*args, **kwargs)

    def call_method(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Any:
        return args[0]

    # --- helpers ----------------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        """The object at dotted ``target`` of the module."""
        atoms = target.split(".")
        value: Any = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(value, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[: i + 1])}")
            value = getattr(value, atom)
        return value

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        def load_arg(n_arg: Node) -> Any:
            if n_arg not in self.env:
                raise RuntimeError(
                    f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() to "
                    "diagnose such issues"
                )
            return self.env[n_arg]

        return map_arg(args, load_arg)


class Transformer(Interpreter):
    """Runs a GraphModule on proxies, so each node's method returns what should stand in the
    new graph; ``transform()`` returns the new GraphModule.

    Example::
        >>> import ember, ember.fx
        >>> gm = ember.fx.symbolic_trace(lambda x: ember.relu(x))
        >>> class ReluToGelu(ember.fx.Transformer):
        ...     def call_function(self, target, args, kwargs):
        ...         if target == ember.relu:
        ...             target = ember.nn.functional.gelu
        ...         return super().call_function(target, args, kwargs)
        >>> print(ReluToGelu(gm).transform().code.strip())
        def forward(self, x):
            gelu = ember.nn.functional.gelu(x);  x = None
            return gelu
    """

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)

        class TransformerTracer(Tracer):
            def __init__(self, graph: Graph) -> None:
                super().__init__()
                self.graph = graph
                self.tensor_attrs = {}

            def is_leaf_module(self, _: nn.Module, __: str) -> bool:
                return True

        self.tracer = TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Proxy:
        default = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(
        self, target: Target, args: tuple[Argument, ...], kwargs: dict[str, Any]
    ) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """The new GraphModule: the original's attributes, the graph the overrides built."""
        # ember functions called on proxies inside overrides (ember.neg(*args)) must record.
        with PatchSession() as session:
            session.install_ember()
            result = super().run(enable_io_processing=False)
        if result is not None:
            new_output = self.new_graph.output(
                map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a)
            )
            old_output = list(self.graph.nodes)[-1]
            new_output.meta.update(old_output.meta)
        return GraphModule(self.module, self.new_graph)
