import numpy as np

import ember
from ember.autograd.graph import walk
from ember.utils.checkpoint import checkpoint, checkpoint_sequential

nn = ember.nn


def _model():
    ember.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [nn.Linear(8, 8), nn.Tanh(), nn.Dropout(0.2)]
    return nn.Sequential(*layers)


def _grads(model, x):
    return [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]


def test_checkpoint_sequential_gradients_equal_the_plain_run_with_dropout():
    model = _model()
    x = ember.randn(5, 8, requires_grad=True)
    ember.manual_seed(1)
    plain = model(x).pow(2).sum()
    plain.backward()
    expected = _grads(model, x)
    model.zero_grad()
    x.grad = None
    ember.manual_seed(1)
    ckpt = checkpoint_sequential(model, 3, x, use_reentrant=False).pow(2).sum()
    ckpt.backward()
    assert ckpt.item() == plain.item()
    for a, b in zip(expected, _grads(model, x)):
        np.testing.assert_array_equal(a, b)


def test_checkpointed_segment_keeps_no_intermediates():
    model = _model().eval()
    x = ember.randn(5, 8, requires_grad=True)
    plain_saved = sum(len(n._saved or ()) + (n._saved_out is not None) for n in walk(model(x)))
    out = checkpoint(model, x, use_reentrant=False)
    ckpt_nodes = walk(out)
    assert [n.name() for n in ckpt_nodes][0] == "CheckpointFunctionBackward"
    ckpt_saved = sum(len(n._saved or ()) + (n._saved_out is not None) for n in ckpt_nodes)
    # the segment's input, and the empty tensor that carries the edge (use_reentrant=False)
    assert ckpt_saved == 2 and plain_saved > 10


def test_checkpoint_with_keyword_and_non_tensor_arguments():
    w = ember.tensor([1.0, 2.0], requires_grad=True)

    def block(x, scale, shift=0.0):
        return (x * w * scale + shift).sum()

    x = ember.tensor([3.0, 4.0], requires_grad=True)
    out = checkpoint(block, x, 2.0, shift=1.0, use_reentrant=False)
    out.backward()
    assert out.item() == 24.0  # (3·1·2 + 1) + (4·2·2 + 1)
    np.testing.assert_array_equal(w.grad.numpy(), [6.0, 8.0])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_checkpoint_matches_torch(torch_mod):
    def run(m):
        m.manual_seed(0)
        net = m.nn.Sequential(m.nn.Linear(4, 4), m.nn.Tanh(), m.nn.Linear(4, 2)).double()
        with m.no_grad():
            for i, p in enumerate(net.parameters()):
                p.copy_(m.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * (i + 1)))
        x = m.tensor(np.arange(8.0).reshape(2, 4) / 8, requires_grad=True)
        out = m.utils.checkpoint.checkpoint(net, x, use_reentrant=False)
        (out * out).sum().backward()
        return [p.grad.numpy() for p in net.parameters()] + [x.grad.numpy()]

    for a, b in zip(run(ember), run(torch_mod)):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def _deep_mlp(depth=20, width=128):
    ember.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [ember.nn.Linear(width, width), ember.nn.Tanh()]
    return ember.nn.Sequential(*layers)


def _peak_of_step(model, x, segments):
    with ember.memory_scope() as mem:
        if segments:
            out = checkpoint_sequential(model, segments, x, use_reentrant=False)
        else:
            out = model(x)
        out.square().mean().backward()
    return mem.peak, [p.grad.clone() for p in model.parameters()]


def test_checkpointing_a_20_layer_mlp_lowers_the_peak_measured_by_memory_scope():
    model = _deep_mlp()
    x = ember.randn(2048, 128)
    plain_peak, plain_grads = _peak_of_step(model, x, segments=0)
    model.zero_grad(set_to_none=True)
    ckpt_peak, ckpt_grads = _peak_of_step(model, x, segments=4)
    for a, b in zip(plain_grads, ckpt_grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    # 20 saved activations of 1 MB each against 3 segment inputs plus one live segment
    assert ckpt_peak < 0.6 * plain_peak, (ckpt_peak, plain_peak)
