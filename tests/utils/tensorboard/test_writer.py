"""SummaryWriter: each add_* call written with ember, read back with TensorBoard's
EventAccumulator, and where torch is installed compared with torch's writer on the same data."""

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import ember  # noqa: E402
from ember.utils.tensorboard import FileWriter, SummaryWriter  # noqa: E402
from ember.utils.tensorboard.summary import TENSORFLOW_BINS  # noqa: E402

from .events import accumulate, read_back, torch_summary_writer  # noqa: E402


# --- what `import ember` loads -----------------------------------------------------------------
def test_import_ember_does_not_import_tensorboard_or_protobuf():
    code = (
        "import sys, ember, ember.utils\n"
        "print(sorted(m for m in ('tensorboard', 'google.protobuf') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- scalars -----------------------------------------------------------------------------------
def test_add_scalar_reads_back_values_and_steps(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("loss", 0.5, 0)
        w.add_scalar("loss", ember.tensor(0.25), 1)
        w.add_scalar("loss", np.float32(0.125), 2)
        w.add_scalar("loss", ember.tensor([2.0]), np.int64(3))  # one element, NumPy step
        w.add_scalar("acc", 0.75, 7, walltime=1234.5)
    acc = accumulate(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [
        (0, 0.5),
        (1, 0.25),
        (2, 0.125),
        (3, 2.0),
    ]
    (event,) = acc.Scalars("acc")
    assert (event.step, event.value, event.wall_time) == (7, 0.75, 1234.5)


def test_add_scalar_new_style_writes_a_scalars_plugin_tensor(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("lr", 0.1, 0, new_style=True)
        w.add_scalar("lr64", 0.1, 0, new_style=True, double_precision=True)
    acc = accumulate(tmp_path)
    from tensorboard.util import tensor_util

    (single,) = acc.Tensors("lr")
    (double,) = acc.Tensors("lr64")
    assert tensor_util.make_ndarray(single.tensor_proto).dtype == np.float32
    assert tensor_util.make_ndarray(double.tensor_proto).item() == 0.1
    assert acc.SummaryMetadata("lr").plugin_data.plugin_name == "scalars"


def test_add_scalar_of_several_values_raises(tmp_path):
    with SummaryWriter(tmp_path) as w, pytest.raises(AssertionError, match="one element"):
        w.add_scalar("x", ember.tensor([1.0, 2.0]))


def test_add_scalars_writes_one_run_per_tag(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(3):
            w.add_scalars("run/loss", {"train": step * 1.0, "val": step * 2.0}, step)
    runs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert runs == ["run_loss_train", "run_loss_val"]
    train = accumulate(tmp_path / "run_loss_train").Scalars("run/loss")
    val = accumulate(tmp_path / "run_loss_val").Scalars("run/loss")
    assert [(e.step, e.value) for e in train] == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert [(e.step, e.value) for e in val] == [(0, 0.0), (1, 2.0), (2, 4.0)]
    # one wall time for the whole call, as in PyTorch
    assert [e.wall_time for e in train] == [e.wall_time for e in val]


def test_scalars_match_torch(tmp_path, torch_mod):
    TorchSummaryWriter = torch_summary_writer(torch_mod)

    def log(writer, tensor):
        writer.add_scalar("loss", tensor([0.5]), 0)
        writer.add_scalar("loss", 0.25, 1)
        writer.add_scalar("new", 3.5, 2, new_style=True)
        writer.add_scalars("pair", {"a": 1.0, "b": tensor(2.0)}, 4)
        writer.close()

    log(SummaryWriter(tmp_path / "ember"), ember.tensor)
    log(TorchSummaryWriter(tmp_path / "torch"), torch_mod.tensor)
    for run in ("", "pair_a", "pair_b"):
        assert read_back(tmp_path / "ember" / run) == read_back(tmp_path / "torch" / run)


# --- histograms --------------------------------------------------------------------------------
def _expected_buckets(values, edges):
    """numpy's histogram counts trimmed as TensorBoard keeps them: from an empty bucket
    ending at the first filled bin's left edge to the last filled bin."""
    counts, edges = np.histogram(values, bins=edges)
    filled = np.flatnonzero(counts)
    first, last = filled[0], filled[-1]
    return edges[first : last + 2].tolist(), [0.0, *counts[first : last + 1].tolist()]


def test_add_histogram_default_bins_count_as_numpy(tmp_path):
    data = np.random.default_rng(0).normal(size=1000).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", ember.tensor(data), 5)
    (event,) = accumulate(tmp_path).Histograms("w")
    h = event.histogram_value
    values = data.astype(float)
    limits, counts = _expected_buckets(values, TENSORFLOW_BINS)
    assert event.step == 5
    assert list(h.bucket_limit) == limits
    assert list(h.bucket) == counts
    assert sum(h.bucket) == 1000
    assert (h.min, h.max, h.num) == (values.min(), values.max(), 1000)
    assert h.sum == pytest.approx(values.sum()) and h.sum_squares == pytest.approx(values @ values)


@pytest.mark.parametrize("bins", ["auto", "fd", 10])
def test_add_histogram_numpy_bins_count_as_numpy(tmp_path, bins):
    data = np.random.default_rng(1).uniform(-3, 3, size=500)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", data, 0, bins=bins)
    (event,) = accumulate(tmp_path).Histograms("w")
    _, edges = np.histogram(data, bins=bins)
    limits, counts = _expected_buckets(data, edges)
    assert list(event.histogram_value.bucket_limit) == limits
    assert list(event.histogram_value.bucket) == counts


def test_add_histogram_max_bins_merges_neighbours(tmp_path):
    data = np.arange(100.0)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", data, 0, bins=100, max_bins=10)
    (event,) = accumulate(tmp_path).Histograms("w")
    assert list(event.histogram_value.bucket) == [0.0] + [10.0] * 10
    assert list(event.histogram_value.bucket_limit) == pytest.approx(
        np.linspace(0, 99, 101)[::10].tolist()  # every 10th edge of the 100 bins
    )


def test_add_histogram_raw_reads_back(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_histogram_raw("raw", 0, 3, 6, 9, 17, [1.0, 2.0, 3.0], [1, 2, 3], global_step=2)
        with pytest.raises(ValueError, match="bucket"):
            w.add_histogram_raw("bad", 0, 3, 6, 9, 17, [1.0, 2.0], [1, 2, 3])
    (event,) = accumulate(tmp_path).Histograms("raw")
    h = event.histogram_value
    assert (h.min, h.max, h.num, h.sum, h.sum_squares) == (0, 3, 6, 9, 17)
    assert list(h.bucket) == [1, 2, 3] and list(h.bucket_limit) == [1.0, 2.0, 3.0]


def test_histograms_match_torch(tmp_path, torch_mod):
    TorchSummaryWriter = torch_summary_writer(torch_mod)
    data = np.random.default_rng(2).normal(size=(20, 30)).astype(np.float32)

    def log(writer, tensor):
        writer.add_histogram("default", tensor(data), 0)
        writer.add_histogram("auto", tensor(data), 1, bins="auto")
        writer.add_histogram("capped", data, 2, bins=64, max_bins=10)
        writer.close()

    log(SummaryWriter(tmp_path / "ember"), ember.tensor)
    log(TorchSummaryWriter(tmp_path / "torch"), torch_mod.tensor)
    assert read_back(tmp_path / "ember") == read_back(tmp_path / "torch")


# --- text, tensors, meshes, custom scalars ------------------------------------------------------
def test_add_text_reads_back(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("note", "**lr** = 0.1 — ünïcode", 4)
    acc = accumulate(tmp_path)
    (event,) = acc.Tensors("note/text_summary")
    assert event.step == 4
    assert event.tensor_proto.string_val == ["**lr** = 0.1 — ünïcode".encode()]
    assert acc.SummaryMetadata("note/text_summary").plugin_data.plugin_name == "text"


def test_add_tensor_reads_back_values_and_dtype(tmp_path):
    from tensorboard.util import tensor_util

    values = ember.arange(6, dtype=ember.int32).reshape(2, 3)
    with SummaryWriter(tmp_path) as w:
        w.add_tensor("t", values, 1)
        w.add_tensor("bf16", ember.tensor([1.5, -2.0], dtype=ember.bfloat16), 1)
    acc = accumulate(tmp_path)
    got = tensor_util.make_ndarray(acc.Tensors("t")[0].tensor_proto)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, values.numpy())
    bf16 = tensor_util.make_ndarray(acc.Tensors("bf16")[0].tensor_proto)
    assert bf16.tolist() == [1.5, -2.0]


def test_add_custom_scalars_writes_the_layout(tmp_path):
    from tensorboard.plugins.custom_scalar import layout_pb2

    with SummaryWriter(tmp_path) as w:
        w.add_custom_scalars_multilinechart(["loss/train", "loss/val"], title="losses")
        w.add_custom_scalars_marginchart(["m", "lo", "hi"], category="c", title="band")
        with pytest.raises(AssertionError, match="3 tags"):
            w.add_custom_scalars_marginchart(["m", "lo"])
    events = accumulate(tmp_path).Tensors("custom_scalars__config__")
    first = layout_pb2.Layout.FromString(events[0].tensor_proto.string_val[0])
    assert first.category[0].title == "default"
    assert first.category[0].chart[0].title == "losses"
    assert list(first.category[0].chart[0].multiline.tag) == ["loss/train", "loss/val"]
    second = layout_pb2.Layout.FromString(events[1].tensor_proto.string_val[0])
    series = second.category[0].chart[0].margin.series[0]
    assert (series.value, series.lower, series.upper) == ("m", "lo", "hi")


def test_add_mesh_writes_vertices_and_faces(tmp_path):
    from tensorboard.util import tensor_util

    vertices = ember.tensor([[[1.0, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]])
    faces = ember.tensor([[[0, 2, 3], [0, 3, 1]]], dtype=ember.int32)
    with SummaryWriter(tmp_path) as w:
        w.add_mesh("tetra", vertices, faces=faces, global_step=0)
    acc = accumulate(tmp_path)
    got = tensor_util.make_ndarray(acc.Tensors("tetra_VERTEX")[0].tensor_proto)
    np.testing.assert_array_equal(got, vertices.numpy())
    assert acc.SummaryMetadata("tetra_FACE").plugin_data.plugin_name == "mesh"


def test_text_and_tensors_match_torch(tmp_path, torch_mod):
    TorchSummaryWriter = torch_summary_writer(torch_mod)

    def log(writer, tensor):
        writer.add_text("note", "hello", 0)
        writer.add_tensor("t", tensor([[1.0, 2.0], [3.0, 4.0]]), 1)
        writer.close()

    log(SummaryWriter(tmp_path / "ember"), ember.tensor)
    log(TorchSummaryWriter(tmp_path / "torch"), torch_mod.tensor)
    assert read_back(tmp_path / "ember") == read_back(tmp_path / "torch")


# --- PR curves ---------------------------------------------------------------------------------
def test_add_pr_curve_counts_predictions_at_each_threshold(tmp_path):
    from tensorboard.util import tensor_util

    labels = np.array([1, 0, 1, 1, 0])
    predictions = np.array([0.9, 0.8, 0.4, 0.1, 0.05])
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve("pr", ember.tensor(labels), ember.tensor(predictions), 2, num_thresholds=5)
    acc = accumulate(tmp_path)
    (event,) = acc.Tensors("pr")
    tp, fp, tn, fn, precision, recall = tensor_util.make_ndarray(event.tensor_proto)
    # thresholds 0, .25, .5, .75, 1: a prediction counts at threshold t if floor(p*4)/4 >= t
    assert tp.tolist() == [3, 2, 1, 1, 0]
    assert fp.tolist() == [2, 1, 1, 1, 0]
    assert tn.tolist() == [0, 1, 1, 1, 2]
    assert fn.tolist() == [0, 1, 2, 2, 3]
    np.testing.assert_allclose(precision[:4], [3 / 5, 2 / 3, 1 / 2, 1 / 2], rtol=1e-6)
    np.testing.assert_allclose(recall, [1, 2 / 3, 1 / 3, 1 / 3, 0], rtol=1e-6)
    from tensorboard.plugins.pr_curve import metadata

    content = acc.SummaryMetadata("pr").plugin_data
    assert content.plugin_name == "pr_curves"
    assert metadata.parse_plugin_metadata(content.content).num_thresholds == 5


def test_add_pr_curve_raw_reads_back(tmp_path):
    from tensorboard.util import tensor_util

    rows = [[3, 1], [2, 0], [0, 2], [0, 2], [0.6, 1.0], [1.0, 0.3]]
    with SummaryWriter(tmp_path) as w:
        w.add_pr_curve_raw("raw", *rows, global_step=0, num_thresholds=2)
    (event,) = accumulate(tmp_path).Tensors("raw")
    np.testing.assert_allclose(tensor_util.make_ndarray(event.tensor_proto), rows, rtol=1e-6)


def test_pr_curves_match_torch(tmp_path, torch_mod):
    TorchSummaryWriter = torch_summary_writer(torch_mod)
    rng = np.random.default_rng(10)
    labels = rng.integers(0, 2, size=200)
    predictions = rng.uniform(size=200).astype(np.float32)
    weights = rng.uniform(size=200)

    def log(writer, tensor):
        writer.add_pr_curve("pr", tensor(labels), tensor(predictions), 0)
        writer.add_pr_curve("few", labels, predictions, 1, num_thresholds=7, weights=weights)
        writer.add_pr_curve("many", labels, predictions, 2, num_thresholds=500)
        writer.close()

    log(SummaryWriter(tmp_path / "ember"), ember.tensor)
    log(TorchSummaryWriter(tmp_path / "torch"), torch_mod.tensor)
    ours, theirs = read_back(tmp_path / "ember"), read_back(tmp_path / "torch")
    assert ours.keys() == theirs.keys()
    for key in ours:
        (step, got), (torch_step, want) = ours[key][0], theirs[key][0]
        assert step == torch_step
        np.testing.assert_allclose(got, want, rtol=1e-6)


# --- hparams -----------------------------------------------------------------------------------
def _hparams_run(log_dir):
    (run,) = [p for p in log_dir.iterdir() if p.is_dir()]
    return run


def test_add_hparams_writes_plugin_data_in_a_sub_run(tmp_path):
    from tensorboard.plugins.hparams import metadata

    with SummaryWriter(tmp_path) as w:
        w.add_hparams(
            {"lr": 0.1, "optim": "sgd", "layers": 3, "nesterov": True, "skip": None},
            {"hparam/accuracy": 0.9},
            hparam_domain_discrete={"optim": ["sgd", "adam"]},
            run_name="trial1",
            global_step=2,
        )
    run = _hparams_run(tmp_path)
    assert run.name == "trial1"
    acc = accumulate(run)
    content = acc.PluginTagToContent(metadata.PLUGIN_NAME)
    start = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
    assert start.hparams["lr"].number_value == 0.1
    assert start.hparams["optim"].string_value == "sgd"
    assert start.hparams["layers"].number_value == 3
    assert start.hparams["nesterov"].number_value == 1  # a bool is a number, as in PyTorch
    assert "skip" not in start.hparams
    experiment = metadata.parse_experiment_plugin_data(content[metadata.EXPERIMENT_TAG])
    assert [h.name for h in experiment.hparam_infos] == ["lr", "optim", "layers", "nesterov"]
    optim = experiment.hparam_infos[1]
    assert [v.string_value for v in optim.domain_discrete.values] == ["sgd", "adam"]
    assert [m.name.tag for m in experiment.metric_infos] == ["hparam/accuracy"]
    end = metadata.parse_session_end_info_plugin_data(content[metadata.SESSION_END_INFO_TAG])
    assert end.status == 1  # STATUS_SUCCESS
    assert [(e.step, e.value) for e in acc.Scalars("hparam/accuracy")] == [(2, pytest.approx(0.9))]


def test_add_hparams_default_run_name_is_the_time(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": ember.tensor(0.5)}, {"m": 1.0})
    assert float(_hparams_run(tmp_path).name) > 1.6e9


def test_add_hparams_rejects_bad_arguments(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(TypeError, match="dictionary"):
            w.add_hparams([("lr", 0.1)], {})
        with pytest.raises(TypeError, match="hparam_domain_discrete"):
            w.add_hparams({"lr": 0.1}, {}, hparam_domain_discrete={"lr": ["a"]})
        with pytest.raises(ValueError, match="value should be one of"):
            w.add_hparams({"lr": [0.1]}, {})


def test_hparams_match_torch(tmp_path, torch_mod):
    TorchSummaryWriter = torch_summary_writer(torch_mod)
    from tensorboard.plugins.hparams import metadata

    def log(writer):
        writer.add_hparams(
            {"lr": 0.01, "bs": 32, "opt": "adam", "flag": False},
            {"hparam/loss": 0.25},
            hparam_domain_discrete={"bs": [16, 32]},
            run_name="run",
        )
        writer.close()

    log(SummaryWriter(tmp_path / "ember"))
    log(TorchSummaryWriter(tmp_path / "torch"))
    ours = accumulate(tmp_path / "ember" / "run")
    theirs = accumulate(tmp_path / "torch" / "run")
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    def contents(acc):  # parsed: a map's entries may be serialized in any order
        found = acc.PluginTagToContent(metadata.PLUGIN_NAME)
        return {tag: HParamsPluginData.FromString(data) for tag, data in found.items()}

    assert contents(ours) == contents(theirs)
    assert read_back(tmp_path / "ember" / "run") == read_back(tmp_path / "torch" / "run")


# --- log_dir, purge_step, flush, close ---------------------------------------------------------
def test_default_log_dir_is_runs_date_host_comment(tmp_path, monkeypatch):
    import socket

    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1")
    w.close()
    head, name = os.path.split(w.log_dir)
    assert head == "runs" and w.get_logdir() == w.log_dir
    assert name.endswith("_" + socket.gethostname() + "_lr0.1")
    from datetime import datetime

    datetime.strptime(name[: len("Jan01_00-00-00")], "%b%d_%H-%M-%S")
    assert (tmp_path / w.log_dir).is_dir()


def test_log_dir_may_be_a_path_object(tmp_path):
    with SummaryWriter(tmp_path / "exp") as w:
        assert w.file_writer.get_logdir() == str(tmp_path / "exp")
        w.add_scalar("x", 1.0)
    assert accumulate(tmp_path / "exp").Tags()["scalars"] == ["x"]


def test_purge_step_hides_later_events_of_the_crashed_run(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for step in range(10):
            w.add_scalar("loss", float(step), step)
    # the crashed run's file sorts first, whatever the clock says
    (crashed,) = list(tmp_path.iterdir())
    crashed.rename(tmp_path / "events.out.tfevents.0000000001.crashed")
    with SummaryWriter(tmp_path, purge_step=5) as w:
        for step in range(5, 8):
            w.add_scalar("loss", step + 0.5, step)
    got = [(e.step, e.value) for e in accumulate(tmp_path).Scalars("loss")]
    assert got == [(s, float(s)) for s in range(5)] + [(s, s + 0.5) for s in range(5, 8)]


def test_flush_makes_events_readable_before_close(tmp_path):
    w = SummaryWriter(tmp_path, flush_secs=1000)
    w.add_scalar("x", 1.0, 0)
    w.add_scalars("s", {"a": 2.0}, 0)
    w.flush()
    assert [e.value for e in accumulate(tmp_path).Scalars("x")] == [1.0]
    assert [e.value for e in accumulate(tmp_path / "s_a").Scalars("s")] == [2.0]
    w.close()


def test_close_twice_is_harmless_and_writing_after_close_opens_a_new_file(tmp_path):
    w = SummaryWriter(tmp_path)
    w.add_scalar("x", 1.0, 0)
    w.close()
    w.close()
    w.flush()  # nothing open: nothing to do
    assert w.file_writer is None and w.all_writers is None
    w.add_scalar("x", 2.0, 1)
    w.close()
    assert len(list(tmp_path.iterdir())) == 2
    assert [(e.step, e.value) for e in accumulate(tmp_path).Scalars("x")] == [(0, 1.0), (1, 2.0)]


def test_context_manager_closes_every_writer(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_scalars("m", {"a": 1.0, "b": 2.0}, 0)
        writers = list(w.all_writers.values())
    assert len(writers) == 3 and all(f._closed for f in writers)
    assert w.all_writers is None


def test_file_writer_reopen_continues_in_a_new_file(tmp_path):
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary

    fw = FileWriter(tmp_path)
    fw.reopen()  # open: nothing happens
    fw.add_summary(Summary(value=[Summary.Value(tag="x", simple_value=1.0)]), 0)
    fw.close()
    fw.reopen()
    fw.add_event(Event(summary=Summary(value=[Summary.Value(tag="x", simple_value=2.0)])), 1)
    fw.close()
    assert len(list(tmp_path.iterdir())) == 2
    assert [e.value for e in accumulate(tmp_path).Scalars("x")] == [1.0, 2.0]


def test_filename_suffix_names_every_event_file(tmp_path):
    with SummaryWriter(tmp_path, filename_suffix=".v2") as w:
        w.add_scalars("m", {"a": 1.0}, 0)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 2 and all(p.name.endswith(".v2") for p in files)
