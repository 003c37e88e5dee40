"""Running the ``ember`` command as a user does: a separate process, its exit code and output."""

import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")


def ember_command(*args: str) -> list:
    return [sys.executable, "-m", "ember.cli", *map(str, args)]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_ember(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """``ember ARGS`` in a child process (stdout and stderr captured as text, not a terminal)."""
    return subprocess.run(
        ember_command(*args), capture_output=True, text=True, cwd=cwd, env=_env(), timeout=300
    )


def start_ember(*args: str, cwd=None) -> subprocess.Popen:
    """``ember ARGS`` started in the background (several at once keep the tests quick)."""
    return subprocess.Popen(
        ember_command(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=_env(),
    )
