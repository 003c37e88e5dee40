import pytest

import ember
from ember import cli

from .helpers import run_ember
from .hostile_files import nested_lists, onnx_with, run_capped, saved_on_gpu, self_containing


def _diff(capsys, *args) -> tuple[int, list]:
    code = cli.main(["diff", *map(str, args)])
    return code, capsys.readouterr().out.splitlines()


def _weights() -> dict:
    return {
        "fc.weight": ember.arange(12, dtype=ember.float32).reshape(3, 4) / 10,
        "fc.bias": ember.tensor([0.5, -0.5, 0.0]),
        "steps": ember.tensor([1, 2, 3]),
    }


def test_same_weights_in_both_formats_are_equal(tmp_path, capsys):
    ember.save(_weights(), tmp_path / "a.safetensors")
    ember.save(_weights(), tmp_path / "b.pt")
    code, lines = _diff(capsys, tmp_path / "a.safetensors", tmp_path / "b.pt")
    assert code == 0
    assert lines[-2:] == [
        "equal: 3 of the 3 tensors in both files",
        "the checkpoints are equal (rtol=1e-05, atol=1e-08)",
    ]


def test_diff_names_every_kind_of_difference(tmp_path, capsys):
    ember.save(_weights(), tmp_path / "a.safetensors")
    changed = _weights()
    changed["fc.weight"][1, 2] += 0.25  # 0.6 -> 0.85
    changed["fc.weight"][2, 3] += 1e-7  # inside the tolerance
    changed["head.bias"] = changed.pop("fc.bias")  # renamed
    changed["steps"] = ember.tensor([1.0, 2.0, 3.0, 4.0])
    changed["extra"] = ember.zeros(2)
    ember.save(changed, tmp_path / "b.safetensors")
    code, lines = _diff(capsys, tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert code == 1
    assert lines[:2] == [
        f"A: {tmp_path / 'a.safetensors'} (3 tensors)",
        f"B: {tmp_path / 'b.safetensors'} (4 tensors)",
    ]
    assert "renamed: fc.bias in A is head.bias in B (same shape, dtype and values)" in lines
    assert "only in B: extra (2,) float32" in lines
    assert "shape: steps is (3,) in A, (4,) in B" in lines
    assert (
        "values: fc.weight: 1 of 12 elements differ (rtol=1e-05, atol=1e-08); "
        "max abs 0.25 at [1, 2], max rel 0.2941 at [1, 2]; first at [1, 2]: 0.6 in A, "
        "0.85 in B"
    ) in lines
    assert lines[-1] == "the checkpoints differ"


def test_tolerances_decide_what_differs(tmp_path, capsys):
    ember.save({"w": ember.tensor([1.0, 2.0])}, tmp_path / "a.safetensors")
    ember.save({"w": ember.tensor([1.001, 2.0])}, tmp_path / "b.safetensors")
    files = (tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert _diff(capsys, *files)[0] == 1
    assert _diff(capsys, *files, "--atol", "0.01")[0] == 0
    assert _diff(capsys, *files, "--rtol", "0.01")[0] == 0


def test_dtype_mismatch_is_a_difference(tmp_path, capsys):
    ember.save({"w": ember.tensor([1.0, 2.0])}, tmp_path / "a.pt")
    ember.save({"w": ember.tensor([1.0, 2.0], dtype=ember.float64)}, tmp_path / "b.pt")
    code, lines = _diff(capsys, tmp_path / "a.pt", tmp_path / "b.pt")
    assert code == 1
    assert "dtype: w is float32 in A, float64 in B (values compared after conversion)" in lines


def test_nan_in_the_same_place_is_equal_and_elsewhere_differs(tmp_path, capsys):
    nan = float("nan")
    ember.save({"w": ember.tensor([nan, 1.0])}, tmp_path / "a.safetensors")
    ember.save({"w": ember.tensor([nan, 1.0])}, tmp_path / "b.safetensors")
    ember.save({"w": ember.tensor([0.0, 1.0])}, tmp_path / "c.safetensors")
    assert _diff(capsys, tmp_path / "a.safetensors", tmp_path / "b.safetensors")[0] == 0
    code, lines = _diff(capsys, tmp_path / "a.safetensors", tmp_path / "c.safetensors")
    assert code == 1
    assert (
        "values: w: 1 of 2 elements differ (rtol=1e-05, atol=1e-08); max abs -, max rel -; "
        "first at [0]: nan in A, 0 in B"
    ) in lines


def test_torch_and_ember_checkpoints_of_one_model_compare_equal(tmp_path, torch_mod):
    torch = torch_mod
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    torch.save(model.state_dict(), tmp_path / "torch.pt")
    ours = cli.build_model("mlp")  # the same layers behind a Flatten: keys 1.* and 3.*
    ours.load_state_dict(
        {f"{int(k[0]) + 1}{k[1:]}": ember.tensor(v.numpy()) for k, v in model.state_dict().items()}
    )
    ember.save(ours.state_dict(), tmp_path / "ember.safetensors")
    result = run_ember("diff", tmp_path / "torch.pt", tmp_path / "ember.safetensors")
    assert result.returncode == 1  # the names differ by the Flatten's index...
    assert "renamed: 0.weight in A is 1.weight in B (same shape, dtype and values)" in result.stdout
    with torch.no_grad():  # ...and once torch's model has ember's layout, nothing differs
        flat = torch.nn.Sequential(torch.nn.Flatten(), *model)
    torch.save(flat.state_dict(), tmp_path / "flat.pt")
    result = run_ember("diff", tmp_path / "flat.pt", tmp_path / "ember.safetensors")
    assert result.returncode == 0, result.stdout
    flat[1].weight.data[5, 7] += 1.0
    torch.save(flat.state_dict(), tmp_path / "changed.pt")
    result = run_ember("diff", tmp_path / "changed.pt", tmp_path / "ember.safetensors")
    assert result.returncode == 1
    assert "values: 1.weight: 1 of 8,192 elements differ" in result.stdout
    assert "first at [5, 7]" in result.stdout


@pytest.mark.parametrize("problem", ["missing", "unreadable", "negative tolerance"])
def test_diff_usage_errors_exit_2_with_one_line(tmp_path, problem):
    good = tmp_path / "good.safetensors"
    ember.save({"w": ember.ones(2)}, good)
    other = tmp_path / "other.pt"
    args = [good, other]
    if problem == "unreadable":
        other.write_bytes(b"not a checkpoint at all")
    elif problem == "negative tolerance":
        other.write_bytes(good.read_bytes())
        args += ["--atol", "-1"]
    result = run_ember("diff", *args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("ember diff: ") and result.stderr.count("\n") == 1


def test_where_an_element_differs_is_written_as_indexing_it(tmp_path):
    ember.save({"v": ember.arange(60.0), "s": ember.tensor(1.0)}, tmp_path / "a.safetensors")
    changed = {"v": ember.arange(60.0), "s": ember.tensor(2.0)}
    changed["v"][49] = 50.0
    ember.save(changed, tmp_path / "b.safetensors")
    result = run_ember("diff", tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert result.returncode == 1
    assert (
        "values: v: 1 of 60 elements differ (rtol=1e-05, atol=1e-08); max abs 1 at [49], "
        "max rel 0.02 at [49]; first at [49]: 49 in A, 50 in B"
    ) in result.stdout.splitlines()
    assert (  # a 0-d tensor has one element: no place to name
        "values: s: 1 of 1 elements differ (rtol=1e-05, atol=1e-08); max abs 1, max rel 0.5; "
        "the value: 1 in A, 2 in B"
    ) in result.stdout.splitlines()


# --- files a user may hand it: every one is compared or refused in one line, exit code 2 -----
def test_a_checkpoint_saved_on_a_gpu_compares_on_the_cpu(tmp_path):
    saved_on_gpu(tmp_path / "gpu.pt", {"w": ember.arange(4.0)})
    ember.save({"w": ember.arange(4.0)}, tmp_path / "cpu.safetensors")
    result = run_ember("diff", tmp_path / "gpu.pt", tmp_path / "cpu.safetensors")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2] == "equal: 1 of the 1 tensor in both files"


def test_expanded_records_compare_without_materialising(tmp_path):
    n = 10**6
    row = ember.ones(n)
    row[7] = 2.0
    ember.save({"big": ember.ones(1).expand(n, n)}, tmp_path / "a.pt")  # strides (0, 0)
    ember.save({"big": row.expand(n, n)}, tmp_path / "b.pt")  # strides (0, 1)
    result = run_capped("diff", tmp_path / "a.pt", tmp_path / "b.pt")
    assert result.returncode == 1, result.stderr
    assert (
        "values: big: 1,000,000 of 1,000,000,000,000 elements differ (rtol=1e-05, atol=1e-08); "
        "max abs 1 at [0, 7], max rel 0.5 at [0, 7]; first at [0, 7]: 1 in A, 2 in B"
    ) in result.stdout.splitlines()
    assert run_capped("diff", tmp_path / "b.pt", tmp_path / "b.pt").returncode == 0


def test_records_expanded_along_different_dims_are_too_large_to_compare(tmp_path):
    n = 10**6
    ember.save({"big": ember.ones(n).expand(n, n)}, tmp_path / "rows.pt")  # strides (0, 1)
    ember.save({"big": ember.ones(n, 1).expand(n, n)}, tmp_path / "columns.pt")  # (1, 0)
    result = run_capped("diff", tmp_path / "rows.pt", tmp_path / "columns.pt")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == (
        "ember diff: big (1000000, 1000000): comparing it reads 1,000,000,000,000 values of "
        "each file, more than the files hold (expanded along different dims, or sparse): too "
        "large to compare\n"
    )


@pytest.mark.parametrize("hostile", ["nested", "self-containing", "onnx short raw data"])
def test_diff_refuses_a_hostile_file_in_one_line(tmp_path, hostile):
    good = tmp_path / "good.pt"
    ember.save({"w": ember.ones(4)}, good)
    bad = tmp_path / "bad.pt"
    if hostile == "nested":
        nested_lists(bad, 100_000)
    elif hostile == "self-containing":
        self_containing(bad, "dict")
    else:
        onnx = pytest.importorskip("onnx")
        bad = tmp_path / "bad.onnx"
        onnx_with(bad, onnx.TensorProto(name="w", data_type=1, dims=[4], raw_data=bytes(8)))
    for args in ((good, bad), (bad, good)):
        result = run_capped("diff", *args)
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith("ember diff: ") and result.stderr.count("\n") == 1
        assert str(bad) in result.stderr and "Traceback" not in result.stderr
