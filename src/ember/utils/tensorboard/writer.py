"""``SummaryWriter``: PyTorch's TensorBoard logger, writing event files with the
``tensorboard`` package's own ``EventFileWriter`` (queued, flushed in the background)."""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime
from typing import TYPE_CHECKING

from tensorboard.compat import tf
from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.plugins.projector import visualize_embeddings
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ._convert import make_np
from ._embedding import embedding_info, make_mat, make_sprite, make_tsv
from ._graph import graph, onnx_graph
from ._layout import figure_to_image
from .summary import (
    TENSORFLOW_BINS,
    audio,
    custom_scalars,
    histogram,
    histogram_raw,
    hparams,
    image,
    image_boxes,
    mesh,
    pr_curve,
    pr_curve_raw,
    scalar,
    tensor_proto,
    text,
    video,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes ``Event`` protos to one event file in ``log_dir`` (created if missing).

    Events are queued and written by a background thread: at most ``max_queue`` wait, and
    the queue is flushed at least every ``flush_secs`` seconds.
    """

    def __init__(
        self, log_dir, max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = ""
    ) -> None:
        self._options = (str(log_dir), max_queue, flush_secs, filename_suffix)
        self.event_writer = EventFileWriter(*self._options)
        self._closed = False

    def get_logdir(self) -> str:
        """The directory the event file is in."""
        return self.event_writer.get_logdir()

    def add_event(self, event: Event, step=None, walltime: float | None = None) -> None:
        """Queue ``event``, stamped with ``walltime`` (default: now) and ``step``."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)  # a NumPy or tensor step becomes the int the proto needs
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime: float | None = None) -> None:
        """Queue ``summary`` (a ``Summary`` proto) as an event at ``global_step``."""
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile: tuple, walltime: float | None = None) -> None:
        """Queue a ``(GraphDef, RunMetadata)`` pair: the graph, and its run metadata tagged
        ``step1`` as PyTorch's writer tags it."""
        graph_def, run_metadata = graph_profile
        self.add_event(Event(graph_def=graph_def.SerializeToString()), None, walltime)
        tagged = TaggedRunMetadata(tag="step1", run_metadata=run_metadata.SerializeToString())
        self.add_event(Event(tagged_run_metadata=tagged), None, walltime)

    def add_onnx_graph(self, graph_def, walltime: float | None = None) -> None:
        """Queue a ``GraphDef`` made from an ONNX model."""
        self.add_event(Event(graph_def=graph_def.SerializeToString()), None, walltime)

    def flush(self) -> None:
        """Write every queued event to disk."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.event_writer.close()
        self._closed = True

    def reopen(self) -> None:
        """After ``close``, go on writing, into a new event file in the same directory; does
        nothing while open."""
        if self._closed:
            self.event_writer = EventFileWriter(*self._options)
            self._closed = False


class SummaryWriter:
    """Writes scalars, histograms, images, text, graphs, hyperparameters, embeddings and PR
    curves to event files in ``log_dir`` for TensorBoard.

    Args:
        log_dir: the directory; default ``runs/<date>_<time>_<host><comment>``.
        comment: appended to the default ``log_dir`` (ignored when ``log_dir`` is given).
        purge_step: after a crash at step T+X and a restart at step T, pass T: TensorBoard
            then hides the events of earlier runs in this ``log_dir`` at steps >= T.
        max_queue: events queued before an ``add`` call writes them to disk.
        flush_secs: how often, in seconds, queued events are written to disk.
        filename_suffix: appended to the event files' names.

    Needs the ``tensorboard`` package (``pip install ember[tensorboard]``).

    Example::
        >>> from ember.utils.tensorboard import SummaryWriter
        >>> with SummaryWriter("runs/exp1") as writer:
        ...     for step in range(100):
        ...         writer.add_scalar("loss", 1.0 / (step + 1), step)
    """

    def __init__(
        self,
        log_dir=None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: int = 120,
        filename_suffix: str = "",
    ) -> None:
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        # the writers are made again by the next add_* call after close()
        self.file_writer: FileWriter | None = None
        self.all_writers: dict | None = None
        self._get_file_writer()
        self.default_bins = list(TENSORFLOW_BINS)

    def _get_file_writer(self) -> FileWriter:
        """The writer of ``log_dir``'s own event file, made anew after ``close``."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(
                self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix
            )
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # a session restart at purge_step: readers drop earlier events from that step on
                step = self.purge_step
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                start = SessionLog(status=SessionLog.START)
                self.file_writer.add_event(Event(step=step, session_log=start))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> str:
        """The directory event files are written to."""
        return self.log_dir

    # --- scalars ---------------------------------------------------------------------------
    def add_scalar(
        self,
        tag: str,
        scalar_value,
        global_step=None,
        walltime: float | None = None,
        new_style: bool = False,
        double_precision: bool = False,
    ) -> None:
        """Log one number (a Python number, or a one-element tensor or array) at ``global_step``.

        Example::
            >>> writer.add_scalar("loss", loss.item(), step)
        """
        summary = scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(
        self, main_tag: str, tag_scalar_dict: dict, global_step=None, walltime: float | None = None
    ) -> None:
        """Log several numbers on one chart: each ``tag`` goes to its own run,
        ``<log_dir>/<main_tag>_<tag>``, under the tag ``main_tag``.

        Example::
            >>> writer.add_scalars("loss", {"train": 0.5, "val": 0.7}, step)
        """
        walltime = time.time() if walltime is None else walltime
        log_dir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            run_dir = log_dir + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(run_dir)
            if writer is None:
                writer = FileWriter(run_dir, self.max_queue, self.flush_secs, self.filename_suffix)
                self.all_writers[run_dir] = writer
            writer.add_summary(scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag: str, tensor, global_step=None, walltime: float | None = None) -> None:
        """Log a whole tensor (TensorBoard's tensor plugin)."""
        self._get_file_writer().add_summary(tensor_proto(tag, tensor), global_step, walltime)

    def add_custom_scalars(self, layout: dict) -> None:
        """Group logged scalars into charts: ``{category: {chart title: ['Multiline', tags]
        or ['Margin', [value tag, lower tag, upper tag]]}}``. Call once per writer."""
        self._get_file_writer().add_summary(custom_scalars(layout))

    def add_custom_scalars_multilinechart(
        self, tags: list, category: str = "default", title: str = "untitled"
    ) -> None:
        """One custom chart with a line for each of ``tags``."""
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(
        self, tags: list, category: str = "default", title: str = "untitled"
    ) -> None:
        """One custom chart of ``tags = [value, lower, upper]`` as a line in a band."""
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    # --- distributions ---------------------------------------------------------------------
    def add_histogram(
        self,
        tag: str,
        values,
        global_step=None,
        bins="tensorflow",
        walltime: float | None = None,
        max_bins: int | None = None,
    ) -> None:
        """Log the histogram of ``values``. ``bins``: ``'tensorflow'`` (TensorBoard's default
        edges, growing 10 % a bin), or anything ``numpy.histogram`` takes (``'auto'``,
        ``'fd'``, a count, edges).

        Example::
            >>> writer.add_histogram("fc1.weight", model.fc1.weight, step)
        """
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        summary = histogram(tag, values, bins, max_bins=max_bins)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_histogram_raw(
        self,
        tag: str,
        min,  # noqa: A002 - PyTorch's argument names
        max,  # noqa: A002
        num,
        sum,  # noqa: A002
        sum_squares,
        bucket_limits,
        bucket_counts,
        global_step=None,
        walltime: float | None = None,
    ) -> None:
        """Log a histogram computed elsewhere (``bucket_limits``: each bucket's right edge)."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError(
                f"len(bucket_limits) != len(bucket_counts) ({len(bucket_limits)} != "
                f"{len(bucket_counts)}): give each bucket its right edge"
            )
        summary = histogram_raw(
            tag, min, max, num, sum, sum_squares, list(bucket_limits), list(bucket_counts)
        )
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_pr_curve(
        self,
        tag: str,
        labels,
        predictions,
        global_step=None,
        num_thresholds: int = 127,
        weights=None,
        walltime: float | None = None,
    ) -> None:
        """Log a precision-recall curve of binary ``labels`` against ``predictions`` in [0, 1]
        (at most 127 thresholds).

        Example::
            >>> writer.add_pr_curve("pr", labels, probabilities, step)
        """
        labels, predictions = make_np(labels), make_np(predictions)
        summary = pr_curve(tag, labels, predictions, num_thresholds, weights)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_pr_curve_raw(
        self,
        tag: str,
        true_positive_counts,
        false_positive_counts,
        true_negative_counts,
        false_negative_counts,
        precision,
        recall,
        global_step=None,
        num_thresholds: int = 127,
        weights=None,
        walltime: float | None = None,
    ) -> None:
        """Log a precision-recall curve from counts computed elsewhere (one per threshold)."""
        summary = pr_curve_raw(
            tag,
            true_positive_counts,
            false_positive_counts,
            true_negative_counts,
            false_negative_counts,
            precision,
            recall,
            num_thresholds,
            weights,
        )
        self._get_file_writer().add_summary(summary, global_step, walltime)

    # --- media -----------------------------------------------------------------------------
    def add_image(
        self,
        tag: str,
        img_tensor,
        global_step=None,
        walltime: float | None = None,
        dataformats: str = "CHW",
    ) -> None:
        """Log an image: ``(3, H, W)`` by default, or as ``dataformats`` says (``'HWC'``,
        ``'HW'``, ...). Floats are taken as [0, 1] and scaled to 0-255, uint8 as is.

        Example::
            >>> writer.add_image("sample", ember.rand(3, 32, 32), step)
        """
        summary = image(tag, img_tensor, dataformats=dataformats)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_images(
        self,
        tag: str,
        img_tensor,
        global_step=None,
        walltime: float | None = None,
        dataformats: str = "NCHW",
    ) -> None:
        """Log a batch of images, ``(N, 3, H, W)`` by default, as one grid picture (8 a row)."""
        summary = image(tag, img_tensor, dataformats=dataformats)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_image_with_boxes(
        self,
        tag: str,
        img_tensor,
        box_tensor,
        global_step=None,
        walltime: float | None = None,
        rescale: float = 1,
        dataformats: str = "CHW",
        labels=None,
    ) -> None:
        """Log an image with a box drawn for each ``(xmin, ymin, xmax, ymax)`` row of
        ``box_tensor``, captioned by ``labels`` (one per box) when given."""
        if labels is not None:
            if isinstance(labels, str):
                labels = [labels]
            if len(labels) != box_tensor.shape[0]:
                labels = None  # PyTorch drops captions that do not match the boxes
        summary = image_boxes(
            tag, img_tensor, box_tensor, rescale=rescale, dataformats=dataformats, labels=labels
        )
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_figure(
        self,
        tag: str,
        figure: Figure | list[Figure],
        global_step=None,
        close: bool = True,
        walltime: float | None = None,
    ) -> None:
        """Log a matplotlib figure (or a list of them, as a grid) as an image; the figure is
        closed afterwards unless ``close=False``.

        Example::
            >>> fig, ax = plt.subplots()
            >>> ax.plot(losses)
            >>> writer.add_figure("losses", fig, step)
        """
        dataformats = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime, dataformats)

    def add_video(
        self, tag: str, vid_tensor, global_step=None, fps: float = 4, walltime: float | None = None
    ) -> None:
        """Log ``(N, T, C, H, W)`` clips (floats in [0, 1] or uint8) as an animated GIF."""
        self._get_file_writer().add_summary(video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(
        self,
        tag: str,
        snd_tensor,
        global_step=None,
        sample_rate: int = 44100,
        walltime: float | None = None,
    ) -> None:
        """Log a ``(1, L)`` sound with samples in [-1, 1]."""
        summary = audio(tag, snd_tensor, sample_rate=sample_rate)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_text(
        self, tag: str, text_string: str, global_step=None, walltime: float | None = None
    ) -> None:
        """Log text (TensorBoard renders Markdown).

        Example::
            >>> writer.add_text("config", "lr = 0.1, batch = 32", 0)
        """
        self._get_file_writer().add_summary(text(tag, text_string), global_step, walltime)

    def add_mesh(
        self,
        tag: str,
        vertices,
        colors=None,
        faces=None,
        config_dict=None,
        global_step=None,
        walltime: float | None = None,
    ) -> None:
        """Log a 3-D mesh or point cloud: ``(B, N, 3)`` vertices, colors and faces."""
        summary = mesh(tag, vertices, colors, faces, config_dict)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    # --- models and experiments ------------------------------------------------------------
    def add_graph(
        self, model, input_to_model=None, verbose: bool = False, use_strict_trace: bool = True
    ) -> None:
        """Log the graph of one forward of ``model`` on ``input_to_model`` (a tensor or a tuple
        of arguments): each op a node, grouped by module (``Net/Linear[fc1]/linear``).

        Example::
            >>> writer.add_graph(model, ember.randn(1, 784))
        """
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose, use_strict_trace))

    def add_onnx_graph(self, prototxt) -> None:
        """Log the graph of an ONNX model file (needs the ``onnx`` package)."""
        self._get_file_writer().add_onnx_graph(onnx_graph(prototxt))

    def add_hparams(
        self,
        hparam_dict: dict,
        metric_dict: dict,
        hparam_domain_discrete: dict | None = None,
        run_name: str | None = None,
        global_step=None,
    ) -> None:
        """Log one trial's hyperparameters and final metrics for TensorBoard's HPARAMS tab,
        in a run of its own, ``<log_dir>/<run_name>`` (default: the current time). The
        metrics are logged there as scalars too.

        Example::
            >>> writer.add_hparams({"lr": 0.1, "batch": 32}, {"hparam/accuracy": 0.9})
        """
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        experiment, session_start, session_end = hparams(
            hparam_dict, metric_dict, hparam_domain_discrete
        )
        run_name = run_name or str(time.time())
        log_dir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=log_dir) as run:
            for summary in (experiment, session_start, session_end):
                run.file_writer.add_summary(summary, global_step)
            for tag, value in metric_dict.items():
                run.add_scalar(tag, value, global_step)

    @staticmethod
    def _encode(rawstr: str) -> str:
        """``rawstr`` safe as one directory name: ``%``, ``/`` and ``\\`` percent-encoded."""
        return rawstr.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")

    def add_embedding(
        self,
        mat,
        metadata: list | None = None,
        label_img=None,
        global_step=None,
        tag: str = "default",
        metadata_header: list | None = None,
    ) -> None:
        """Log ``(N, D)`` vectors for the embedding projector, with a label (or a row of
        columns under ``metadata_header``) and an ``(N, C, H, W)`` image per vector if given.

        Files go to ``<log_dir>/<step, 5 digits>/<tag>/`` and ``projector_config.pbtxt``.

        Example::
            >>> writer.add_embedding(features, metadata=class_names, label_img=images)
        """
        mat = make_np(mat)
        global_step = 0 if global_step is None else global_step
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        log_dir = self._get_file_writer().get_logdir()
        save_path = os.path.join(log_dir, subdir)
        if tf.io.gfile.exists(save_path):
            if not tf.io.gfile.isdir(save_path):
                raise NotADirectoryError(
                    f"Path: `{save_path}` exists, but is a file. Cannot proceed."
                )
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        else:
            tf.io.gfile.makedirs(save_path)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError(
                    f"#labels should equal with #data points ({len(metadata)} labels for "
                    f"{mat.shape[0]} vectors)"
                )
            make_tsv(metadata, save_path, metadata_header=metadata_header)
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError(
                    f"#images should equal with #data points ({label_img.shape[0]} images for "
                    f"{mat.shape[0]} vectors)"
                )
            make_sprite(label_img, save_path)
        if mat.ndim != 2:
            raise AssertionError(
                f"mat should be 2D, where mat.size(0) is the number of data points; got shape "
                f"{mat.shape}"
            )
        make_mat(mat, save_path)
        # the config lists every embedding this writer logged: kept here, written whole
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        info = embedding_info(metadata, label_img, subdir, global_step, tag)
        self._projector_config.embeddings.extend([info])
        visualize_embeddings(log_dir, self._projector_config)

    # --- lifetime --------------------------------------------------------------------------
    def flush(self) -> None:
        """Write every queued event of every run this writer writes to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file; a later ``add_*`` call opens new ones. Closing
        twice is harmless."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.close()
