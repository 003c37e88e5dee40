"""Turning a ``Graph`` into the Python source of a ``forward`` function.

One line per node, in graph order: operators as operators (``add = x + y``), methods as
methods (``view = x.view(-1)``), submodules and attributes through ``self``, ember's functions
by their public path (``relu = ember.relu(x)``). After a value's last use the line that used
it releases it (``;  x = None``) so the forward holds no more memory than eager code would.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._naming import CUSTOM_BUILTINS, _Namespace, ember_path, qualified_name
from ._wrap import wrap
from .node import Node, _type_repr

if TYPE_CHECKING:
    from .graph import Graph

# operator.<name> printed as Python syntax
REFLECTABLE_MAGIC_METHODS = {
    "add": "{} + {}",
    "sub": "{} - {}",
    "mul": "{} * {}",
    "floordiv": "{} // {}",
    "truediv": "{} / {}",
    "div": "{} / {}",
    "mod": "{} % {}",
    "pow": "{} ** {}",
    "lshift": "{} << {}",
    "rshift": "{} >> {}",
    "and_": "{} & {}",
    "or_": "{} | {}",
    "xor": "{} ^ {}",
    "getitem": "{}[{}]",
    "matmul": "{} @ {}",
}
MAGIC_METHODS = {
    "eq": "{} == {}",
    "ne": "{} != {}",
    "lt": "{} < {}",
    "gt": "{} > {}",
    "le": "{} <= {}",
    "ge": "{} >= {}",
    "pos": "+{}",
    "neg": "-{}",
    "invert": "~{}",
    **REFLECTABLE_MAGIC_METHODS,
}
INPLACE_METHODS = {
    "iadd": "{} += {}",
    "iand": "{} &= {}",
    "ifloordiv": "{} //= {}",
    "ilshift": "{} <<= {}",
    "imod": "{} %= {}",
    "imul": "{} *= {}",
    "imatmul": "{} @= {}",
    "ior": "{} |= {}",
    "ipow": "{} **= {}",
    "irshift": "{} >>= {}",
    "isub": "{} -= {}",
    "itruediv": "{} /= {}",
    "ixor": "{} ^= {}",
    "setitem": "{}[{}] = {}",
}

# The short dtype names of annotated code (print_readable after ShapeProp): f32[2, 3]
_DTYPE_ABBREVIATIONS = {
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "complex64": "c64",
    "complex128": "c128",
    "bool": "b8",
}


def dtype_abbreviation(dtype: Any) -> str:
    name = str(dtype).rsplit(".", 1)[-1]
    return _DTYPE_ABBREVIATIONS.get(name, name)


@dataclass
class PythonCode:
    """Generated source and the globals it runs with."""

    src: str
    globals: dict[str, Any]
    # line of src -> index of the node that wrote it (for error messages)
    _lineno_map: dict[int, int | None] | None = None


def format_target(base: str, target: str) -> str:
    """``self.fc1``, or ``getattr(self.layers, "0")`` for path atoms that are not names."""
    result = base
    for atom in target.split("."):
        result = f"{result}.{atom}" if atom.isidentifier() else f'getattr({result}, "{atom}")'
    return result


_COUNTER = re.compile(r"# COUNTER: (\d+)")


class CodeGen:
    """Writes a graph as the source of ``forward(self, ...)``. Subclass to change the
    signature or the return statement."""

    def __init__(self) -> None:
        self._body_transformer: Callable[[list[str]], list[str]] | None = None
        self._func_name = "forward"

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
        if not free_vars or free_vars[0] != "self":
            free_vars.insert(0, "self")
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args: Any, repr_fn: Callable[[object], str] = repr) -> str:
        return f"return {repr_fn(output_args)}"

    def process_inputs(self, *args: Any) -> Any:
        return args

    def process_outputs(self, outputs: Any) -> Any:
        return outputs

    def additional_globals(self) -> list[tuple[str, Any]]:
        return []

    def gen_python_code(
        self, graph: Graph, root_module: str, namespace: _Namespace, *, verbose: bool = False
    ) -> PythonCode:
        return _Writer(self, graph, root_module, namespace, verbose).write()


class _Writer:
    """One code generation: the body lines, the globals they need, the free variables."""

    def __init__(
        self, codegen: CodeGen, graph: Graph, root_module: str, namespace: _Namespace, verbose: bool
    ):
        self.codegen = codegen
        self.graph = graph
        self.root_module = root_module
        self.namespace = namespace
        self.verbose = verbose
        self.free_vars: list[str] = []
        self.body: list[str] = []
        self.globals: dict[str, Any] = {}
        self.wrapped_fns: dict[str, None] = {}
        self.return_annotation = ""
        self.previous_summary: str | None = None
        for name, builtin in CUSTOM_BUILTINS.items():
            self.globals[self.namespace.create_name(name, builtin.obj)] = builtin.obj

    def add_global(self, name_hint: str, obj: Any) -> str:
        """The name generated code uses for ``obj``: ember's objects by their path, others
        through a global of the generated function."""
        path = ember_path(obj)
        if path is not None:
            return path
        name = self.namespace.create_name(name_hint, obj)
        if name in self.globals and self.globals[name] is not obj:
            raise RuntimeError(f"global name {name} already assigned to a different object")
        self.globals[name] = obj
        return name

    def type_repr(self, o: object) -> str:
        if o == ():
            return "()"
        origin = getattr(o, "__origin__", None)
        if origin is not None:
            args = getattr(o, "__args__", ())
            origin_name = self.add_global(_type_repr(origin), origin)
            return (
                f"{origin_name}[{','.join(self.type_repr(a) for a in args)}]"
                if args
                else origin_name
            )
        return self.add_global(_type_repr(o), o)

    def repr_arg(self, arg: object) -> str:
        if isinstance(arg, Node):
            return repr(arg)
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            name = self.add_global(qualified_name(type(arg)), type(arg))
            return f"{name}{tuple(arg)!r}"
        if isinstance(arg, enum.Enum):
            cls = self.add_global(type(arg).__name__, type(arg))
            return f"{cls}.{arg.name}"
        if isinstance(arg, tuple):
            if len(arg) == 1:
                return f"({self.repr_arg(arg[0])},)"
            return "(" + ", ".join(self.repr_arg(a) for a in arg) + ")"
        if isinstance(arg, list):
            return "[" + ", ".join(self.repr_arg(a) for a in arg) + "]"
        if isinstance(arg, slice):
            parts = (self.repr_arg(arg.start), self.repr_arg(arg.stop), self.repr_arg(arg.step))
            return f"slice({', '.join(parts)})"
        if isinstance(arg, type):
            return self.type_repr(arg)
        return repr(arg)

    def format_args(self, args: tuple, kwargs: dict) -> str:
        parts = [self.repr_arg(a) for a in args]
        parts.extend(f"{k} = {self.repr_arg(v)}" for k, v in kwargs.items())
        return ", ".join(parts)

    def annotation(self, node: Node) -> str:
        if self.verbose:
            meta = node.meta.get("tensor_meta")
            shape = getattr(meta, "shape", None)
            if shape is not None and hasattr(meta, "dtype"):
                return f': "{dtype_abbreviation(meta.dtype)}[{", ".join(str(s) for s in shape)}]"'
        return "" if node.type is None else f" : {self.type_repr(node.type)}"

    def stack_summary(self, node: Node) -> None:
        if node.op in ("placeholder", "output"):
            return
        trace = node.stack_trace
        if trace:
            lines = [line.strip() for line in trace.strip().splitlines()]
            where = lines[-2] if len(lines) >= 2 else lines[-1]
            code = lines[-1] if len(lines) >= 2 else ""
            summary = f"\n# {where.replace('File ', 'File: ', 1)}, code: {code}\n"
        else:
            summary = "\n# No stacktrace found for following nodes\n"
        if summary != self.previous_summary:
            self.previous_summary = summary
            self.body.append(summary)

    def emit(self, node: Node) -> None:
        annotation = self.annotation(node)
        name = repr(node)
        if node.op == "placeholder":
            default = f" = {self.repr_arg(node.args[0])}" if node.args else ""
            self.free_vars.append(f"{node.target}{annotation}{default}")
            raw_name = node.target.replace("*", "")
            if raw_name != name:
                self.body.append(f"{name} = {raw_name}\n")
            return
        if node.op == "call_method":
            receiver = format_target(self.repr_arg(node.args[0]), node.target)
            self.body.append(
                f"{name}{annotation} = {receiver}({self.format_args(node.args[1:], node.kwargs)})"
            )
            return
        if node.op == "call_function":
            target = node.target
            op_name = getattr(target, "__name__", "")
            if getattr(target, "__module__", "") == "_operator" and op_name in MAGIC_METHODS:
                text = MAGIC_METHODS[op_name].format(*(self.repr_arg(a) for a in node.args))
                self.body.append(f"{name}{annotation} = {text}")
                return
            if getattr(target, "__module__", "") == "_operator" and op_name in INPLACE_METHODS:
                text = INPLACE_METHODS[op_name].format(*(self.repr_arg(a) for a in node.args))
                self.body.append(f"{text};  {name}{annotation} = {self.repr_arg(node.args[0])}")
                return
            global_name = self.add_global(qualified_name(target), target)
            if (
                global_name == "getattr"
                and len(node.args) == 2
                and isinstance(node.args[1], str)
                and node.args[1].isidentifier()
            ):
                attribute = format_target(self.repr_arg(node.args[0]), node.args[1])
                self.body.append(f"{name}{annotation} = {attribute}")
                return
            self.body.append(
                f"{name}{annotation} = {global_name}({self.format_args(node.args, node.kwargs)})"
            )
            if node.meta.get("is_wrapped", False):
                self.wrapped_fns.setdefault(global_name)
            return
        if node.op == "call_module":
            module = format_target(self.root_module, node.target)
            self.body.append(
                f"{name}{annotation} = {module}({self.format_args(node.args, node.kwargs)})"
            )
            return
        if node.op == "get_attr":
            self.body.append(f"{name}{annotation} = {format_target(self.root_module, node.target)}")
            return
        if node.op == "output":
            if node.type is not None:
                self.return_annotation = f" -> {self.type_repr(node.type)}"
            self.body.append(self.codegen.generate_output(node.args[0], repr_fn=self.repr_arg))
            return
        raise NotImplementedError(f"node: {node.op} {node.target}")

    def write(self) -> PythonCode:
        nodes = list(self.graph.nodes)
        # The first use seen walking backwards is a value's last use: free it there.
        last_use: dict[Node, Node] = {}
        frees: dict[Node, list[Node]] = {}
        for node in reversed(nodes):
            for used in node._input_nodes:
                if used not in last_use:
                    last_use[used] = node
                    frees.setdefault(node, []).append(used)

        for index, node in enumerate(nodes):
            if self.verbose:
                self.stack_summary(node)
            self.body.append(f"# COUNTER: {index}\n")
            self.emit(node)
            if node.op == "placeholder":
                continue
            if node.op == "output":
                self.body.append("\n")
                continue
            to_free = list(frees.get(node, []))
            if not node.users:  # kept for its side effect: release its value at once
                to_free.append(node)
            if to_free:
                self.body.append(f";  {' = '.join([repr(n) for n in to_free] + ['None'])}\n")
            else:
                self.body.append("\n")

        if not [line for line in self.body if not _COUNTER.match(line)]:
            self.body.append("pass\n")
        wrap_stmts = ""
        if self.wrapped_fns:
            wrap_name = self.add_global("wrap", wrap)
            wrap_stmts = "\n".join(f'{wrap_name}("{name}")' for name in self.wrapped_fns)
        body = self.body
        if self.codegen._body_transformer is not None:
            body = self.codegen._body_transformer(body)
        for name, value in self.codegen.additional_globals():
            self.add_global(name, value)
        prologue = self.codegen.gen_fn_def(self.free_vars, self.return_annotation)

        lineno_map: dict[int, int | None] = {}
        prologue_len = prologue.count("\n") + 1
        lines: list[str] = []
        current = None
        for line in "".join(body).split("\n"):
            counter = _COUNTER.search(line)
            if counter is not None:
                current = int(counter.group(1))
            else:
                lineno_map[len(lines) + prologue_len] = current
                lines.append(line)
        code = "\n".join(lines).lstrip("\n")
        code = "\n".join("    " + line for line in code.split("\n"))
        src = f"\n{wrap_stmts}\n\n{prologue}\n{code}"
        return PythonCode(src, self.globals, lineno_map)
