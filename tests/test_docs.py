"""docs/autograd-guide.md: every block runs, prints what the guide shows, and draws its pictures."""

import importlib.util
import re
import shutil
from pathlib import Path

DOCS = Path(__file__).parent.parent / "docs"


def _runner():
    spec = importlib.util.spec_from_file_location("run_guide", DOCS / "run_guide.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_guide_blocks_print_what_the_guide_shows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    results = _runner().run(DOCS / "autograd-guide.md")
    assert len(results) >= 14
    checked = 0
    for i, (_code, expected, printed) in enumerate(results, start=1):
        if expected is not None:
            assert printed == expected, f"block {i}"
            checked += 1
    assert checked == len(results)
    for name in ("graph-basics.dot", "graph-mlp.dot", "graph-mlp.html", "trace.json"):
        assert (tmp_path / "images" / name).stat().st_size > 0, name
    if shutil.which("dot"):
        assert (tmp_path / "images" / "graph-mlp.svg").read_text().lstrip().startswith("<?xml")


def test_pictures_the_guide_links_to_are_committed():
    text = (DOCS / "autograd-guide.md").read_text()
    linked = re.findall(r"\]\((images/[^)]+)\)", text)
    assert len(linked) >= 3
    for path in linked:
        assert (DOCS / path).exists(), path
