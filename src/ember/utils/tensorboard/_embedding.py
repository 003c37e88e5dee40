"""The embedding projector's files: the vectors (``tensors.tsv``), their labels
(``metadata.tsv``), a sprite of their images (``sprite.png``) and the entry that
``projector_config.pbtxt`` lists for them."""

from __future__ import annotations

import io
import math

import numpy as np
from tensorboard.compat import tf
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

from ._convert import make_np
from ._layout import make_grid


def _join(directory: str, name: str) -> str:
    # `tf` is TensorFlow when it is installed (its gfile has join) and otherwise tensorboard's
    # stub, whose file systems join (os.path.join locally, '/' for a URL such as s3://)
    if hasattr(tf.io.gfile, "join"):
        return tf.io.gfile.join(directory, name)
    return tf.io.gfile.get_filesystem(directory).join(directory, name)


def _write(path: str, data: bytes) -> None:
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(data)


def make_tsv(metadata: list, save_path: str, metadata_header: list | None = None) -> None:
    """``metadata.tsv``: one label a line, or with ``metadata_header`` a header line and one
    tab-separated row of columns a line."""
    if metadata_header:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError(
                f"metadata_header has {len(metadata_header)} columns but each metadata row has "
                f"{len(metadata[0])}"
            )
        lines = ["\t".join(str(cell) for cell in row) for row in [metadata_header, *metadata]]
    else:
        lines = [str(label) for label in metadata]
    _write(_join(save_path, "metadata.tsv"), ("\n".join(lines) + "\n").encode("utf-8"))


def make_sprite(label_img, save_path: str) -> None:
    """``sprite.png``: the ``(N, C, H, W)`` images in [0, 1] in a square grid, as the projector
    requires (rows of ceil(sqrt(N)) images, the rest of the square black)."""
    from PIL import Image

    images = make_np(label_img)
    per_row = math.ceil(images.shape[0] ** 0.5)
    grid = make_grid(images, ncols=per_row).transpose(1, 2, 0)  # HWC
    square = np.zeros((grid.shape[1], grid.shape[1], 3))
    square[: grid.shape[0]] = grid
    picture = Image.fromarray(np.uint8((square * 255).clip(0, 255)))
    with io.BytesIO() as buffer:
        picture.save(buffer, format="PNG")
        _write(_join(save_path, "sprite.png"), buffer.getvalue())


def make_mat(mat: np.ndarray, save_path: str) -> None:
    """``tensors.tsv``: one tab-separated vector a line, each value as Python prints it."""
    lines = ["\t".join(str(v) for v in row) + "\n" for row in mat.tolist()]
    _write(_join(save_path, "tensors.tsv"), "".join(lines).encode("utf-8"))


def embedding_info(metadata, label_img, subdir: str, global_step: int, tag: str) -> EmbeddingInfo:
    """The projector config's entry for one embedding written under ``subdir``."""
    info = EmbeddingInfo()
    info.tensor_name = f"{tag}:{str(global_step).zfill(5)}"
    info.tensor_path = _join(subdir, "tensors.tsv")
    if metadata is not None:
        info.metadata_path = _join(subdir, "metadata.tsv")
    if label_img is not None:
        info.sprite.image_path = _join(subdir, "sprite.png")
        shape = make_np(label_img).shape
        info.sprite.single_image_dim.extend([shape[3], shape[2]])  # width, height
    return info
