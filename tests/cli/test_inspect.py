import json
import math
import os
import subprocess
import sys

import pytest

import ember
from ember import cli

from .helpers import ember_command, ember_env, run_ember


def _inspect_json(path, capsys) -> dict:
    assert cli.main(["inspect", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("suffix", [".safetensors", ".pt"])
def test_inspect_reports_each_tensor_written_by_ember(tmp_path, capsys, suffix):
    path = tmp_path / f"weights{suffix}"
    weight = ember.tensor([[1.0, -2.0, float("nan")], [float("inf"), 4.0, 5.0]])
    ember.save({"layer.weight": weight, "layer.steps": ember.tensor([3, 4])}, path)
    report = _inspect_json(path, capsys)
    rows = {row["name"]: row for row in report["tensors"]}
    w = rows["layer.weight"]
    assert (w["shape"], w["dtype"], w["numel"], w["bytes"]) == ([2, 3], "float32", 6, 24)
    assert (w["nan"], w["inf"]) == (1, 1)
    # statistics of the finite values 1, -2, 4, 5
    assert (w["min"], w["max"], w["mean"]) == (-2.0, 5.0, 2.0)
    assert math.isclose(w["std"], math.sqrt((1 + 16 + 4 + 9) / 4))
    steps = rows["layer.steps"]
    assert (steps["dtype"], steps["bytes"], steps["min"], steps["max"]) == ("int64", 16, 3.0, 4.0)
    assert report["totals"] == {"tensors": 2, "elements": 8, "bytes": 40, "nan": 1, "inf": 1}


def test_inspect_table_lists_names_shapes_and_totals(tmp_path, capsys):
    path = tmp_path / "model.safetensors"
    ember.save(cli.build_model("mlp").state_dict(), path)
    assert cli.main(["inspect", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{path}:"
    assert lines[1].split() == [
        "name", "shape", "dtype", "bytes", "min", "max", "mean", "std", "nan", "inf"
    ]  # fmt: skip
    assert lines[2].split()[:5] == ["1.weight", "(128,", "64)", "float32", "32,768"]
    assert lines[-1] == "total: 4 tensors, 9,610 elements, 37.5 KiB"


def test_inspect_reads_a_torch_checkpoint_with_its_other_values(tmp_path, capsys, torch_mod):
    torch = torch_mod
    path = tmp_path / "checkpoint.pt"
    model = torch.nn.Linear(3, 2)
    torch.save({"model": model.state_dict(), "step": 7, "half": torch.ones(4).bfloat16()}, path)
    report = _inspect_json(path, capsys)
    rows = {row["name"]: row for row in report["tensors"]}
    assert list(rows) == ["model.weight", "model.bias", "half"]
    assert rows["model.weight"]["max"] == pytest.approx(float(model.weight.detach().max()))
    assert (rows["half"]["dtype"], rows["half"]["bytes"], rows["half"]["mean"]) == (
        "bfloat16",
        8,
        1.0,
    )
    assert report["other_values"] == {"step": 7}


def test_inspect_refuses_a_pickled_module_without_running_it(tmp_path, torch_mod):
    path = tmp_path / "whole_model.pt"
    torch_mod.save(torch_mod.nn.Linear(3, 2), path)
    result = run_ember("inspect", path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "torch.nn.modules.linear.Linear" in result.stderr
    assert "save a state_dict instead" in result.stderr


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "no such file"),
        (b"hello", "not a valid safetensors file"),
        ("folder", "is a directory"),
    ],
)
def test_inspect_of_an_unreadable_file_is_a_usage_error(tmp_path, capsys, content, words):
    path = tmp_path / "checkpoint.pt"
    if content == "folder":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    assert cli.main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ember inspect: ") and words in err and err.count("\n") == 1


# the CLI in a child process in which reading a file (and os.stat on a folder past a locked
# one) is refused, as it is for a user who may not read it; root may read anything
_AS_A_USER_WITHOUT_ACCESS = """
import errno, os, sys
locked = sys.argv[1]
real_stat, real_access = os.stat, os.access
def stat(path, *args, **kwargs):
    if str(path).startswith(locked + os.sep):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))
    return real_stat(path, *args, **kwargs)
os.stat = stat
os.access = lambda path, mode, **kwargs: not str(path).startswith(locked) and real_access(
    path, mode, **kwargs)
from ember.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _inspect_without_access(locked, path) -> subprocess.CompletedProcess:
    if os.geteuid() != 0:  # a real refusal
        command = ember_command("inspect", path)
    else:
        command = [sys.executable, "-c", _AS_A_USER_WITHOUT_ACCESS, str(locked), "inspect", path]
    return subprocess.run(command, capture_output=True, text=True, env=ember_env(), timeout=120)


def test_inspect_tells_no_such_file_from_permission_denied_and_a_directory(tmp_path):
    ember.save({"w": ember.ones(2)}, tmp_path / "good.safetensors")
    unreadable = tmp_path / "secret.safetensors"
    unreadable.write_bytes((tmp_path / "good.safetensors").read_bytes())
    unreadable.chmod(0)
    locked = tmp_path / "locked"
    locked.mkdir()
    ember.save({"w": ember.ones(2)}, locked / "inside.safetensors")
    locked.chmod(0)
    try:
        cases = {
            tmp_path / "missing.safetensors": "no such file",
            tmp_path / "good.safetensors" / "x": "no such file",
            tmp_path: "is a directory; give a checkpoint file (such as model.safetensors)",
        }
        for path, words in cases.items():
            result = run_ember("inspect", path)
            assert result.returncode == 2 and result.stderr == f"ember inspect: {path}: {words}\n"
        result = _inspect_without_access(unreadable, unreadable)
        assert result.returncode == 2
        assert result.stderr == f"ember inspect: {unreadable}: permission denied\n"
        inside = locked / "inside.safetensors"
        result = _inspect_without_access(locked, inside)
        assert result.returncode == 2
        assert result.stderr == (
            f"ember inspect: {inside}: permission denied (a folder on the way cannot be searched)\n"
        )
    finally:
        locked.chmod(0o755)


def test_inspect_and_diff_read_an_onnx_models_weights(tmp_path, capsys):
    pytest.importorskip("onnx")
    from ember import cli

    model = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.ReLU(), ember.nn.Linear(3, 2))
    ember.onnx.export(model, (ember.randn(1, 4),), str(tmp_path / "m.onnx"))
    ember.save(model.state_dict(), tmp_path / "m.safetensors")
    assert cli.main(["inspect", str(tmp_path / "m.onnx")]) == 0
    printed = capsys.readouterr().out
    assert "0.weight" in printed and "(3, 4)" in printed and "producer='ember'" in printed
    code = cli.main(["diff", str(tmp_path / "m.onnx"), str(tmp_path / "m.safetensors")])
    printed = capsys.readouterr().out
    assert "equal: 4 of the 4 tensors in both files" in printed
    assert code in (0, 1)  # ONNX files may hold extra constants (shapes) besides the weights
