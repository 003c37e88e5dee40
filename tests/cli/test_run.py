"""``ember run``: its usage and mistakes, the script checked before any rank starts, stopping
with Ctrl-C or SIGTERM (one line, the shell's exit codes, no rank left, no MPICH banner) and
torchrun's OMP_NUM_THREADS notice only where it helps."""

import os
import signal
import subprocess
import sys
import time

import pytest

from .helpers import ember_env, process_marker, processes_marked, run_ember, start_ember

# a rank that says it is up, then waits to be stopped (no ember import: it starts at once)
SLEEPER = """
import os, time
print(f"rank {os.environ['RANK']} up", flush=True)
time.sleep(120)
"""


def test_ember_run_usage_names_ember_run_and_no_argument_as_required():
    result = run_ember("run", "--help")
    assert result.returncode == 0
    assert result.stdout.startswith(
        "usage: ember run [--nproc-per-node N] [options] training_script"
    )
    assert "python -m ember.distributed.run" not in result.stdout
    assert "required" not in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "ember run: give the script to run, as in `ember run --nproc-per-node 2 train.py"),
        (("--nproc-per-node", "2", "missing.py"), "ember run: missing.py: no such file"),
        (("--nproc-per-node", "2", "."), "ember run: .: is a directory; give the script to run"),
        (("-m", "no_such_module_here"), "ember run: no_such_module_here: no such module"),
        (
            ("--no-python", "no-such-program-here"),
            "ember run: no-such-program-here: no such program",
        ),
        (("--bogus", "train.py"), "ember run: unrecognized arguments: --bogus"),
        (("--nproc-per-node", "two", "train.py"), "ember run: Unsupported nproc_per_node value"),
    ],
)
def test_a_mistake_is_one_line_exit_2_and_starts_no_rank(tmp_path, args, message):
    result = run_ember("run", *args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == ""
    assert "required" not in result.stderr and "ember.distributed.run" not in result.stderr


def test_the_script_is_checked_before_any_rank_starts(tmp_path):
    unreadable = tmp_path / "locked.py"
    unreadable.write_text("print('ran')\n")
    unreadable.chmod(0)
    result = run_ember("run", "--nproc-per-node", "2", unreadable, cwd=tmp_path)
    if os.geteuid() == 0:  # root reads it anyway, and so do the ranks
        assert result.returncode == 0 and result.stdout.count("ran") == 2
    else:
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr == f"ember run: {unreadable}: permission denied\n"


def _start_sleepers(tmp_path, marker):
    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER)
    env = {**marker, "OMP_NUM_THREADS": "1"}  # the notice aside, on a machine of many cores
    process = start_ember(
        "run", "--nproc-per-node", "2", script, cwd=tmp_path, env=env, own_session=True
    )
    up = sorted(process.stdout.readline().strip() for _ in range(2))
    assert up == ["rank 0 up", "rank 1 up"], process.stderr.read()
    return process


@pytest.mark.parametrize(
    ("stop", "code", "line"),
    [
        (signal.SIGINT, 130, "ember run: interrupted (Ctrl-C); stopped 2 processes"),
        (signal.SIGTERM, 143, "ember run: terminated (SIGTERM); stopped 2 processes"),
    ],
)
def test_a_stop_signal_is_one_line_the_shells_exit_code_and_leaves_no_rank(
    tmp_path, stop, code, line
):
    marker = process_marker()
    process = _start_sleepers(tmp_path, marker)
    os.killpg(process.pid, stop)  # as the terminal's Ctrl-C: the launcher's process group
    stdout, stderr = process.communicate(timeout=180)
    assert process.returncode == code
    assert stderr == line + "\n"  # no traceback, no OMP_NUM_THREADS notice on 2 cores
    assert "BAD TERMINATION" not in stdout and "YOUR APPLICATION" not in stdout, stdout
    assert processes_marked(marker) == []


