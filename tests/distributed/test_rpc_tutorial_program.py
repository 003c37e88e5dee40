"""torch's parameter-server tutorial run as a script under ``ember.multiprocessing.spawn``
(``rpc_tutorial_program.py``): a long test (EMBER_LONG_TESTS=1), as it starts three
interpreters."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ._harness import free_port

pytestmark = pytest.mark.skipif(
    os.environ.get("EMBER_LONG_TESTS") != "1", reason="a long test: set EMBER_LONG_TESTS=1"
)


def test_parameter_server_tutorial_trains_with_functions_of_main():
    program = Path(__file__).with_name("rpc_tutorial_program.py")
    done = subprocess.run(
        [sys.executable, str(program)],
        env=dict(os.environ, PORT=str(free_port())),
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("losses")]
    losses = ast.literal_eval(line[len("losses ") :])
    assert len(losses) == 10
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
