"""``GraphModule``: an ``nn.Module`` whose forward is the Python code generated from a Graph.

It holds the submodules, parameters and buffers the graph's ``call_module`` and ``get_attr``
nodes name (copied from the traced root, so its ``state_dict`` has the root's keys), and
``recompile()`` turns the current graph into ``code`` and ``forward``.
"""

from __future__ import annotations

import copy
import itertools
import linecache
import os
import warnings
from pathlib import Path
from typing import Any

import ember

from .. import nn
from .._tensor import Tensor
from ..nn.modules.module import _addindent
from ._codegen import PythonCode
from ._naming import CUSTOM_BUILTINS
from .graph import Graph

__all__ = ["GraphModule", "reduce_graph_module"]

_source_counter = itertools.count()


def _exec_with_source(src: str, globals_: dict[str, Any]) -> None:
    """Run generated source under a fake file name that tracebacks can show lines of."""
    key = f"<eval_with_key>.{next(_source_counter)}"
    linecache.cache[key] = (len(src), None, src.splitlines(keepends=True), key)
    exec(compile(src, key, "exec", dont_inherit=True), globals_)


def _forward_from_src(src: str, globals_: dict[str, Any]):
    scope = dict(globals_)
    _exec_with_source(src, scope)
    return scope["forward"]


def _copy_attr(from_module: nn.Module, to_module: nn.Module, target: str) -> None:
    """Give ``to_module`` the object at dotted ``target`` of ``from_module`` (making empty
    Modules along the path); tensors that are not parameters become buffers."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return  # already installed, with everything below it
        if t is None:
            t = nn.Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    original = getattr(from_module, field)
    if isinstance(original, Tensor) and not isinstance(original, nn.Parameter):
        to_module.register_buffer(field, original)
    else:
        setattr(to_module, field, original)


def _assign_attr(from_obj: Any, to_module: nn.Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = nn.Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, Tensor) and not isinstance(from_obj, nn.Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


def _get_attr(model: nn.Module, attr_name: str) -> Any:
    value: Any = model
    for atom in attr_name.split("."):
        value = getattr(value, atom)
    return value


class _CodeOnlyModule(nn.Module):
    """A module made of a saved GraphModule's state, to re-trace its generated forward."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__()
        self.__dict__ = body


def _format_import_statement(name: str, obj: Any) -> str:
    if name in CUSTOM_BUILTINS:
        return CUSTOM_BUILTINS[name].import_str
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", getattr(obj, "__name__", None))
    if module is None or qualname is None:
        raise RuntimeError(
            f"cannot save a GraphModule whose code uses {obj!r}: it has no importable name"
        )
    return f"from {module} import {qualname} as {name}"


def _import_block(globals_: dict[str, Any]) -> str:
    return "\n".join(
        sorted({_format_import_statement(name, obj) for name, obj in globals_.items()})
    )


def reduce_graph_module(body: dict[str, Any], import_block: str) -> GraphModule:
    """Rebuild a pickled GraphModule: re-trace its generated code over its saved state."""
    forward = _forward_from_src(import_block + body["_code"], {})
    return _deserialize_graph_module(forward, body)


def _deserialize_graph_module(forward, body: dict[str, Any]) -> GraphModule:
    from ._symbolic_trace import Tracer

    class CodeOnly(_CodeOnlyModule):
        pass

    CodeOnly.forward = forward
    tracer_cls = body.get("_tracer_cls") or Tracer

    class KeepModules(tracer_cls):
        def is_leaf_module(self, _: nn.Module, __: str) -> bool:
            return True

    com = CodeOnly(body)
    graph = KeepModules().trace(com)
    graph._tracer_cls = tracer_cls
    gm = GraphModule(com, graph, class_name=body.get("_graphmodule_cls_name", "GraphModule"))
    for k, v in body.items():
        if not hasattr(gm, k):
            setattr(gm, k, v)
    return gm


