"""`ember demo --device cuda` and ember.compile on cuda tensors, over the fake CuPy."""

import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import cli


@pytest.mark.parametrize("model", ["mlp"])  # the CNN program has its own test
def test_demo_trains_on_cuda_as_on_cpu(cuda_device, tmp_path, model, monkeypatch):
    from ember.cli import demo

    # the picture of the curves costs seconds (matplotlib) and has its own tests
    monkeypatch.setattr(demo, "plot_curves", lambda history, path: path.write_bytes(b""))
    outs = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / device
        args = ["demo", "--model", model, "--epochs", "1", "--batch-size", "256"]
        args += ["--out", str(out), "--no-progress"]
        assert cli.main([*args, "--device", device]) == 0
        outs[device] = out
    cpu = ember.load(outs["cpu"] / "model.safetensors")
    cuda = ember.load(outs["cuda"] / "model.safetensors")
    assert cpu.keys() == cuda.keys()
    for name in cpu:
        assert cuda[name].device == ember.device("cpu")  # saved from the GPU, read on the host
        np.testing.assert_allclose(cuda[name].numpy(), cpu[name].numpy(), rtol=1e-4, atol=1e-5)


def test_demo_refuses_a_gpu_index_that_does_not_exist(fake_cuda, tmp_path, capsys):
    code = cli.main(["demo", "--epochs", "1", "--out", str(tmp_path), "--device", "cuda:5"])
    assert code != 0
    assert "there are 2 GPU(s)" in capsys.readouterr().err


def test_compile_on_cuda_runs_the_step_eagerly_with_one_warning(cuda_device):
    def run(device, compiled):
        ember.manual_seed(0)
        model = nn.Linear(4, 2).to(device)
        opt = ember.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = ember.compile(step) if compiled else step
        x, y = ember.randn(3, 4).to(device), ember.tensor([0, 1, 1]).to(device)
        losses = [fn(x, y) for _ in range(3)]
        return losses, model.weight

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses, weight = run("cuda", compiled=True)
    assert [str(w.message) for w in caught if "CPU (NumPy)" in str(w.message)]
    assert all(loss.is_cuda for loss in losses) and weight.is_cuda
    ref_losses, ref_weight = run("cpu", compiled=False)
    np.testing.assert_allclose(
        [v.item() for v in losses], [v.item() for v in ref_losses], rtol=1e-6
    )
    np.testing.assert_allclose(
        weight.detach().cpu().numpy(), ref_weight.detach().numpy(), rtol=1e-6
    )
