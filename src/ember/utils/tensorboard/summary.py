"""One builder per kind of TensorBoard data: each turns values into the ``Summary`` protocol
buffer that TensorBoard's plugin for that kind reads (scalars, histograms, text, tensors, PR
curves, hparams, custom-scalar layouts, meshes). Pictures and sound are in ``_media``.

The names and arguments are ``torch.utils.tensorboard.summary``'s; the protos, plugin
metadata and tensor encodings are the ``tensorboard`` package's own.
"""

from __future__ import annotations

import json
import logging
import struct

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.custom_scalar import metadata as custom_scalar_metadata
from tensorboard.plugins.pr_curve import metadata as pr_curve_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.util import tensor_util

from ..._tensor import Tensor
from ._convert import make_np
from ._media import audio, draw_boxes, image, image_boxes, make_image, make_video, video

__all__ = [
    "audio",
    "compute_curve",
    "custom_scalars",
    "draw_boxes",
    "half_to_int",
    "histogram",
    "histogram_raw",
    "hparams",
    "image",
    "image_boxes",
    "int_to_half",
    "make_histogram",
    "make_image",
    "make_video",
    "mesh",
    "pr_curve",
    "pr_curve_raw",
    "scalar",
    "tensor_proto",
    "text",
    "video",
]

logger = logging.getLogger(__name__)

# The most thresholds a PR curve keeps (PyTorch's limit, kept so both write the same curves).
MAX_PR_THRESHOLDS = 127
_MINIMUM_COUNT = 1e-7  # keeps precision and recall finite where no prediction passes


def _tensorflow_bins() -> list:
    """TensorBoard's default histogram edges: ±1e-12 growing by 10 % per bin to ±1e20, and 0.

    Built by repeated multiplication, as TensorBoard's and PyTorch's writers build them, so
    that a value on an edge falls into the same bin with every writer."""
    edge, positive = 1e-12, []
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    return [-e for e in reversed(positive)] + [0] + positive


TENSORFLOW_BINS = _tensorflow_bins()


def half_to_int(f: float) -> int:
    """The bits of ``f`` as a float32, read as an int32 (PyTorch's helper, kept for its
    callers; ember's tensor protos store float16 through ``tensor_util`` instead).

    Example::
        >>> int_to_half(half_to_int(1.5))
        1.5
    """
    return struct.unpack("i", struct.pack("f", f))[0]


def int_to_half(i: int) -> float:
    """The inverse of ``half_to_int``."""
    return struct.unpack("f", struct.pack("i", i))[0]


def scalar(
    name: str,
    tensor,
    collections=None,
    new_style: bool = False,
    double_precision: bool = False,
) -> Summary:
    """A one-value ``Summary``: ``simple_value``, or with ``new_style`` a scalars-plugin tensor
    (float32, or float64 with ``double_precision``).

    Example::
        >>> scalar("loss", ember.tensor(0.5)).value[0].simple_value
        0.5
    """
    array = make_np(tensor).squeeze()
    if array.ndim != 0:
        raise AssertionError(
            f"scalar {name!r}: expected one element, got {array.size} elements of shape "
            f"{array.shape}"
        )
    value = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=value)])
    dtype = np.float64 if double_precision else np.float32
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    proto = tensor_util.make_tensor_proto(np.array(value, dtype=dtype))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=metadata)])


def tensor_proto(tag: str, tensor) -> Summary:
    """The whole tensor as a tensor-plugin ``Summary`` (bfloat16 is written as float32)."""
    array = make_np(tensor)
    if array.nbytes >= 1 << 31:
        raise ValueError(
            f"tensor {tag!r} has {array.nbytes} bytes; a protocol buffer holds less than 2 GiB"
        )
    try:
        proto = tensor_util.make_tensor_proto(np.asarray(array))
    except TypeError as exc:
        raise ValueError(f"{tag} has unsupported tensor dtype {array.dtype}") from exc
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="tensor"))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=proto)])


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts) -> Summary:  # noqa: A002 - PyTorch's argument names
    """A histogram ``Summary`` from statistics already computed (``bucket_limits`` are the
    right edges of the buckets)."""
    hist = HistogramProto(
        min=min,
        max=max,
        num=num,
        sum=sum,
        sum_squares=sum_squares,
        bucket_limit=bucket_limits,
        bucket=bucket_counts,
    )
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def histogram(name: str, values, bins, max_bins: int | None = None) -> Summary:
    """A histogram ``Summary`` of ``values`` binned by ``bins`` (edges, a count, or a NumPy
    rule name such as ``'auto'`` or ``'fd'``)."""
    array = make_np(values).astype(float)
    return Summary(value=[Summary.Value(tag=name, histo=make_histogram(array, bins, max_bins))])