def _run_on_one_core(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``ember ARGS`` in a process that may use one core only (and so may its ranks)."""
    code = (
        "import os, sys\n"
        "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "from ember.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        capture_output=True,
        text=True,
        env=ember_env(env),
        timeout=120,
    )


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs sched_setaffinity")
def test_the_omp_num_threads_notice_only_where_there_is_something_to_tune(tmp_path):
    script = tmp_path / "threads.py"
    script.write_text("import os\nprint(os.environ['OMP_NUM_THREADS'], flush=True)\n")
    # two ranks on one core: one thread each is the only sensible value, nothing to say
    crowded = _run_on_one_core("run", "--nproc-per-node", "2", script)
    assert crowded.returncode == 0 and crowded.stderr == ""
    assert crowded.stdout.split() == ["1", "1"]
    # the user's own value: kept, and no notice
    chosen = run_ember("run", "--nproc-per-node", "2", script, env={"OMP_NUM_THREADS": "3"})
    assert chosen.returncode == 0 and chosen.stderr == "" and chosen.stdout.split() == ["3", "3"]


def test_the_omp_num_threads_notice_is_one_line_where_cores_would_sit_idle(monkeypatch, capsys):
    from ember.distributed import run as launcher

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(launcher, "_usable_cores", lambda: 16)
    args = launcher._parser().parse_args(["--nproc-per-node", "2", "train.py"])
    env = launcher._node_env(args, 2, 1, "127.0.0.1", 29500, restart=0, prog="ember run")
    assert env["OMP_NUM_THREADS"] == "1"
    assert capsys.readouterr().err == (
        "ember run: OMP_NUM_THREADS=1 for each of the 2 processes, as torchrun sets it; with 16 "
        "cores here, set OMP_NUM_THREADS=8 to give each process its share\n"
    )
    launcher._node_env(args, 2, 1, "127.0.0.1", 29500, restart=1, prog="ember run")
    assert capsys.readouterr().err == ""  # said once, not at every restart


def test_a_failing_rank_is_reported_once_without_mpichs_banner(tmp_path):
    script = tmp_path / "dies.py"
    script.write_text(
        "import os, signal, time\n"
        "if os.environ['RANK'] == '1':\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "time.sleep(120)\n"
    )
    result = run_ember("run", "--nproc-per-node", "2", script, env={"OMP_NUM_THREADS": "1"})
    assert result.returncode == 1
    assert "BAD TERMINATION" not in result.stdout
    assert result.stderr.count("\n") == 1 and "ember run: process 1 terminated" in result.stderr


def test_ranks_that_catch_sigterm_finish_their_work_before_the_launcher_exits(tmp_path):
    script = tmp_path / "checkpoints.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "def save(signum, frame):\n"
        "    time.sleep(0.3)  # writing a checkpoint\n"
        "    open(f\"saved{os.environ['RANK']}\", 'w').close()\n"
        "    print('saved', flush=True)\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, save)\n"
        "print('up', flush=True)\n"
        "time.sleep(120)\n"
    )
    env = {"OMP_NUM_THREADS": "1"}
    process = start_ember("run", "--nproc-per-node", "2", script, cwd=tmp_path, env=env)
    assert [process.stdout.readline() for _ in range(2)] == ["up\n", "up\n"]
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=180)
    assert process.returncode == 130
    assert stdout == "saved\nsaved\n" and sorted(p.name for p in tmp_path.glob("saved*")) == [
        "saved0",
        "saved1",
    ]
    assert stderr == "ember run: interrupted (Ctrl-C); stopped 2 processes\n"


def test_a_second_ctrl_c_kills_ranks_that_do_not_stop(tmp_path):
    script = tmp_path / "stubborn.py"
    script.write_text(
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('up', flush=True)\n"
        "time.sleep(120)\n"
    )
    marker = process_marker()
    env = {**marker, "OMP_NUM_THREADS": "1"}
    process = start_ember("run", "--nproc-per-node", "2", script, cwd=tmp_path, env=env)
    assert [process.stdout.readline() for _ in range(2)] == ["up\n", "up\n"]
    process.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert process.poll() is None  # waiting for the ranks, for up to 30 seconds
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130
    assert stderr == "ember run: interrupted (Ctrl-C); stopped 2 processes\n"
    assert processes_marked(marker) == []
