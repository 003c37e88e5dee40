"""add_embedding's projector files (``_embedding``): contents read back, and byte for byte
equal to torch's where torch is installed."""

import os

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import ember  # noqa: E402
from ember.utils.tensorboard import SummaryWriter  # noqa: E402

from .events import pixels, torch_summary_writer  # noqa: E402


# --- embeddings --------------------------------------------------------------------------------
def test_add_embedding_writes_projector_files(tmp_path):
    from google.protobuf import text_format
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig

    mat = ember.tensor([[1.0, 2.5], [3.0, -4.0], [0.5, 0.0]])
    images = ember.rand(3, 3, 4, 4)
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(mat, metadata=["a", "b", 7], label_img=images, tag="feat/1")
        w.add_embedding(mat, metadata=[["a", 1], ["b", 2], ["c", 3]], global_step=3,
                        metadata_header=["name", "id"])  # fmt: skip
    subdir = tmp_path / "00000" / "feat%2f1"
    assert (subdir / "tensors.tsv").read_text() == "1.0\t2.5\n3.0\t-4.0\n0.5\t0.0\n"
    assert (subdir / "metadata.tsv").read_text() == "a\nb\n7\n"
    sprite = pixels((subdir / "sprite.png").read_bytes())
    assert sprite.shape == (8, 8, 3)  # 2 x 2 images of 4 x 4: a square
    np.testing.assert_array_equal(
        sprite[:4, 4:], (images[1].numpy().transpose(1, 2, 0) * 255).astype(np.uint8)
    )
    assert (tmp_path / "00003" / "default" / "metadata.tsv").read_text() == (
        "name\tid\na\t1\nb\t2\nc\t3\n"
    )
    config = text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(), ProjectorConfig())
    first, second = config.embeddings
    assert first.tensor_name == "feat/1:00000"
    assert first.tensor_path == os.path.join("00000", "feat%2f1", "tensors.tsv")
    assert first.metadata_path == os.path.join("00000", "feat%2f1", "metadata.tsv")
    assert list(first.sprite.single_image_dim) == [4, 4]
    assert second.tensor_name == "default:00003" and not second.sprite.image_path


def test_add_embedding_checks_counts(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(AssertionError, match="labels"):
            w.add_embedding(np.zeros((3, 2)), metadata=["a"])
        with pytest.raises(AssertionError, match="2D"):
            w.add_embedding(np.zeros((3, 2, 1)), global_step=1)


def test_embeddings_match_torch(tmp_path, torch_mod):
    TorchSummaryWriter = torch_summary_writer(torch_mod)
    rng = np.random.default_rng(11)
    mat = rng.normal(size=(5, 3)).astype(np.float32)
    images = rng.uniform(size=(5, 3, 2, 2)).astype(np.float32)

    def log(writer, tensor):
        writer.add_embedding(tensor(mat), metadata=list("abcde"), label_img=tensor(images))
        writer.add_embedding(tensor(mat), global_step=1, tag="x")
        writer.close()

    log(SummaryWriter(tmp_path / "ember"), ember.tensor)
    log(TorchSummaryWriter(tmp_path / "torch"), torch_mod.tensor)
    for name in [
        "projector_config.pbtxt",
        "00000/default/tensors.tsv",
        "00000/default/metadata.tsv",
        "00000/default/sprite.png",
        "00001/x/tensors.tsv",
    ]:
        assert (tmp_path / "ember" / name).read_bytes() == (tmp_path / "torch" / name).read_bytes()
