"""The two checked-in lists that say which disagreements with torch are expected.

``deliberate_differences.txt``: where ember differs on purpose, each with the reason.
    ``<op> <category> [dtype=<name>] <reason>``; ``*`` as the op matches every op.
``known_failures.txt``: disagreements still to fix, keyed by op and category.
    ``<op> <category> <reason>``; an entry whose op now agrees fails the suite, so the list
    can only shrink.
Lines starting with ``#`` and blank lines are comments.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

HERE = Path(__file__).parent
DELIBERATE_FILE = HERE / "deliberate_differences.txt"
KNOWN_FILE = HERE / "known_failures.txt"


@dataclasses.dataclass(frozen=True)
class Entry:
    op: str
    category: str
    dtype: str | None
    reason: str


def _parse(path: Path) -> list[Entry]:
    entries = []
    if not path.exists():
        return entries
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 3)
        if len(parts) < 3:
            raise ValueError(f"{path.name}:{number}: expected '<op> <category> <reason>': {line!r}")
        op, category, *rest = parts
        dtype = None
        if rest[0].startswith("dtype="):
            dtype = rest.pop(0)[len("dtype=") :]
        entries.append(Entry(op, category, dtype, " ".join(rest)))
    return entries


@functools.cache
def deliberate() -> list[Entry]:
    return _parse(DELIBERATE_FILE)


@functools.cache
def known() -> dict[tuple[str, str], Entry]:
    return {(e.op, e.category): e for e in _parse(KNOWN_FILE)}


def deliberate_for(op: str, category: str) -> list[Entry]:
    return [e for e in deliberate() if e.op in (op, "*") and e.category in (category, "*")]


def whole_category_excused(op: str, category: str) -> Entry | None:
    for entry in deliberate_for(op, category):
        if entry.dtype is None:
            return entry
    return None


def excused(op: str, category: str, failure: tuple) -> bool:
    """Whether a deliberate difference covers one recorded ``(dtype, index, reason)``."""
    dtype = failure[0]
    return any(e.dtype is None or e.dtype == dtype for e in deliberate_for(op, category))


def judge(op: str, category: str, result) -> tuple[str, str]:
    """(status, message) for one op and category's ``CategoryResult``.

    status: "n/a" (no such variant), "deliberate" (excused as a whole), "pass", "fail"
    (an unlisted disagreement), "known" (listed and still failing), "stale" (listed but
    now agreeing: the line must go).
    """
    if result.not_applicable:
        return "n/a", result.not_applicable
    whole = whole_category_excused(op, category)
    if whole is not None:
        return "deliberate", whole.reason
    failures = [f for f in result.failures if not excused(op, category, f)]
    entry = known().get((op, category))
    if entry is not None:
        if not failures:
            return "stale", (
                f"{op} {category} is in known_failures.txt ({entry.reason}) but now agrees with "
                f"torch on all {result.checked} checks: remove that line"
            )
        return "known", entry.reason
    if failures:
        shown = "\n".join(f"  {dtype} sample {index}: {why}" for dtype, index, why in failures[:8])
        more = f"\n  ... and {len(failures) - 8} more" if len(failures) > 8 else ""
        return "fail", (
            f"{op} {category}: {len(failures)} of {result.checked} checks disagree with torch "
            f"(fix ember, or list it in known_failures.txt / deliberate_differences.txt):\n"
            f"{shown}{more}"
        )
    return "pass", ""
