"""``ember.functional`` as ``torch.functional``, and ``ember.serialization`` reachable as an
attribute after ``import ember`` (programs write ``torch.serialization.safe_globals(...)``)."""

import subprocess
import sys

import ember


def test_functional_offers_the_top_level_functions_themselves():
    from ember.functional import einsum, split

    assert einsum is ember.einsum and split is ember.split
    for name in ember.functional.__all__:
        assert getattr(ember.functional, name) is getattr(ember, name), name
    x = ember.arange(6.0)
    assert [t.tolist() for t in ember.functional.split(x, 4)] == [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0]]


def test_functional_names_are_torchs(torch_mod):
    assert sorted(ember.functional.__all__) == sorted(torch_mod.functional.__all__)


def test_serialization_is_an_attribute_after_import_ember():
    code = (
        "import ember as torch\n"
        "with torch.serialization.safe_globals([]):\n"
        "    pass\n"
        "print(torch.serialization.add_safe_globals.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "add_safe_globals"