def make_histogram(values: np.ndarray, bins, max_bins: int | None = None) -> HistogramProto:
    """``values`` binned by ``np.histogram``, trimmed to the buckets from the first non-empty
    one to the last, with at most ``max_bins`` buckets (neighbours merged)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, edges = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        # merge each run of `group` neighbouring bins, padding the last run with empty bins
        group = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % group)).reshape(-1, group).sum(axis=1)
        edges = np.append(edges[:-1:group], edges[-1])
    filled = np.flatnonzero(counts)
    if filled.size == 0:
        raise ValueError(
            "The histogram is empty: no value fell inside the bins (are they all NaN or "
            "outside the bin edges?)"
        )
    first, last = filled[0], filled[-1]
    # TensorBoard keeps each bucket's right edge only; a leading empty bucket whose right edge
    # is the first filled bin's left edge keeps that edge too
    bucket = np.concatenate([[0], counts[first : last + 1]])
    limits = edges[first : last + 2]
    return HistogramProto(
        min=values.min(),
        max=values.max(),
        num=len(values),
        sum=values.sum(),
        sum_squares=values.dot(values),
        bucket_limit=limits.tolist(),
        bucket=bucket.tolist(),
    )


def text(tag: str, text: str) -> Summary:
    """A text-plugin ``Summary`` (tag ``<tag>/text_summary``, Markdown rendered by TensorBoard)."""
    proto = TensorProto(
        dtype="DT_STRING",
        string_val=[text.encode("utf-8")],
        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]),
    )
    metadata = text_metadata.create_summary_metadata(display_name="", description="")
    return Summary(
        value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata, tensor=proto)]
    )


def compute_curve(labels, predictions, num_thresholds: int = None, weights=None) -> np.ndarray:
    """Rows TP, FP, TN, FN, precision, recall at ``num_thresholds`` thresholds evenly spaced
    in [0, 1]: the counts of predictions at or above each threshold (TensorBoard's method)."""
    weights = 1.0 if weights is None else weights
    bucket = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)
    value_range = (0, num_thresholds - 1)
    tp_per_bucket = np.histogram(
        bucket, bins=num_thresholds, range=value_range, weights=positive * weights
    )[0]
    fp_per_bucket = np.histogram(
        bucket, bins=num_thresholds, range=value_range, weights=(1.0 - positive) * weights
    )[0]
    # what passes threshold k: every bucket from k up
    tp = np.cumsum(tp_per_bucket[::-1])[::-1]
    fp = np.cumsum(fp_per_bucket[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(_MINIMUM_COUNT, tp + fp)
    recall = tp / np.maximum(_MINIMUM_COUNT, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def _pr_curve_summary(tag: str, data: np.ndarray, num_thresholds: int) -> Summary:
    metadata = pr_curve_metadata.create_summary_metadata(
        display_name="", description="", num_thresholds=num_thresholds
    )
    proto = tensor_util.make_tensor_proto(np.asarray(data, dtype=np.float32))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=proto)])


def pr_curve(tag: str, labels, predictions, num_thresholds: int = 127, weights=None) -> Summary:
    """A PR-curve ``Summary`` of binary ``labels`` against ``predictions`` in [0, 1] (at most
    127 thresholds)."""
    num_thresholds = min(num_thresholds, MAX_PR_THRESHOLDS)
    data = compute_curve(
        make_np(labels), make_np(predictions), num_thresholds=num_thresholds, weights=weights
    )
    return _pr_curve_summary(tag, data, num_thresholds)


def pr_curve_raw(
    tag: str, tp, fp, tn, fn, precision, recall, num_thresholds: int = 127, weights=None
) -> Summary:
    """A PR-curve ``Summary`` from counts already computed (one value per threshold each)."""
    num_thresholds = min(num_thresholds, MAX_PR_THRESHOLDS)
    rows = [
        (make_np(x) if isinstance(x, Tensor) else np.asarray(x)).reshape(-1)
        for x in (tp, fp, tn, fn, precision, recall)
    ]
    return _pr_curve_summary(tag, np.stack(rows), num_thresholds)


