"""Arranging pixels for TensorBoard: image layouts to HWC, batches to a grid, matplotlib
figures to pixels, and video batches to frames of grids."""

from __future__ import annotations

import math

import numpy as np


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """An ``(N, C, H, W)`` batch (C = 1 or 3) as one ``(3, rows*H, cols*W)`` picture, row by row,
    at most ``ncols`` images a row; grey images are repeated into three channels."""
    if not isinstance(images, np.ndarray):
        raise AssertionError(f"make_grid: expected a NumPy array, got {type(images).__name__}")
    if images.ndim == 4 and images.shape[1] == 1:
        images = np.repeat(images, 3, axis=1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError(
            f"make_grid: expected an (N, C, H, W) batch with 1 or 3 channels, got shape "
            f"{images.shape}"
        )
    count, _, height, width = images.shape
    ncols = min(count, ncols)
    nrows = math.ceil(count / ncols)
    canvas = np.zeros((3, height * nrows, width * ncols), dtype=images.dtype)
    for i in range(count):
        row, col = divmod(i, ncols)
        canvas[:, row * height : (row + 1) * height, col * width : (col + 1) * width] = images[i]
    return canvas


def convert_to_HWC(array: np.ndarray, dataformats: str) -> np.ndarray:  # noqa: N802 - torch's name
    """``array`` laid out as ``dataformats`` (NCHW, CHW, HWC, HW, or any order of those
    letters) as one ``(H, W, C)`` picture: a batch becomes a grid, grey becomes RGB."""
    if len(set(dataformats)) != len(dataformats):
        raise AssertionError(f"dataformats {dataformats!r} uses a dimension letter more than once")
    if array.ndim != len(dataformats):
        raise AssertionError(
            f"the image has {array.ndim} dimensions (shape {array.shape}) but dataformats "
            f"{dataformats!r} names {len(dataformats)}"
        )
    dataformats = dataformats.upper()
    if len(dataformats) == 4:
        nchw = array.transpose([dataformats.find(c) for c in "NCHW"])
        return make_grid(nchw).transpose(1, 2, 0)
    if len(dataformats) == 3:
        hwc = array.transpose([dataformats.find(c) for c in "HWC"])
        return np.repeat(hwc, 3, axis=2) if hwc.shape[2] == 1 else hwc
    if len(dataformats) == 2:
        hw = array.transpose([dataformats.find(c) for c in "HW"])
        return np.stack([hw, hw, hw], axis=2)
    raise AssertionError(f"dataformats {dataformats!r}: expected 2, 3 or 4 dimension letters")


def figure_to_image(figures, close: bool = True) -> np.ndarray:
    """A matplotlib figure rendered to a ``(3, H, W)`` uint8 array (a list of figures: an
    ``(N, 3, H, W)`` batch); each figure is closed afterwards when ``close``."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    def render(figure) -> np.ndarray:
        canvas = FigureCanvasAgg(figure)  # Agg draws the same pixels whatever the GUI backend
        canvas.draw()
        width, height = canvas.get_width_height()
        rgba = np.asarray(canvas.buffer_rgba(), dtype=np.uint8).reshape(height, width, 4)
        chw = np.ascontiguousarray(rgba[:, :, :3].transpose(2, 0, 1))
        if close:
            plt.close(figure)
        return chw

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)


def prepare_video(video: np.ndarray) -> np.ndarray:
    """A ``(B, T, C, H, W)`` batch of clips as ``(T, H', W', C)`` frames, each frame the B
    clips' pictures in a grid (B padded with black clips to a power of two)."""
    batch, frames, channels, height, width = video.shape
    if video.dtype == np.uint8:
        video = np.float32(video) / 255.0
    padded = 1 << (batch - 1).bit_length() if batch > 0 else 0
    if padded != batch:
        blank = np.zeros((padded - batch, frames, channels, height, width))
        video = np.concatenate([video, blank], axis=0)
    nrows = 2 ** ((batch.bit_length() - 1) // 2)
    ncols = video.shape[0] // nrows
    video = video.reshape(nrows, ncols, frames, channels, height, width)
    video = video.transpose(2, 0, 4, 1, 5, 3)  # T, rows, H, cols, W, C
    return video.reshape(frames, nrows * height, ncols * width, channels)
