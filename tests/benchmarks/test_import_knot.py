"""benchmarks/import_knot.py: every kind of import becomes an edge, and the knot is found."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def knot():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import import_knot
    finally:
        sys.path.remove(str(BENCHMARKS))
    return import_knot


def _tree(root: Path, files: dict) -> Path:
    for name, text in files.items():
        path = root / "ember" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


FILES = {
    "__init__.py": "from . import a\n",
    "a.py": "from .ops import kernel\n",  # ops: a namespace package, no __init__.py
    "ops/kernel.py": "def f():\n    from ..nn import functional\n",  # inside a function
    "nn/__init__.py": "",
    "nn/functional.py": "from ember import a\n",
    "b.py": "import ember\nimport importlib\nimportlib.import_module('ember.nn.functional')\n",
}


def test_every_import_form_is_an_edge(knot, tmp_path):
    modules, graph = knot.import_graph(src=_tree(tmp_path, FILES))
    assert "ember.ops" not in modules and len(modules) == 6
    assert set(graph["ember.a"]) == {"ember.ops.kernel"}
    # a submodule named in `from pkg import name`, and its parent package's __init__
    assert set(graph["ember.ops.kernel"]) == {"ember.nn.functional", "ember.nn"}
    assert graph["ember.ops.kernel"]["ember.nn.functional"] == 2
    assert set(graph["ember.nn.functional"]) == {"ember.a"}  # not the root: a is a module
    assert set(graph["ember.b"]) == {"ember", "ember.nn.functional", "ember.nn"}


def test_the_knot_and_the_upward_edges_that_hold_it(knot, tmp_path):
    _, graph = knot.import_graph(src=_tree(tmp_path, FILES))
    components = knot.strongly_connected(graph)
    assert components[0] == ["ember.a", "ember.nn.functional", "ember.ops.kernel"]
    assert all(len(c) == 1 for c in components[1:])
    edges = knot.upward_edges(graph, set(components[0]))
    assert dict(edges) == {"nn": [("ember.ops.kernel", "ember.nn.functional", 2)]}


def test_root_parent_counts_the_root_package_for_every_module(knot, tmp_path):
    _, graph = knot.import_graph(root_parent=True, src=_tree(tmp_path, FILES))
    assert "ember" in graph["ember.a"]
    # the root imports a, so it joins the knot; nn's __init__ and b are not reached from it
    first = knot.strongly_connected(graph)[0]
    assert first == ["ember", "ember.a", "ember.nn.functional", "ember.ops.kernel"]


def test_a_cycle_of_twenty_thousand_modules_needs_no_recursion(knot):
    n = 20_000
    graph = {i: {(i + 1) % n: 0} for i in range(n)}
    graph[n] = {0: 0}  # a tail into the cycle, outside it
    components = knot.strongly_connected(graph)
    assert len(components[0]) == n and components[1] == [n]


PACKAGE = {
    "__init__.py": "",
    "dist/__init__.py": "from .normal import Normal\nfrom .kl import kl\n",
    "dist/normal.py": "from . import constraints\nclass Normal: pass\n",
    "dist/constraints.py": "",
    "dist/kl.py": "from . import Normal\n",  # a name defined in the package's __init__
    "nn/user.py": "from ..dist import constraints\n",
}


def test_a_members_own_package_is_no_implicit_parent(knot, tmp_path):
    _, graph = knot.import_graph(src=_tree(tmp_path, PACKAGE))
    # normal's sibling import runs constraints, not dist/__init__ (already started)
    assert set(graph["ember.dist.normal"]) == {"ember.dist.constraints"}
    assert set(graph["ember.dist.kl"]) == {"ember.dist"}  # a name of the __init__ counts
    assert set(graph["ember.nn.user"]) == {"ember.dist.constraints", "ember.dist"}  # outside
    assert knot.strongly_connected(graph)[0] == ["ember.dist", "ember.dist.kl"]
    _, counted = knot.import_graph(src=_tree(tmp_path, PACKAGE), own_parents=True)
    assert set(counted["ember.dist.normal"]) == {"ember.dist.constraints", "ember.dist"}
    assert len(knot.strongly_connected(counted)[0]) == 3  # dist, normal, kl
