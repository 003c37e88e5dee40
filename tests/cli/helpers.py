"""Running the ``ember`` command as a user does: a separate process, its exit code and output."""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")


def ember_command(*args: str) -> list:
    return [sys.executable, "-m", "ember.cli", *map(str, args)]


def ember_env(extra: dict | None = None) -> dict:
    """The environment a child `ember` runs in: ember's source importable, `extra` added."""
    extra = dict(extra or {})
    env = dict(os.environ)
    paths = [extra.pop("PYTHONPATH", None), SRC, env.get("PYTHONPATH")]
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    return env


def run_ember(*args: str, cwd=None, env: dict | None = None) -> subprocess.CompletedProcess:
    """``ember ARGS`` in a child process (stdout and stderr captured as text, not a terminal);
    ``env`` adds to the environment (a ``PYTHONPATH`` there comes before ember's source)."""
    return subprocess.run(
        ember_command(*args),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=ember_env(env),
        timeout=300,
    )


def as_from_a_terminal() -> None:
    """Ctrl-C's default action in the child, as a terminal's shell gives it: a test suite run in
    the background (``pytest &``, ``nohup``) ignores SIGINT, and children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_ember(
    *args: str, cwd=None, env: dict | None = None, own_session: bool = False
) -> subprocess.Popen:
    """``ember ARGS`` started in the background (several at once keep the tests quick).

    ``own_session``: in a process group of its own, as a shell starts a command, so that
    ``os.killpg(process.pid, signal.SIGINT)`` is what Ctrl-C in a terminal does.
    """
    return subprocess.Popen(
        ember_command(*args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=ember_env(env),
        start_new_session=own_session,
        preexec_fn=as_from_a_terminal,
    )


def process_marker() -> dict:
    """An environment variable to start a command with: every process it starts inherits it,
    so that ``processes_marked`` finds any of them left running."""
    return {"EMBER_TEST_PROCESS_MARK": uuid.uuid4().hex}


def processes_marked(marker: dict, settle: float = 5.0) -> list[str]:
    """The command lines of the running processes (zombies aside) that carry ``marker``, after
    waiting up to ``settle`` seconds for the ones being stopped to go."""
    ((name, value),) = marker.items()
    needle = f"{name}={value}".encode()
    if not Path("/proc").is_dir():  # not Linux: nothing to look in
        return []
    deadline = time.monotonic() + settle
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if needle not in (entry / "environ").read_bytes().split(b"\0"):
                    continue
                if (entry / "stat").read_text().rpartition(")")[2].split()[0] == "Z":
                    continue  # exited, waiting for its parent to read the exit code
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:  # gone meanwhile, or not ours to read
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)
