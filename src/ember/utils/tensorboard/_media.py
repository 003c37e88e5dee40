"""Pictures and sound as ``Summary`` protos: PNG images (with boxes drawn on), animated GIF
videos and WAV audio, encoded with Pillow and the standard library's ``wave``."""

from __future__ import annotations

import io
import warnings
import wave

import numpy as np
from tensorboard.compat.proto.summary_pb2 import Summary

from ._convert import make_np
from ._layout import convert_to_HWC, prepare_video


def _to_uint8(array: np.ndarray) -> np.ndarray:
    """Pixels as uint8: uint8 input is kept, anything else is taken as [0, 1] and scaled by
    255, then clipped to [0, 255] and truncated (as PyTorch does)."""
    scale = 1 if array.dtype == np.uint8 else 255
    return (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def image(tag: str, tensor, rescale: float = 1, dataformats: str = "NCHW") -> Summary:
    """An image ``Summary`` of ``tensor`` laid out as ``dataformats`` (a batch becomes a grid).

    Example::
        >>> s = image("img", ember.rand(3, 8, 8), dataformats="CHW")
        >>> s.value[0].image.height, s.value[0].image.width
        (8, 8)
    """
    hwc = convert_to_HWC(make_np(tensor), dataformats)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(_to_uint8(hwc), rescale))])


def image_boxes(
    tag: str, tensor_image, tensor_boxes, rescale: float = 1, dataformats: str = "CHW", labels=None
) -> Summary:
    """An image ``Summary`` with a red box drawn for each ``(xmin, ymin, xmax, ymax)`` row of
    ``tensor_boxes``, captioned by ``labels`` when given."""
    hwc = convert_to_HWC(make_np(tensor_image), dataformats)
    picture = make_image(_to_uint8(hwc), rescale, rois=make_np(tensor_boxes), labels=labels)
    return Summary(value=[Summary.Value(tag=tag, image=picture)])


def _draw_box(picture, xmin, ymin, xmax, ymax, caption=None, color="Red", thickness=2):
    from PIL import ImageDraw, ImageFont

    draw = ImageDraw.Draw(picture)
    corners = [(xmin, ymin), (xmin, ymax), (xmax, ymax), (xmax, ymin), (xmin, ymin)]
    draw.line(corners, width=thickness, fill=color)
    if caption:
        font = ImageFont.load_default()
        left, top, right, bottom = font.getbbox(caption)
        text_width, text_height = right - left, bottom - top
        margin = np.ceil(0.05 * text_height)
        # the caption sits on a filled strip at the box's bottom-left corner
        draw.rectangle(
            [(xmin, ymax - text_height - 2 * margin), (xmin + text_width, ymax)], fill=color
        )
        draw.text((xmin + margin, ymax - text_height - margin), caption, fill="black", font=font)
    return picture


def draw_boxes(picture, boxes, labels=None):
    """``picture`` (a PIL image) with each ``(xmin, ymin, xmax, ymax)`` row of ``boxes`` drawn."""
    for i, (xmin, ymin, xmax, ymax) in enumerate(np.asarray(boxes)[:, :4]):
        caption = None if labels is None else labels[i]
        picture = _draw_box(picture, xmin, ymin, xmax, ymax, caption)
    return picture


def make_image(tensor: np.ndarray, rescale: float = 1, rois=None, labels=None) -> Summary.Image:
    """An ``(H, W, C)`` uint8 array as a PNG ``Summary.Image`` (resized by ``rescale``); the
    height and width recorded are the array's."""
    from PIL import Image

    height, width, channels = tensor.shape
    picture = Image.fromarray(tensor)
    if rois is not None:
        picture = draw_boxes(picture, rois, labels=labels)
    size = (int(width * rescale), int(height * rescale))
    if size != picture.size:
        picture = picture.resize(size, Image.Resampling.LANCZOS)
    with io.BytesIO() as buffer:
        picture.save(buffer, format="PNG")
        png = buffer.getvalue()
    return Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=png)


def video(tag: str, tensor, fps: float = 4) -> Summary:
    """A ``(B, T, C, H, W)`` batch of clips as an animated GIF ``Summary`` (the B clips in a
    grid in each frame)."""
    frames = _to_uint8(prepare_video(make_np(tensor)))
    return Summary(value=[Summary.Value(tag=tag, image=make_video(frames, fps))])


def make_video(tensor: np.ndarray, fps: float) -> Summary.Image:
    """``(T, H, W, C)`` uint8 frames as an animated GIF, shown ``fps`` frames a second.

    PyTorch encodes through moviepy; Pillow writes the same kind of GIF without it."""
    from PIL import Image

    _, height, width, channels = tensor.shape
    mode = {1: "L", 3: "RGB", 4: "RGBA"}.get(channels)
    if mode is None:
        raise ValueError(f"video: frames need 1, 3 or 4 channels, got {channels}")
    pictures = [Image.fromarray(frame.squeeze(-1) if channels == 1 else frame) for frame in tensor]
    with io.BytesIO() as buffer:
        pictures[0].save(
            buffer,
            format="GIF",
            save_all=True,
            append_images=pictures[1:],
            duration=1000.0 / fps,
            loop=0,
        )
        gif = buffer.getvalue()
    return Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=gif)


def audio(tag: str, tensor, sample_rate: int = 44100) -> Summary:
    """A one-channel sound in [-1, 1] as a 16-bit WAV ``Summary`` (louder samples are clipped,
    with a warning)."""
    samples = make_np(tensor).squeeze()
    if np.abs(samples).max() > 1:
        warnings.warn("audio amplitude out of range, auto clipped.", stacklevel=3)
        samples = samples.clip(-1, 1)
    if samples.ndim != 1:
        raise AssertionError(
            f"audio: expected a 1-dimensional sound, got shape {samples.shape} after squeezing"
        )
    pcm = (samples * np.iinfo(np.int16).max).astype("<i2")
    with io.BytesIO() as buffer:
        with wave.open(buffer, "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(sample_rate)
            wav.writeframes(pcm.tobytes())
        encoded = buffer.getvalue()
    sound = Summary.Audio(
        sample_rate=sample_rate,
        num_channels=1,
        length_frames=pcm.shape[-1],
        encoded_audio_string=encoded,
        content_type="audio/wav",
    )
    return Summary(value=[Summary.Value(tag=tag, audio=sound)])
