"""The import knot, measured: strongly connected components of ember's import graph.

Every import statement counts, at module level and inside function bodies (an import moved
into a function hides a dependency but keeps it), and so does ``importlib.import_module`` with
a constant name. Relative imports are resolved; ``from pkg import name`` where ``name`` is a
submodule imports that submodule; importing a submodule imports its parent packages'
``__init__`` too, since Python runs them. The root ``ember/__init__`` is the exception by
default: Python has always started it before any ember module runs, so an edge to it from every
module would tie the whole tree into one trivial knot; an explicit ``import ember`` or
``from ember import tensor`` (a name defined in the root) still counts. ``--root-parent``
counts the root as a parent too. Likewise a package that holds the importing module (its own
``distributions/__init__`` for ``distributions.normal``) has started before that module ran:
``from . import constraints`` there runs ``constraints``, not the package's ``__init__`` again,
so it is no implicit parent of that module's imports (``--own-parents`` counts it; a name taken
from the package's ``__init__``, ``from . import Normal``, always counts). A package whose
``__init__`` imports nothing (``ops/__init__.py``: a docstring) joins no knot.

The layers are DESIGN.md's, from the bottom (see ``src/ember/README.md``); for each package
above the Tensor/op layer that sits in the largest knot, the script prints the imports from a
lower layer into it: the edges to cut (or to turn into a registration) to free it.

Run: .venv/bin/python benchmarks/import_knot.py [--root-parent | --no-root] [--own-parents]
    [--edges N]
"""

from __future__ import annotations

import argparse
import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = "ember"

# DESIGN.md's layers, by the first name under ember (a longer prefix wins: utils.tensorboard)
LAYER_NAMES = {
    1: "arrays",
    2: "autograd machinery",
    3: "Tensor and the op table",
    4: "namespaces",
    5: "systems",
    6: "CLI and the root package",
}
LAYER_OF = {
    **dict.fromkeys(
        "_backend _dtype _kernels _type_info _errors _settings _scratch torch_version version"
        " _memory_format _meta _autocast_state _random _layout _shared_memory"
        " _distributed_hook".split(),
        1,
    ),
    "autograd": 2,
    **dict.fromkeys(
        "_tensor _tensor_methods _tensor_misc_methods _tensor_repr _creation _factories _inplace"
        " ops _out _size_argument _method_functions _host_functions _op_namespace"
        " _legacy return_types _windows _random_ops types autograd.function".split(),
        3,
    ),
    **dict.fromkeys(
        "nn optim func linalg fft special sparse nested distributions utils fx random masked"
        " _functional_aliases"
        " quasirandom signal functional datasets _einops autograd.functional"
        " autograd.gradcheck".split(),
        4,
    ),
    **dict.fromkeys(
        "amp cuda cpu backends accelerator distributed multiprocessing onnx jit _compile"
        " profiler viz serialization testing futures _memory_scope"
        " utils.tensorboard utils.benchmark".split(),
        5,
    ),
    "cli": 6,
    "": 6,  # the root package's __init__: it gathers every layer into the public namespace
}
# the packages issue 31 names: none may stay in the knot
NAMED = "amp cuda sparse fft nn distributions linalg _random".split()


