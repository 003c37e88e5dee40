"""Index, mask and target tensors on another device than the input raise torch's error."""

from __future__ import annotations

import pytest

import ember
import ember.nn.functional as F

_SAME_DEVICE = "Expected all tensors to be on the same device, but found at least two devices"


def _cases():
    gpu = ember.randn(3, 4, device="cuda")
    idx = ember.tensor([[0, 1, 2, 0]])
    return {
        "gather": lambda: gpu.gather(0, idx),
        "scatter": lambda: gpu.scatter(0, idx, 1.0),
        "index_add": lambda: gpu.index_add(0, ember.tensor([0]), ember.ones(1, 4, device="cuda")),
        "masked_fill": lambda: gpu.masked_fill(ember.ones(3, 4, dtype=ember.bool), 0.0),
        "nll_loss_target": lambda: F.nll_loss(gpu, ember.tensor([0, 1, 2])),
        "nll_loss_weight": lambda: F.nll_loss(
            gpu, ember.tensor([0, 1, 2], device="cuda"), weight=ember.ones(4)
        ),
        "embedding": lambda: F.embedding(ember.tensor([0, 1]), gpu),
    }


@pytest.mark.parametrize("op", [
    "gather", "scatter", "index_add", "masked_fill", "nll_loss_target", "nll_loss_weight",
    "embedding",
])  # fmt: skip
def test_index_on_the_cpu_with_a_cuda_input_raises(cuda_device, op):
    with pytest.raises(RuntimeError, match=_SAME_DEVICE):
        _cases()[op]()


def test_a_zero_dim_cpu_mask_is_a_scalar_mask(cuda_device):
    gpu = ember.ones(2, device="cuda")
    assert gpu.masked_fill(ember.tensor(True), 0.0).cpu().tolist() == [0.0, 0.0]
