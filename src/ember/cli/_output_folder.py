"""Where ``ember demo`` writes: a staging folder next to ``--out``, moved into place at the end.

A run writes every file into ``.NAME.XXXX.partial`` beside the output folder; only a finished
run moves them over the previous results, each with one atomic rename. An interrupted or failed
run removes its staging folder and leaves the output folder as it was: never a half-written
checkpoint, never an untrained model over a good one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ._arguments import UsageError


def open_staging(out: Path, names: tuple[str, ...]) -> Path:
    """Check that ``out`` can take the results and make the staging folder beside it.

    ``names`` are the files a run writes: any of them in ``out`` must be replaceable.
    Raises ``UsageError`` (before anything is written) when ``out`` cannot be written.
    """
    target = out.resolve()
    if target.exists() and not target.is_dir():
        raise UsageError(
            f"--out {out} is a file, not a folder; choose a folder (it is created if missing)"
        )
    if target.is_dir() and not os.access(target, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out}: the folder is not writable; choose one you can write to")
    for name in names:
        if (target / name).is_dir():
            raise UsageError(
                f"--out {out}: {name} there is a folder, where the demo writes a file; "
                "remove it or choose another --out"
            )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return Path(
            tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise UsageError(
            f"--out {out}: cannot create files there ({reason}); choose a folder you can write to"
        ) from None


def publish(staging: Path, out: Path, names: tuple[str, ...]) -> None:
    """Move the finished run's files from ``staging`` into ``out``.

    Files get the mode a plain ``open()`` would give them (``0o666`` less the umask), not the
    ``0o600`` of ``mkstemp``/``mkdtemp``. A file of ``names`` that this run did not write (a
    ``graph.svg`` from a run that had Graphviz) is removed so that no stale result remains.
    """
    mask = _umask()
    for path in staging.iterdir():
        os.chmod(path, 0o666 & ~mask)
    target = out.resolve()
    if not target.exists():
        os.chmod(staging, 0o777 & ~mask)
        os.replace(staging, target)
        return
    for name in names:
        if (staging / name).exists():
            os.replace(staging / name, target / name)
        elif (target / name).exists():
            (target / name).unlink()
    discard(staging)


def discard(staging: Path) -> None:
    """Remove what an unfinished run wrote."""
    shutil.rmtree(staging, ignore_errors=True)


def _umask() -> int:
    # the only portable way to read the umask is to set it; the CLI is single-threaded here
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
