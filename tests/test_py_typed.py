"""``src/ember/py.typed``: ember's annotations are there for type checkers too (PEP 561)."""

from importlib import resources

import pytest


def test_the_package_says_it_is_typed():
    marker = resources.files("ember") / "py.typed"
    assert marker.is_file() and marker.read_text() == ""


def test_mypy_reads_embers_annotations_instead_of_refusing_them():
    api = pytest.importorskip("mypy.api")
    # --follow-imports=skip: only the check of the marker, not a type check of all of ember
    out, err, _ = api.run(["--follow-imports=skip", "-c", "import ember\nimport ember.nn\n"])
    assert "py.typed" not in out and "import-untyped" not in out, out + err