class GraphModule(nn.Module):
    """An ``nn.Module`` generated from a ``Graph``: ``graph``, ``code``, ``forward``.

    ``root`` is the module (or a dict of dotted names to objects) the graph's ``get_attr``
    and ``call_module`` targets are copied from. Assigning ``graph`` regenerates the code;
    after editing the graph in place, call ``recompile()``.

    Example::
        >>> import ember, ember.fx
        >>> gm = ember.fx.symbolic_trace(lambda x: x * 2)
        >>> gm(ember.tensor([1.0, 2.0]))
        tensor([2., 4.])
    """

    def __new__(cls, *args: Any, **kwargs: Any):
        # Each instance gets its own class, so that recompile() can set forward on it.
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):  # type: ignore[valid-type, misc]
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(
        self, root: nn.Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule"
    ) -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, nn.Module):
            self.training = root.training
            if isinstance(root, _CodeOnlyModule):
                for k, _ in root.named_children():
                    _copy_attr(root, self, k)
                for k, _ in root.named_buffers():
                    _copy_attr(root, self, k)
                for k, _ in root.named_parameters():
                    _copy_attr(root, self, k)
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(
                            f"Node {node} referenced target {node.target} but that target was "
                            "not provided in ``root``!"
                        )
                    targets.append(node.target)
            for target in sorted(targets, key=lambda t: t.count(".")):
                _assign_attr(root[target], self, target)
        else:
            raise RuntimeError(f"Unsupported type {root} passed for root!")
        self.graph = graph
        tracer_cls = graph._tracer_cls
        self._tracer_cls = (
            tracer_cls if tracer_cls and "<locals>" not in tracer_cls.__qualname__ else None
        )
        self._tracer_extras = graph._tracer_extras or {}
        self.meta: dict[str, Any] = {}

    @property
    def graph(self) -> Graph:
        """The graph; assigning one regenerates ``code`` and ``forward``."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise TypeError(f"Expected a Graph instance, but got {type(g).__name__}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of the generated ``forward``."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated yet: call recompile()")
        return self._code

    def recompile(self) -> PythonCode:
        """Regenerate ``code`` and ``forward`` from ``graph``; call after editing the graph."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        self._lineno_map = python_code._lineno_map
        type(self).forward = _forward_from_src(self._code, python_code.globals)
        for _, child in self.named_children():
            if isinstance(child, GraphModule):
                child.recompile()
        return python_code

    # --- submodules ---------------------------------------------------------------------------
    def add_submodule(self, target: str, m: nn.Module) -> bool:
        """Install ``m`` at dotted ``target``, making empty Modules on the way; False when a
        step of the path is not a Module."""
        *prefix, field = target.split(".")
        mod: nn.Module = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = nn.Module()
                setattr(mod, item, submod)
            if not isinstance(submod, nn.Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at dotted ``target``; False when there is none."""
        *path, name = target.split(".")
        mod: Any = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, nn.Module):
                return False
        if not isinstance(getattr(mod, name, None), nn.Module):
            return False
        delattr(mod, name)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove the submodules no ``call_module`` or ``get_attr`` node reaches."""
        used: set[str] = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                used.update(".".join(atoms[: i + 1]) for i in range(len(atoms)))
                if node.op == "call_module":
                    try:
                        submod = self.get_submodule(node.target)
                    except AttributeError:
                        continue
                    used.update(
                        f"{node.target}.{name}" for name, _ in submod.named_modules() if name
                    )
        for name in [name for name, _ in self.named_modules() if name and name not in used]:
            self.delete_submodule(name)

    # --- saving -------------------------------------------------------------------------------
    def to_folder(self, folder: str | os.PathLike, module_name: str = "FxModule") -> None:
        """Write ``module.py`` (a class ``module_name``), ``__init__.py`` and the state to
        ``folder``, importable with ``from <folder> import <module_name>``."""
        folder = Path(folder)
        folder.mkdir(exist_ok=True)
        ember.save(self.state_dict(), folder / "state_dict.pt")
        tab = " " * 4
        builtins_block = "\n".join(b.import_str for b in CUSTOM_BUILTINS.values())
        model_str = f"""
import ember
{builtins_block}

from ember.nn import *
class {module_name}(ember.nn.Module):
    def __init__(self):
        super().__init__()
"""
        safe_reprs = (
            nn.Linear,
            nn.Conv1d,
            nn.Conv2d,
            nn.Conv3d,
            nn.BatchNorm1d,
            nn.BatchNorm2d,
            nn.BatchNorm3d,
        )
        blobified: list[str] = []
        for name, module in self.named_children():
            if type(module) in safe_reprs:
                model_str += f"{tab * 2}setattr(self, '{name}', {module!r})\n"
            else:
                module_file = folder / f"{name}.pt"
                ember.save(module, module_file)
                blobified.append(name)
                module_repr = repr(module).replace("\r", " ").replace("\n", " ")
                load = f"ember.load(r'{module_file}', weights_only=False)"
                model_str += f"{tab * 2}setattr(self, '{name}', {load}) # {module_repr}\n"
        for name, buffer in self._buffers.items():
            if buffer is not None:
                empty = f"ember.empty({list(buffer.shape)}, dtype={buffer.dtype})"
                model_str += f"{tab * 2}self.register_buffer('{name}', {empty})\n"
        for name, param in self._parameters.items():
            if param is not None:
                empty = f"ember.empty({list(param.shape)}, dtype={param.dtype})"
                model_str += f"{tab * 2}setattr(self, '{name}', ember.nn.Parameter({empty}))\n"
        model_str += f"{tab * 2}self.load_state_dict(ember.load(r'{folder}/state_dict.pt'))\n"
        model_str += f"{_addindent(self.code, 4)}\n"
        (folder / "module.py").write_text(model_str)
        (folder / "__init__.py").write_text("from .module import *")
        if blobified:
            warnings.warn(
                "Was not able to save the following children modules as reprs -saved as "
                f"pickled files instead: {blobified}",
                stacklevel=2,
            )

    def __reduce__(self):
        body = self.__dict__.copy()
        python_code = self.recompile()
        body["_graphmodule_cls_name"] = type(self).__name__
        del body["_graph"]
        return (reduce_graph_module, (body, _import_block(python_code.globals)))

    def __deepcopy__(self, memo: dict[int, Any]) -> GraphModule:
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake_mod = _CodeOnlyModule(copy.deepcopy(self.__dict__, memo))
        GraphModule.__init__(res, fake_mod, fake_mod.__dict__["_graph"], type(self).__name__)
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return res

    def __copy__(self) -> GraphModule:
        res = GraphModule(self, self.graph, type(self).__name__)
        res.meta = getattr(self, "meta", {})
        return res

    # --- printing -----------------------------------------------------------------------------
    def print_readable(self, print_output: bool = True) -> str:
        """The generated code as a class, annotated with shapes where ``ShapeProp`` ran, with
        GraphModule children nested; printed unless ``print_output=False``."""
        output = _print_readable(self, self._get_name())
        if print_output:
            print(output)
        return output

    def __str__(self) -> str:
        reminder = "# To see more debug info, please use `graph_module.print_readable()`"
        return "\n".join([super().__str__(), self._code, reminder])


def _print_readable(module: GraphModule, module_name: str) -> str:
    code = module.graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
    text = _addindent(f"class {module_name}(ember.nn.Module):\n" + code, 4)
    children = [""]
    for name, child in module.named_children():
        if isinstance(child, GraphModule):
            children.append(_print_readable(child, name))
    return text + _addindent("\n".join(children), 4)