def discover(src: Path = SRC) -> dict:
    """module name -> (path, is_package) for every module under src/ember."""
    modules = {}
    for path in sorted((src / ROOT).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        modules[".".join(parts)] = (path, is_package)
    return modules


def _resolve(module: str, is_package: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _with_parents(
    name: str, modules: dict, root_parent: bool, importer: str = "", own_parents: bool = False
) -> list:
    """``name`` and the packages Python runs before it (those that are modules here). A package
    that holds ``importer`` has already started before ``importer`` ran (for the same reason
    as the root), so it is no implicit parent unless ``own_parents``."""
    out, parts = [], name.split(".")
    for i in range(len(parts), 0, -1):
        candidate = ".".join(parts[:i])
        if candidate == ROOT and i < len(parts) and not root_parent:
            continue
        own = candidate != ROOT and importer.startswith(candidate + ".")
        if own and i < len(parts) and not own_parents:
            continue
        if candidate in modules:
            out.append(candidate)
    return out


def imports_of(
    module: str, modules: dict, root_parent: bool = False, own_parents: bool = False
) -> dict:
    """target module -> first line where ``module`` imports it (every import, anywhere)."""
    path, is_package = modules[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: dict = {}

    def add(name: str, line: int) -> None:
        for target in _with_parents(name, modules, root_parent, module, own_parents):
            if target != module:
                found.setdefault(target, line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == ROOT:
                    add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            if base.split(".")[0] != ROOT:
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                # a submodule (its parents run first), or a name defined in base's __init__
                add(sub if sub in modules else base, node.lineno)
        elif isinstance(node, ast.Call):  # importlib.import_module("ember.x") / ("..x", pkg)
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name == "import_module" and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    text = arg.value
                    level = len(text) - len(text.lstrip("."))
                    target = _resolve(module, is_package, level, text.lstrip(".") or None)
                    if target.split(".")[0] == ROOT:
                        add(target, node.lineno)
    return found


def import_graph(root_parent: bool = False, src: Path = SRC, own_parents: bool = False) -> tuple:
    modules = discover(src)
    graph = {m: imports_of(m, modules, root_parent, own_parents) for m in modules}
    return modules, graph


def strongly_connected(graph: dict) -> list:
    """Tarjan's algorithm with an explicit stack: the components, largest first."""
    index: dict = {}
    low: dict = {}
    on_stack: set = set()
    stack: list = []
    components = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(graph[succ])))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return sorted(components, key=len, reverse=True)


def package_of(module: str) -> str:
    """The first name under ember (``""`` for the root package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of(module: str) -> int:
    parts = module.split(".")[1:]
    for i in range(len(parts), 0, -1):
        layer = LAYER_OF.get(".".join(parts[:i]))
        if layer is not None:
            return layer
    return LAYER_OF.get("", 6) if not parts else 3


def upward_edges(graph: dict, members: set) -> dict:
    """(higher package) -> [(importer, imported, line)]: imports inside the knot from a lower
    layer into a package above the Tensor/op layer."""
    edges = defaultdict(list)
    for importer in sorted(members, key=lambda m: (layer_of(m), m)):  # the lowest first
        for target, line in graph[importer].items():
            if target in members and layer_of(target) > layer_of(importer):
                if layer_of(target) > 3:
                    edges[package_of(target) or "(root)"].append((importer, target, line))
    return edges


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root-parent", action="store_true", help="count ember/__init__ too")
    parser.add_argument("--edges", type=int, default=8, help="edges shown per package")
    parser.add_argument(
        "--no-root", action="store_true", help="drop every import of the root package"
    )
    parser.add_argument(
        "--own-parents",
        action="store_true",
        help="count a package's __init__ as a parent of its own members' imports too",
    )
    args = parser.parse_args(argv)
    modules, graph = import_graph(args.root_parent, own_parents=args.own_parents)
    if args.no_root:
        graph = {m: {t: n for t, n in ts.items() if t != ROOT} for m, ts in graph.items()}
    components = strongly_connected(graph)
    knot = components[0]
    members = set(knot)
    n_edges = sum(len(v) for v in graph.values())
    print(f"modules: {len(modules)}   import edges: {n_edges}")
    cyclic = [c for c in components if len(c) > 1]
    sizes = [len(c) for c in cyclic]
    print(f"knots (components of more than one module): {len(cyclic)}, sizes {sizes}")
    print(f"largest knot: {len(knot)} modules")
    by_package = defaultdict(list)
    for m in knot:
        by_package[package_of(m) or "(root)"].append(m)
    for package, names in sorted(by_package.items(), key=lambda kv: (layer_of(kv[1][0]), kv[0])):
        short = ", ".join(n.split(".", 1)[1] if "." in n else n for n in names)
        print(f"  [{layer_of(names[0])}] {package} ({len(names)}): {short}")
    named_in = [p for p in NAMED if p in by_package]
    print(f"named packages in the knot: {', '.join(named_in) or 'none'}")
    higher = sorted(p for p, ns in by_package.items() if layer_of(ns[0]) > 3)
    print(f"packages above the Tensor/op layer in the knot: {', '.join(higher) or 'none'}")
    print("\nimports from a lower layer into each of them (what keeps it in the knot):")
    for package, edges in sorted(upward_edges(graph, members).items(), key=lambda kv: -len(kv[1])):
        print(f"  {package}: {len(edges)} edges")
        for importer, target, line in edges[: args.edges]:
            print(f"    {importer}:{line} -> {target}")
        if len(edges) > args.edges:
            print(f"    ... {len(edges) - args.edges} more")

    # what cutting them would leave: every import from the bottom three layers upward removed
    core_cut = {
        m: {t: line for t, line in targets.items() if layer_of(m) > 3 or layer_of(t) <= 3}
        for m, targets in graph.items()
    }
    cut_knot = strongly_connected(core_cut)[0]
    cut_packages = sorted({package_of(m) or "(root)" for m in cut_knot if layer_of(m) > 3})
    print(
        f"\nwith every import from layers 1-3 into a higher layer cut: largest knot "
        f"{len(cut_knot)} modules; packages above the Tensor/op layer in it: "
        f"{', '.join(cut_packages) or 'none'}"
    )


if __name__ == "__main__":
    main()
