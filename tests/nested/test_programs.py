"""Programs as users write them with torch.nested, run under ember and under torch."""

import numpy as np
import pytest

import ember

from .helpers import arrays, assert_close

LENGTHS = [5, 2, 7, 3]


def variable_length_batch(torch, layout):
    """Sequences of different lengths through Linear + ReLU + Linear, summed per sequence;
    one optimizer step. Returns what a user would look at."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sequences = [torch.tensor(a) for a in arrays([(n, 6) for n in LENGTHS], seed=3)]
    batch = torch.nested.nested_tensor(sequences, layout=getattr(torch, layout))
    out = model(batch)
    per_sequence = out.to_padded_tensor(0.0).sum(dim=1)  # (4, 3): padding adds nothing
    loss = (per_sequence**2).mean()
    optimizer.zero_grad()
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    optimizer.step()
    return loss.detach(), per_sequence.detach(), grads, [p.detach() for p in model.parameters()]


def attention_block(torch):
    """The SDPA-with-nested-tensors pattern: a jagged batch through a self-attention block
    with a residual and a layer norm, gradients to the inputs."""
    torch.manual_seed(0)
    embed, heads = 8, 2
    q_proj, k_proj, v_proj = (torch.nn.Linear(embed, embed) for _ in range(3))
    proj = torch.nn.Linear(embed, embed)
    norm = torch.nn.LayerNorm(embed)
    parts = [torch.tensor(a, requires_grad=True) for a in arrays([(n, 8) for n in LENGTHS])]
    x = torch.nested.as_nested_tensor(parts, layout=torch.jagged)
    q, k, v = (
        layer(x).unflatten(-1, [heads, embed // heads]).transpose(1, 2)
        for layer in (q_proj, k_proj, v_proj)
    )
    attended = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    y = norm(x + proj(attended.transpose(1, 2).flatten(-2)))
    y.values().sum().backward()
    return y, [p.grad for p in parts], q_proj.weight.grad, v_proj.bias.grad, norm.weight.grad


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_variable_length_batch_sums_each_sequence(layout):
    loss, per_sequence, grads, _ = variable_length_batch(ember, layout)
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(6, 16), ember.nn.ReLU(), ember.nn.Linear(16, 3))
    for row, a in zip(per_sequence, arrays([(n, 6) for n in LENGTHS], seed=3)):
        np.testing.assert_allclose(
            row.numpy(), model(ember.tensor(a)).sum(0).detach().numpy(), rtol=1e-5, atol=1e-6
        )
    assert loss.item() > 0 and all(g.abs().sum().item() > 0 for g in grads)


@pytest.mark.parametrize("layout", ["strided", "jagged"])
def test_variable_length_batch_matches_torch(torch_nested, layout):
    assert_close(
        variable_length_batch(ember, layout), variable_length_batch(torch_nested, layout), atol=1e-5
    )


def test_attention_block_matches_torch(torch_nested):
    assert_close(attention_block(ember), attention_block(torch_nested), atol=1e-4)


def padded_to_nested_and_back(torch):
    """A padded batch and its lengths as a jagged view (torch.nested.narrow), made contiguous,
    run through a pointwise op, padded again."""
    padded = torch.tensor(np.arange(24.0, dtype=np.float32).reshape(3, 4, 2))
    lengths = torch.tensor([2, 4, 1])
    view = torch.nested.narrow(padded, dim=1, start=0, length=lengths, layout=torch.jagged)
    packed = view.contiguous()
    out = torch.nested.to_padded_tensor(packed.sin() * 2, padding=-1.0)
    return view.offsets(), packed.offsets(), out, view.is_contiguous(), packed.is_contiguous()


def test_padded_to_nested_and_back():
    offsets, packed_offsets, out, view_contiguous, packed_contiguous = padded_to_nested_and_back(
        ember
    )
    assert offsets.tolist() == [0, 4, 8, 9] and packed_offsets.tolist() == [0, 2, 6, 7]
    assert (view_contiguous, packed_contiguous) == (False, True)
    want = np.full((3, 4, 2), -1.0, dtype=np.float32)
    base = np.arange(24.0, dtype=np.float32).reshape(3, 4, 2)
    for i, n in enumerate([2, 4, 1]):
        want[i, :n] = np.sin(base[i, :n]) * 2
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


def test_padded_to_nested_and_back_matches_torch(torch_nested):
    e, t = padded_to_nested_and_back(ember), padded_to_nested_and_back(torch_nested)
    assert [x.tolist() for x in e[:2]] == [x.tolist() for x in t[:2]] and e[3:] == t[3:]
    assert_close(e[2], t[2])
