"""Reading event files back the way TensorBoard does (``EventAccumulator``), as plain values
that compare with ``==`` across writers."""

import io

import numpy as np
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.util import tensor_util


def accumulate(path) -> event_accumulator.EventAccumulator:
    """Every event under the run directory ``path`` (no sampling: size guidance 0)."""
    guidance = {kind: 0 for kind in event_accumulator.DEFAULT_SIZE_GUIDANCE}
    return event_accumulator.EventAccumulator(str(path), size_guidance=guidance).Reload()


def pixels(encoded: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(encoded)))


def histogram_values(event) -> tuple:
    h = event.histogram_value
    return (h.min, h.max, h.num, h.sum, h.sum_squares, list(h.bucket_limit), list(h.bucket))


def read_back(path) -> dict:
    """``{(kind, tag): [(step, value), ...]}`` for every scalar, histogram, image, audio and
    tensor in the run ``path``; images as their pixels, tensors as arrays (lists)."""
    acc = accumulate(path)
    tags = acc.Tags()
    out = {}
    for tag in tags["scalars"]:
        out["scalars", tag] = [(e.step, e.value) for e in acc.Scalars(tag)]
    for tag in tags["histograms"]:
        out["histograms", tag] = [(e.step, histogram_values(e)) for e in acc.Histograms(tag)]
    for tag in tags["images"]:
        out["images", tag] = [
            (e.step, e.width, e.height, pixels(e.encoded_image_string).tolist())
            for e in acc.Images(tag)
        ]
    for tag in tags["audio"]:
        out["audio", tag] = [(e.step, e.encoded_audio_string) for e in acc.Audio(tag)]
    for tag in tags["tensors"]:
        out["tensors", tag] = [
            (e.step, tensor_util.make_ndarray(e.tensor_proto).tolist()) for e in acc.Tensors(tag)
        ]
    return out


def torch_summary_writer(torch_mod):
    """torch's SummaryWriter class (``torch_mod``: the conftest fixture's torch)."""
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter
