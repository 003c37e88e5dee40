import json
import math
import os
import subprocess
import sys

import pytest

import ember
from ember import cli

from .helpers import ember_command, ember_env, run_ember
from .hostile_files import nested_lists, onnx_with, run_capped, saved_on_gpu, self_containing


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


# --- files a user may hand it: every one is read or refused in one line with exit code 2 -----
def _json(result) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _refused(result, *words) -> None:
    assert result.returncode == 2 and result.stdout == "", result.stderr
    assert result.stderr.startswith("ember inspect: ") and result.stderr.count("\n") == 1
    for word in words:
        assert word in result.stderr


def test_inspect_reads_a_checkpoint_saved_on_a_gpu_on_the_cpu(tmp_path):
    path = tmp_path / "gpu.pt"
    saved_on_gpu(path, {"w": ember.arange(4.0)})
    report = _json(run_ember("inspect", path, "--json"))
    (row,) = report["tensors"]
    assert (row["name"], row["shape"], row["min"], row["max"]) == ("w", [4], 0.0, 3.0)


def test_inspect_reads_torchs_gpu_checkpoint(tmp_path, torch_mod):
    torch = torch_mod
    path = tmp_path / "gpu.pt"
    tag = torch.serialization.location_tag
    torch.serialization.location_tag = lambda storage: "cuda:0"  # as torch.save on a GPU
    try:
        torch.save({"w": torch.arange(4.0)}, path)
    finally:
        torch.serialization.location_tag = tag
    assert b"cuda:0" in path.read_bytes()
    assert _json(run_ember("inspect", path, "--json"))["tensors"][0]["mean"] == 1.5


def test_inspect_summarises_an_expanded_record_without_materialising_it(tmp_path):
    path = tmp_path / "expanded.pt"
    ember.save(
        {
            "big": ember.ones(1).expand(10**6, 10**6),  # 4 TB as a tensor, one float stored
            "rows": ember.tensor([float("nan"), 2.0, 4.0]).expand(10**6, 3),
        },
        path,
    )
    assert path.stat().st_size < 3000
    report = _json(run_capped("inspect", path, "--json"))
    big, rows = report["tensors"]
    assert (big["numel"], big["bytes"], big["broadcast_dims"]) == (10**12, 4 * 10**12, [0, 1])
    assert (big["min"], big["max"], big["mean"], big["std"], big["nan"]) == (1, 1, 1, 0, 0)
    assert (rows["broadcast_dims"], rows["nan"], rows["inf"]) == ([0], 10**6, 0)
    assert (rows["min"], rows["max"], rows["mean"], rows["std"]) == (2, 4, 3, 1)
    table = run_capped("inspect", path)
    assert table.returncode == 0
    assert table.stdout.splitlines()[-1] == (
        "expanded (stride 0, summarised over their distinct values): big, rows"
    )


def test_inspect_refuses_an_overlapping_view_too_large_to_summarise(tmp_path, torch_mod):
    path = tmp_path / "overlap.pt"
    storage = torch_mod.arange(2 * 10**6, dtype=torch_mod.float32)
    torch_mod.save({"window": storage.as_strided((10**6, 10**6), (1, 1))}, path)
    _refused(
        run_capped("inspect", path),
        "the record window (1000000, 1000000) float32 with strides (1, 1)",
        "too large to summarise",
    )


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: nested_lists(p, 100_000), "nest more than 100 levels deep"),
        (lambda p: self_containing(p, "list"), "it holds a list that contains itself"),
        (lambda p: self_containing(p, "dict"), "it holds a dict that contains itself"),
    ],
    ids=["100000 nested lists", "list in itself", "dict in itself"],
)
def test_inspect_refuses_deep_and_self_containing_pickles_in_one_line(tmp_path, make, words):
    path = tmp_path / "hostile.pt"
    make(path)
    _refused(run_ember("inspect", path), words)


def test_inspect_refuses_a_pickle_sharing_its_lists_exponentially(tmp_path):
    level = [ember.ones(1)]
    for _ in range(60):  # 2**60 paths to the one tensor, in a file of a few KB
        level = [level, level]
    path = tmp_path / "shared.pt"
    ember.save(level, path)
    _refused(run_capped("inspect", path), "more than 1,000,000 named values")


def test_inspect_shows_a_value_too_large_to_print_in_a_few_words(tmp_path):
    level = [1]
    for _ in range(60):
        level = [level, level]
    path = tmp_path / "values.pt"
    ember.save({"w": ember.ones(1), "shared": level, "small": [1, (2, 3)]}, path)
    result = run_capped("inspect", path, "--json")
    assert _json(result)["other_values"] == {
        "shared": "<list of more than 1,000 items>",
        "small": [1, [2, 3]],
    }
    table = run_capped("inspect", path).stdout.splitlines()
    assert table[-1] == "other values: shared='<list of more than 1,000 items>', small=[1, (2, 3)]"


def _initializer(**fields):
    from onnx import TensorProto

    return TensorProto(name="w", **fields)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"data_type": 1, "dims": [4], "raw_data": bytes(8)}, "holds 8 bytes of raw data"),
        ({"data_type": 1, "dims": [2, 3]}, "'w' (FLOAT (2, 3)) holds 0 values in float_data"),
        ({"data_type": 1, "dims": [10**6, 10**6]}, "its shape needs 1000000000000"),
        ({"data_type": 999, "dims": [2]}, "'w' has data type 999, which ONNX does not define"),
    ],
    ids=["short raw data", "dims without data", "huge dims without data", "unknown type"],
)
def test_inspect_refuses_a_malformed_onnx_initializer_in_one_line(tmp_path, fields, words):
    pytest.importorskip("onnx")
    path = tmp_path / "model.onnx"
    onnx_with(path, _initializer(**fields))
    _refused(run_capped("inspect", path), f"cannot read {path}: initializer", words)


def test_inspect_reads_string_and_uint16_onnx_initializers(tmp_path):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    strings = tmp_path / "strings.onnx"
    onnx_with(strings, helper.make_tensor("labels", TensorProto.STRING, [2], [b"cat", b"dog"]))
    report = _json(run_ember("inspect", strings, "--json"))
    assert report["tensors"] == [] and report["other_values"]["labels"] == ["cat", "dog"]
    unsigned = tmp_path / "uint16.onnx"
    onnx_with(unsigned, helper.make_tensor("u", TensorProto.UINT16, [3], [1, 2, 65535]))
    (row,) = _json(run_ember("inspect", unsigned, "--json"))["tensors"]
    assert (row["dtype"], row["bytes"], row["min"], row["max"]) == ("uint16", 6, 1, 65535)
