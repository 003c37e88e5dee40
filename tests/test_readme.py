"""README.md says what is true: its two commands are the ones CI runs, its test count is the
suite's, its commands hold no placeholders, and its "Not yet" list names nothing that works."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _first_block_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", README, re.DOTALL).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_opens_with_the_main_job_and_the_test_command():
    demo, tests = _first_block_commands()
    assert demo.endswith("ember demo")
    assert "pytest" in tests


def test_ci_runs_the_readmes_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    command = re.search(r"^TEST_COMMAND=\((.*)\)$", ci, re.MULTILINE).group(1)
    assert command == _first_block_commands()[1]


def test_commands_in_the_readme_have_no_placeholders():
    for block in re.findall(r"```bash\n(.*?)```", README, re.DOTALL):
        for line in block.splitlines():
            command = line.split("  #")[0]
            assert not re.search(r"<[A-Za-z][^>]*>", command), line


def test_the_test_count_the_readme_gives_is_the_suites():
    claimed = re.search(
        r"about ([\d,]+) tests without PyTorch and about ([\d,]+)\s+with it", README
    )
    assert claimed, "the README gives the size of the suite, without torch and with it"
    with_torch = importlib.util.find_spec("torch") is not None  # the conformance suite collects
    claimed = int(claimed.group(2 if with_torch else 1).replace(",", ""))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # pyproject's -q and this -q: one "file: count" line per test file
    counted = sum(int(n) for n in re.findall(r"^tests/\S+\.py: (\d+)$", done.stdout, re.M))
    assert abs(counted - claimed) <= 0.1 * counted, (claimed, counted)


def test_not_yet_names_nothing_that_works():
    not_yet = re.search(r"\*\*Not yet\*\*:(.*?)(?:\n\n|\n- )", README, re.DOTALL).group(1)
    import ember
    from ember.utils.data import DataLoader, TensorDataset

    # worker processes run (the README once listed them as missing)
    assert "worker" not in not_yet
    loader = DataLoader(TensorDataset(ember.arange(6.0)), batch_size=2, num_workers=2)
    assert [b[0].tolist() for b in loader] == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
