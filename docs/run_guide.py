"""Run every ```python block of a guide in order, in one namespace, and check what it prints.

    uv run python docs/run_guide.py            # run, and compare with the guide's Output blocks
    uv run python docs/run_guide.py --update   # rewrite the Output blocks and the pictures

Run from anywhere. A check works in a scratch folder, so the checkout stays as it was (the
profiler's trace holds timings and would change on every run); ``--update`` works in ``docs/``,
where the blocks write their pictures under ``images/``. Object addresses print as ``0x...``.
"""

from __future__ import annotations

import contextlib
import io
import linecache
import os
import re
import sys
import tempfile
from pathlib import Path

GUIDE = Path(__file__).with_name("autograd-guide.md")
BLOCK = re.compile(r"```python\n(.*?)```(\n\nOutput:\n\n```text\n(.*?)```)?", re.DOTALL)
ADDRESS = re.compile(r"0x[0-9a-f]+")


def run(path: Path = GUIDE) -> list[tuple[str, str | None, str]]:
    """Execute the guide's blocks; (code, expected output or None, printed output) each."""
    namespace: dict = {"__name__": "__guide__"}
    results = []
    for i, match in enumerate(BLOCK.finditer(path.read_text())):
        code, expected = match.group(1), match.group(3)
        name = f"{path.name} block {i + 1}"
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile(code, name, "exec"), namespace)
        results.append((code, expected, ADDRESS.sub("0x...", buffer.getvalue())))
    return results


def update(path: Path = GUIDE) -> None:
    text = path.read_text()
    printed = iter(out for _code, _expected, out in run(path))

    def replace(match: re.Match) -> str:
        out = next(printed)
        if match.group(2) is None:
            return match.group(0)
        return f"```python\n{match.group(1)}```\n\nOutput:\n\n```text\n{out}```"

    path.write_text(BLOCK.sub(replace, text))


if __name__ == "__main__":
    if "--update" in sys.argv:
        os.chdir(GUIDE.parent)  # the pictures belong in docs/images, wherever this is started
        update()
    else:
        scratch = tempfile.TemporaryDirectory(prefix="ember-guide-")
        os.chdir(scratch.name)
        (Path(scratch.name) / "images").mkdir()
        failed = 0
        for i, (_code, expected, out) in enumerate(run(), start=1):
            if expected is not None and expected != out:
                failed += 1
                print(f"block {i}: expected\n{expected}got\n{out}")
        print("all outputs match" if not failed else f"{failed} blocks differ")
        sys.exit(1 if failed else 0)
