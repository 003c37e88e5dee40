"""The ``ember`` command as a whole: help, version, and how mistakes and bugs are reported."""

import pytest

import ember
from ember import cli

from .helpers import run_ember, start_ember


def test_ember_alone_prints_the_usage_on_stderr_and_exits_2():
    result = run_ember()
    assert result.returncode == 2 and result.stdout == ""
    for command in ("demo", "inspect", "diff", "run"):
        assert command in result.stderr
    assert result.stderr.startswith("usage: ember")


def test_ember_help_succeeds():
    result = run_ember("--help")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("usage: ember") and "`ember run --help`" not in result.stdout


def test_version_prints_the_package_version():
    result = run_ember("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"ember {ember.__version__}"


def _demo_mistakes(out) -> dict:
    """Each mistake with the words its one-line message must contain."""
    mistakes = {
        ("--epochs", "0"): "--epochs: must be at least 1, got 0",
        ("--epochs", "-1"): "--epochs: must be at least 1, got -1",
        ("--epochs", "two"): "--epochs: expected a whole number, got 'two'",
        ("--lr", "-1"): "--lr: must be greater than 0, got -1",
        ("--lr", "inf"): "--lr: must be a finite number",
        ("--batch-size", "0"): "--batch-size: must be at least 1, got 0",
        ("--device", "tpu"): "--device 'tpu' is not a device; use cpu, cuda or cuda:N",
        ("--model", "resnet"): "invalid choice: 'resnet' (choose from 'mlp', 'cnn')",
        ("--optimizer", "lbfgs"): "invalid choice: 'lbfgs'",
        ("--seed", str(2**64)): f"--seed: must be in [-2**63, 2**64), got {2**64}",
        ("--bogus",): "ember demo: unrecognized arguments: --bogus (see `ember demo --help`)",
    }
    if not ember.cuda.is_available():
        mistakes[("--device", "cuda")] = "--device cuda: no usable GPU"
    return {("demo", "--out", str(out), *args): words for args, words in mistakes.items()}


def test_each_demo_mistake_is_one_line_exit_2_and_overwrites_nothing(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"a good model")
    cases = _demo_mistakes(out)
    cases[("demo", "--out", "/proc/ember-demo")] = "--out /proc/ember-demo: cannot create files"
    cases[("demo", "--out", str(out / "model.safetensors"))] = "is a file, not a folder"
    cases[("demo", "--out", "")] = "--out: is empty; give a folder"
    cases[("resnet",)] = "ember: argument COMMAND: invalid choice: 'resnet'"
    # all at once: each is a Python start-up, the slow part
    running = {args: start_ember(*args) for args in cases}
    for args, process in running.items():
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 2, (args, stderr)
        assert stderr.count("\n") == 1 and "Traceback" not in stderr, (args, stderr)
        assert stderr.startswith("ember"), (args, stderr)
        assert cases[args] in stderr, (args, stderr)
        assert stdout == "", (args, stdout)
    assert sorted(p.name for p in out.iterdir()) == ["model.safetensors"]
    assert (out / "model.safetensors").read_bytes() == b"a good model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]  # no staging left


def test_a_usage_error_message_says_where_to_look(capsys):
    assert cli.main(["demo", "--batch-size", "0"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "ember demo: argument --batch-size: must be at least 1, got 0 (see `ember demo --help`)\n"
    )


def test_a_bug_in_ember_shows_the_traceback_and_asks_for_a_report(monkeypatch, capsys):
    def broken(args):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cli.inspect, "run", broken)
    assert cli.main(["inspect", "x.pt"]) == cli.EXIT_BUG
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError" in err
    assert err.rstrip().endswith(
        "please report it with the command you ran and the traceback above."
    )


@pytest.mark.parametrize("command", ["demo", "inspect", "diff"])
def test_each_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    assert f"usage: ember {command}" in capsys.readouterr().out


def test_ember_run_launches_a_script_on_two_processes(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "allreduce.py"
    script.write_text(
        "import ember, ember.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = ember.tensor([float(dist.get_rank() + 1)])\n"
        "dist.all_reduce(t)\n"
        "print(f'rank {dist.get_rank()}: {t.item()}')\n"
        "dist.destroy_process_group()\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "ember.cli", "run", "--nproc-per-node", "2", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "rank 0: 3.0" in done.stdout and "rank 1: 3.0" in done.stdout


# the child says "importing" on stdout when `import ember` begins (a finder that only watches),
# so the parent's Ctrl-C lands inside that import, however loaded the machine is
_CHILD_INTERRUPTED_WHILE_IMPORTING = """
import sys, time

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name == "ember":
            print("importing", flush=True)
            time.sleep(60)  # the parent's signal arrives here, inside the import
        return None

sys.meta_path.insert(0, Watch())
import _ember_cli
sys.argv = ["ember", "--version"]
sys.exit(_ember_cli.main())
"""


def test_ctrl_c_while_ember_is_still_importing_is_one_line_and_exit_130():
    """The console script's entry point (``_ember_cli``) starts before ``import ember``."""
    import signal
    import subprocess
    import sys

    from .helpers import as_from_a_terminal, ember_env

    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD_INTERRUPTED_WHILE_IMPORTING],
        env=ember_env(),
        preexec_fn=as_from_a_terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline() == "importing\n"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, (child.returncode, err)
    assert "Traceback" not in err
    assert err.strip().splitlines() == ["ember: interrupted (Ctrl-C)"]
    assert out == ""  # --version never ran
