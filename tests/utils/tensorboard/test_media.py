"""Images, figures, boxes, video and audio (``_media``) written by SummaryWriter and read back
as TensorBoard reads them; images compared with torch's writer where torch is installed."""

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import ember  # noqa: E402
from ember.utils.tensorboard import SummaryWriter  # noqa: E402

from .events import accumulate, pixels, read_back, torch_summary_writer  # noqa: E402


# --- images ------------------------------------------------------------------------------------
def _image(path, tag):
    (event,) = accumulate(path).Images(tag)
    return event, pixels(event.encoded_image_string)


def test_add_image_chw_float_is_scaled_to_uint8(tmp_path):
    img = np.random.default_rng(3).uniform(-0.2, 1.2, size=(3, 5, 7)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_image("img", ember.tensor(img), 1)
    event, got = _image(tmp_path, "img")
    assert (event.step, event.width, event.height) == (1, 7, 5)
    expected = (img.transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(got, expected)


def test_add_image_hwc_uint8_is_kept(tmp_path):
    img = np.random.default_rng(4).integers(0, 256, size=(4, 6, 3), dtype=np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_image("img", img, dataformats="HWC")
    _, got = _image(tmp_path, "img")
    np.testing.assert_array_equal(got, img)


def test_add_image_hw_grey_becomes_rgb(tmp_path):
    img = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    with SummaryWriter(tmp_path) as w:
        w.add_image("grey", ember.tensor(img), dataformats="HW")
        w.add_image("one_channel", ember.tensor(img[None]), dataformats="CHW")
    expected = np.repeat((img * 255).astype(np.uint8)[:, :, None], 3, axis=2)
    for tag in ("grey", "one_channel"):
        event, got = _image(tmp_path, tag)
        assert (event.width, event.height) == (4, 3)
        np.testing.assert_array_equal(got, expected)


def test_add_image_rgba_hwc_keeps_alpha(tmp_path):
    img = np.random.default_rng(5).integers(0, 256, size=(2, 3, 4), dtype=np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_image("rgba", img, dataformats="HWC")
    _, got = _image(tmp_path, "rgba")
    np.testing.assert_array_equal(got, img)


def test_add_image_wrong_dataformats_raises(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(AssertionError, match="dimensions"):
            w.add_image("img", np.zeros((3, 4, 4)), dataformats="HW")
        with pytest.raises(AssertionError, match="more than once"):
            w.add_image("img", np.zeros((3, 4, 4)), dataformats="CHH")


def test_add_images_nchw_makes_a_grid(tmp_path):
    batch = np.random.default_rng(6).uniform(size=(10, 3, 2, 3)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_images("batch", ember.tensor(batch), 0)
    event, got = _image(tmp_path, "batch")
    assert (event.width, event.height) == (8 * 3, 2 * 2)  # 8 a row, 2 rows
    as_uint8 = (batch * 255).clip(0, 255).astype(np.uint8)
    np.testing.assert_array_equal(got[:2, 3:6], as_uint8[1].transpose(1, 2, 0))
    np.testing.assert_array_equal(got[2:4, 3:6], as_uint8[9].transpose(1, 2, 0))
    assert not got[2:4, 6:].any()  # the rest of the second row is black


def test_add_images_nhwc(tmp_path):
    batch = np.random.default_rng(7).integers(0, 256, size=(2, 3, 4, 3), dtype=np.uint8)
    with SummaryWriter(tmp_path) as w:
        w.add_images("batch", batch, dataformats="NHWC")
    _, got = _image(tmp_path, "batch")
    np.testing.assert_array_equal(got, np.concatenate([batch[0], batch[1]], axis=1))


def test_add_figure_renders_and_closes_the_figure(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    fig = plt.figure(figsize=(2, 1), dpi=50)
    fig.gca().plot([0, 1], [0, 1])
    kept = plt.figure(figsize=(1, 1), dpi=40)
    with SummaryWriter(tmp_path) as w:
        w.add_figure("fig", fig, 3)
        w.add_figure("kept", kept, 3, close=False)
        w.add_figure("two", [plt.figure(figsize=(1, 1), dpi=30) for _ in range(2)], 3)
    assert not plt.fignum_exists(fig.number)
    assert plt.fignum_exists(kept.number)
    plt.close(kept)
    event, got = _image(tmp_path, "fig")
    assert (event.step, event.width, event.height) == (3, 100, 50)
    assert got.shape == (50, 100, 3) and got.min() < 255  # the line is drawn
    event, _ = _image(tmp_path, "two")
    assert (event.width, event.height) == (60, 30)


def test_add_image_with_boxes_draws_red_boxes(tmp_path):
    img = np.zeros((3, 20, 20), dtype=np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_image_with_boxes("boxed", img, np.array([[2, 2, 10, 10]]), 0, labels=["cat"])
    _, got = _image(tmp_path, "boxed")
    assert tuple(got[2, 6]) == (255, 0, 0)  # the top edge
    assert not got[15:, 15:].any()


def test_images_match_torch(tmp_path, torch_mod):
    TorchSummaryWriter = torch_summary_writer(torch_mod)
    rng = np.random.default_rng(8)
    chw = rng.uniform(size=(3, 6, 5)).astype(np.float32)
    hw = rng.uniform(size=(6, 5)).astype(np.float32)
    nchw = rng.uniform(size=(9, 1, 4, 4)).astype(np.float32)
    hwc = rng.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)

    def log(writer, tensor):
        writer.add_image("chw", tensor(chw), 0)
        writer.add_image("hw", tensor(hw), 1, dataformats="HW")
        writer.add_image("hwc", tensor(hwc), 2, dataformats="HWC")
        writer.add_images("nchw", tensor(nchw), 3)
        writer.close()

    log(SummaryWriter(tmp_path / "ember"), ember.tensor)
    log(TorchSummaryWriter(tmp_path / "torch"), torch_mod.tensor)
    assert read_back(tmp_path / "ember") == read_back(tmp_path / "torch")


def test_add_audio_writes_a_wav(tmp_path):
    import io
    import wave

    sound = np.sin(np.linspace(0, 20, 400)).astype(np.float32)[None]
    with SummaryWriter(tmp_path) as w:
        w.add_audio("tone", ember.tensor(sound), 0, sample_rate=8000)
    (event,) = accumulate(tmp_path).Audio("tone")
    assert (event.sample_rate, event.length_frames, event.content_type) == (8000, 400, "audio/wav")
    with wave.open(io.BytesIO(event.encoded_audio_string)) as wav:
        frames = np.frombuffer(wav.readframes(400), dtype="<i2")
    np.testing.assert_array_equal(frames, (sound[0] * 32767).astype("<i2"))


def test_add_video_writes_an_animated_gif(tmp_path):
    from PIL import Image

    clips = np.random.default_rng(9).uniform(size=(3, 5, 3, 4, 6)).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_video("clip", ember.tensor(clips), 0, fps=10)
    (event,) = accumulate(tmp_path).Images("clip")
    # 3 clips padded to 4, in rows of 2 ** ((bit_length(3) - 1) // 2) = 1: one row of 4
    assert (event.width, event.height) == (4 * 6, 4)
    import io

    gif = Image.open(io.BytesIO(event.encoded_image_string))
    assert gif.format == "GIF" and gif.n_frames == 5
