"""Every public op's facts (derivative, forward rule, autocast category, ONNX symbolic) against
the checked-in table ``tests/op_facts.txt``: an op that gains or loses a fact, or a new public
function without a line, fails here until the table is regenerated (and reviewed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import op_facts


@pytest.fixture(scope="module")
def computed() -> dict:
    # in a fresh interpreter: the probes must see ember as a program imports it, not as the
    # tests that ran before left it (patched functions, fake modules, changed settings)
    script = "import json; from tests import op_facts; print(json.dumps(op_facts.compute()))"
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def _facts_only(facts):
    return facts if isinstance(facts, str) else {k: facts[k] for k in op_facts.FACTS}


def test_every_public_function_has_a_line_with_its_current_facts(computed):
    table = op_facts.read_table()
    problems = []
    for path in sorted(set(computed) | set(table)):
        if path not in table:
            problems.append(f"{path}: new public function, no line ({computed[path]})")
        elif path not in computed:
            problems.append(f"{path}: in the table but no longer public")
        elif _facts_only(computed[path]) != table[path][0]:
            problems.append(f"{path}: table {table[path][0]}, now {_facts_only(computed[path])}")
    assert not problems, (
        f"{len(problems)} ops' facts differ from tests/op_facts.txt; if the change is meant, "
        f"run `{op_facts.REGENERATE}` (reasons already written are kept), review the diff "
        "and give each new missing fact a reason:\n  " + "\n  ".join(problems[:30])
    )


def test_every_missing_fact_has_a_reason():
    unexplained = [
        f"{path}: {fact}"
        for path, (facts, reasons) in op_facts.read_table().items()
        if not isinstance(facts, str)
        for fact, token in facts.items()
        if token == "-" and not reasons.get(fact)
    ]
    assert not unexplained, unexplained[:20]


def test_known_ops_get_their_known_facts(computed):
    assert computed["ember.exp"] == {
        "grad": "node",
        "fwd": "elementwise",
        "amp": "fp32/-",
        "onnx": "symbolic",
    }
    assert computed["ember.nn.functional.linear"]["amp"] == "lower/lower"
    assert computed["ember.argmax"]["grad"] == "-"
    assert computed["ember.argmax"].get("integer_output") is True
    assert computed["ember.zeros_like"]["grad"] == "-"
    assert computed["ember.zeros"].startswith("not an op")
    assert computed["ember.softmax"]["fwd"] == "rule"  # its own JVP in forward_rules.RULES
    assert computed["ember.bitwise_and"]["grad"] == "-"  # probed on integers
    assert computed["ember.equal"] == "not an op: returns a bool"
    assert computed["ember.positive"]["grad"] == "input"


def test_probing_the_ops_leaves_the_process_as_it_found_it(computed):
    import ember

    state = ember.get_rng_state()
    op_facts.compute()
    assert ember.is_grad_enabled() and ember.get_default_dtype() == ember.float32
    assert ember.equal(ember.get_rng_state(), state)  # the probes' draws are undone


def test_a_line_reads_back_as_written():
    facts = {"grad": "node", "fwd": "rule+vjp", "amp": "-", "onnx": "-"}
    line = op_facts.format_line("ember.x", facts, {"onnx": "todo"})
    assert line == "ember.x | grad: node | fwd: rule+vjp | amp: - runs as called | onnx: - todo"
    path, read, reasons = op_facts.parse_line(line)
    assert (path, read, reasons) == ("ember.x", facts, {"amp": "runs as called", "onnx": "todo"})
