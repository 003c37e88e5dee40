"""Image layouts to HWC, batches to grids, video batches to frames."""

import numpy as np
import pytest

pytest.importorskip("tensorboard")

from ember.utils.tensorboard._layout import convert_to_HWC, make_grid, prepare_video  # noqa: E402


@pytest.mark.parametrize(
    ("shape", "dataformats"),
    [((3, 4, 5), "CHW"), ((4, 5, 3), "HWC"), ((5, 4, 3), "WHC"), ((3, 5, 4), "CWH")],
)
def test_convert_to_hwc_puts_height_width_channels_in_order(shape, dataformats):
    array = np.arange(60).reshape(shape)
    hwc = convert_to_HWC(array, dataformats)
    assert hwc.shape == (4, 5, 3)
    index = {c: i for i, c in enumerate(dataformats)}
    position = [None] * 3
    position[index["H"]], position[index["W"]], position[index["C"]] = 1, 2, 0
    assert hwc[1, 2, 0] == array[tuple(position)]


def test_convert_to_hwc_lowercase_and_grey():
    grey = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(convert_to_HWC(grey, "hw"), np.stack([grey] * 3, axis=2))
    np.testing.assert_array_equal(convert_to_HWC(grey.T, "WH"), np.stack([grey] * 3, axis=2))


def test_make_grid_places_images_row_by_row():
    images = np.arange(5, dtype=np.float32).reshape(5, 1, 1, 1) * np.ones((5, 1, 2, 2))
    grid = make_grid(images, ncols=2)
    assert grid.shape == (3, 6, 4)
    assert grid[0, ::2, ::2].tolist() == [[0, 1], [2, 3], [4, 0]]


def test_make_grid_rejects_two_channels():
    with pytest.raises(AssertionError, match="1 or 3 channels"):
        make_grid(np.zeros((2, 2, 4, 4)))


def test_prepare_video_pads_the_batch_to_a_power_of_two():
    video = np.ones((5, 2, 3, 4, 6), dtype=np.uint8) * 255
    frames = prepare_video(video)
    # 8 clips, 2 ** ((bit_length(5) - 1) // 2) = 2 rows of 4
    assert frames.shape == (2, 2 * 4, 4 * 6, 3)
    assert frames[:, :4].min() == 1.0  # the first row: clips 0-3, white
    assert frames[:, 4:, :6].min() == 1.0 and frames[:, 4:, 6:].max() == 0.0  # clip 4, then black
