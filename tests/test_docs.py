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


def test_running_the_guide_as_a_script_leaves_the_checkout_as_it_was():
    import subprocess
    import sys

    def files():
        return {
            p: p.read_bytes()
            for p in DOCS.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }

    before = files()
    done = subprocess.run(
        [sys.executable, str(DOCS / "run_guide.py")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "all outputs match" in done.stdout
    after = files()
    assert after.keys() == before.keys()
    assert [p for p in after if after[p] != before[p]] == []
