"""tqdm and TensorBoard around an ember training loop (progress_logging.py), as under torch."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

from .test_programs import _load

pytest.importorskip("tqdm")
pytest.importorskip("tensorboard")
from tests.utils.tensorboard.events import read_back  # noqa: E402


def _run(library, tmp_path):
    progress = io.StringIO()
    log_dir = tmp_path / library
    losses = _load("progress_logging", library).main(str(log_dir), progress)
    return losses, progress.getvalue(), read_back(log_dir)


def test_tqdm_bar_shows_the_loss_and_tensorboard_reads_it_back(tmp_path):
    losses, progress, events = _run("ember", tmp_path)
    assert len(losses) == 18 and losses[-1] < losses[0]
    bars = progress.replace("\r", "\n")
    assert "epoch 2: 100%|##########| 6/6" in bars
    postfix = re.findall(r"loss=([0-9.]+)\]", bars)
    assert float(postfix[-1]) == pytest.approx(losses[-1], rel=1e-3)
    steps, values = zip(*events["scalars", "train/loss"])
    assert list(steps) == list(range(18))
    np.testing.assert_allclose(values, losses, rtol=1e-6)
    tensor_values = [v for _, v in events["scalars", "train/loss_tensor"]]
    np.testing.assert_allclose(tensor_values, losses, rtol=1e-6)
    assert [s for s, _ in events["histograms", "weights/0"]] == [0, 1, 2]
    assert [(s, round(v, 6)) for s, v in events["scalars", "lr"]] == [(0, 0.2), (1, 0.2), (2, 0.2)]


def test_the_same_program_under_torch_logs_the_same_run(tmp_path, torch_mod):
    ours, our_progress, our_events = _run("ember", tmp_path)
    theirs, their_progress, their_events = _run("torch", tmp_path)
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)
    assert set(our_events) == set(their_events)
    for key in our_events:
        if key[0] == "scalars":
            ours_steps, ours_values = zip(*our_events[key])
            theirs_steps, theirs_values = zip(*their_events[key])
            assert ours_steps == theirs_steps
            np.testing.assert_allclose(ours_values, theirs_values, rtol=1e-4, atol=1e-6)
    histograms = zip(our_events["histograms", "weights/0"], their_events["histograms", "weights/0"])
    for (_, a), (_, b) in histograms:
        assert a[2] == b[2]  # element count
        np.testing.assert_allclose(a[:2], b[:2], rtol=1e-4)  # min, max

    # timings differ; the rest of each bar (counts, the loss postfix) must not
    def drop_times(text):
        text = re.sub(r"\[[0-9:<?]+, [^,\]]+", "[", text)
        return [line.rstrip() for line in re.split("[\r\n]", text) if line.strip()]

    assert "loss=" in drop_times(our_progress)[-1]
    assert drop_times(our_progress) == drop_times(their_progress)