def _hparam_domain(values: list, field: str):
    return struct_pb2.ListValue(values=[struct_pb2.Value(**{field: v}) for v in values])


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None) -> tuple:
    """The hparams plugin's three ``Summary`` protos: the experiment (hyperparameter and
    metric names), the session's start (its hyperparameter values) and its end.

    Values may be numbers, strings, bools or one-element tensors; ``None`` is skipped. As in
    PyTorch, a bool is recorded as the number 0 or 1 (``bool`` is an ``int``).
    """
    from tensorboard.plugins.hparams import metadata as hparams_metadata
    from tensorboard.plugins.hparams.api_pb2 import (
        DataType,
        Experiment,
        HParamInfo,
        MetricInfo,
        MetricName,
        Status,
    )
    from tensorboard.plugins.hparams.plugin_data_pb2 import (
        HParamsPluginData,
        SessionEndInfo,
        SessionStartInfo,
    )

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for key, domain in hparam_domain_discrete.items():
        if (
            key not in hparam_dict
            or not isinstance(domain, list)
            or not all(isinstance(d, type(hparam_dict[key])) for d in domain)
        ):
            raise TypeError(
                f"parameter: hparam_domain_discrete[{key}] should be a list of same type as "
                f"hparam_dict[{key}]."
            )

    start = SessionStartInfo()
    infos = []
    for key, value in hparam_dict.items():
        if value is None:
            continue
        domain = hparam_domain_discrete.get(key)
        if isinstance(value, (int, float)):  # bool too: PyTorch records it as a number
            start.hparams[key].number_value = value
            kind, field = "DATA_TYPE_FLOAT64", "number_value"
        elif isinstance(value, str):
            start.hparams[key].string_value = value
            kind, field = "DATA_TYPE_STRING", "string_value"
        elif isinstance(value, Tensor):
            start.hparams[key].number_value = make_np(value).reshape(-1)[0]
            kind, field, domain = "DATA_TYPE_FLOAT64", "number_value", None
        else:
            raise ValueError(
                f"hparam {key!r}: value should be one of int, float, str, bool, or "
                f"ember.Tensor, got {type(value).__name__}"
            )
        infos.append(
            HParamInfo(
                name=key,
                type=DataType.Value(kind),
                domain_discrete=None if domain is None else _hparam_domain(domain, field),
            )
        )

    def summary(tag: str, plugin_data) -> Summary:
        metadata = hparams_metadata.create_summary_metadata(plugin_data)
        return Summary(value=[Summary.Value(tag=tag, metadata=metadata)])

    experiment = Experiment(
        hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict]
    )
    end = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))
    return (
        summary(hparams_metadata.EXPERIMENT_TAG, HParamsPluginData(experiment=experiment)),
        summary(
            hparams_metadata.SESSION_START_INFO_TAG, HParamsPluginData(session_start_info=start)
        ),
        summary(hparams_metadata.SESSION_END_INFO_TAG, HParamsPluginData(session_end_info=end)),
    )


def custom_scalars(layout: dict) -> Summary:
    """The custom-scalars plugin's layout: ``{category: {chart: ['Multiline', tags] or
    ['Margin', [value, lower, upper]]}}``."""
    categories = []
    for category, charts in layout.items():
        chart_protos = []
        for title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError(
                        f"margin chart {title!r}: expected 3 tags (value, lower, upper), got "
                        f"{len(tags)}"
                    )
                series = layout_pb2.MarginChartContent.Series(
                    value=tags[0], lower=tags[1], upper=tags[2]
                )
                chart = layout_pb2.Chart(
                    title=title, margin=layout_pb2.MarginChartContent(series=[series])
                )
            else:
                chart = layout_pb2.Chart(
                    title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)
                )
            chart_protos.append(chart)
        categories.append(layout_pb2.Category(title=category, chart=chart_protos))
    proto = TensorProto(
        dtype="DT_STRING",
        string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
        tensor_shape=TensorShapeProto(),
    )
    return Summary(
        value=[
            Summary.Value(
                tag=custom_scalar_metadata.CONFIG_SUMMARY_TAG,
                tensor=proto,
                metadata=custom_scalar_metadata.create_summary_metadata(),
            )
        ]
    )


def mesh(
    tag: str, vertices, colors, faces, config_dict, display_name=None, description=None
) -> Summary:
    """The mesh plugin's ``Summary``: one value each for vertices, faces and colors (those
    given), every one ``(B, N, 3)``."""
    from tensorboard.plugins.mesh import metadata as mesh_metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData

    json_config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [
        (array, kind)
        for array, kind in (
            (vertices, MeshPluginData.VERTEX),
            (faces, MeshPluginData.FACE),
            (colors, MeshPluginData.COLOR),
        )
        if array is not None
    ]
    components = mesh_metadata.get_components_bitmask([kind for _, kind in parts])
    values = []
    for array, kind in parts:
        data = np.asarray(make_np(array), dtype=np.float32)
        metadata = mesh_metadata.create_summary_metadata(
            tag,
            display_name,
            kind,
            components,
            data.shape,
            description,
            json_config=json_config,
        )
        values.append(
            Summary.Value(
                tag=mesh_metadata.get_instance_name(tag, kind),
                tensor=tensor_util.make_tensor_proto(data),
                metadata=metadata,
            )
        )
    return Summary(value=values)
