"""Why a path given on a command line cannot be used, in the words a user expects."""

from __future__ import annotations

import os
import stat


def why_unusable(path: str, *, directory: str, executable: bool = False) -> str | None:
    """``no such file``, ``permission denied`` (unreadable, not executable when ``executable``,
    or a folder on the way that cannot be searched), ``is a directory; <directory>``, another
    OS error's text, or None when ``path`` is a file that can be read (or run)."""
    try:
        info = os.stat(path)  # not os.path.exists, which says False for "permission denied" too
    except (FileNotFoundError, NotADirectoryError):
        return "no such file"
    except PermissionError:
        return "permission denied (a folder on the way cannot be searched)"
    except OSError as exc:
        return exc.strerror or str(exc)
    if stat.S_ISDIR(info.st_mode):
        return f"is a directory; {directory}"
    if not os.access(path, os.X_OK if executable else os.R_OK):
        return "permission denied"
    return None
