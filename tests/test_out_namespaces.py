"""out= on the functions of ember.linalg, ember.fft, ember.special, ember.nn.functional and
the top-level functions the OpInfo conformance suite found without it (src/ember/_out.py)."""

import numpy as np
import pytest

import ember

# (name, call(module, x, **out)) - each call passes ``out`` to the function under test
CASES = [
    ("linalg.inv", lambda m, x, **o: m.linalg.inv(x @ x.mT + m.eye(3, dtype=x.dtype), **o)),
    ("linalg.det", lambda m, x, **o: m.linalg.det(x, **o)),
    ("fft.rfft", lambda m, x, **o: m.fft.rfft(x, **o)),
    ("special.erfcx", lambda m, x, **o: m.special.erfcx(x, **o)),
    ("special.zeta", lambda m, x, **o: m.special.zeta(x.abs() + 2, 2.0, **o)),
    ("nn.functional.gelu", lambda m, x, **o: m.nn.functional.gelu(x, **o)),
    ("nn.functional.softshrink", lambda m, x, **o: m.nn.functional.softshrink(x, **o)),
    ("softmax", lambda m, x, **o: m.softmax(x, 1, **o)),
    ("take", lambda m, x, **o: m.take(x, m.tensor([0, 5]), **o)),
    ("tensordot", lambda m, x, **o: m.tensordot(x, x, dims=([1], [1]), **o)),
]


@pytest.mark.parametrize(("name", "call"), CASES, ids=[c[0] for c in CASES])
def test_out_matches_torch(torch_mod, name, call):
    x = np.random.default_rng(0).standard_normal((3, 3))
    want = call(torch_mod, torch_mod.tensor(x))
    out = ember.zeros(tuple(want.shape), dtype=getattr(ember, str(want.dtype).split(".")[-1]))
    got = call(ember, ember.tensor(x), out=out)
    assert got is out
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-6, atol=1e-9)


def test_linalg_svd_writes_all_three_outs():
    a = ember.tensor([[3.0, 1.0], [1.0, 2.0]])
    outs = (ember.zeros(2, 2), ember.zeros(2), ember.zeros(2, 2))
    result = ember.linalg.svd(a, out=outs)
    assert all(r is o for r, o in zip(result, outs, strict=True))
    np.testing.assert_allclose(((outs[0] * outs[1]) @ outs[2]).numpy(), a.numpy(), atol=1e-6)


def test_out_refuses_autograd_as_torch():
    x = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ember.special.erfcx(x, out=ember.zeros(3))


def test_linalg_lstsq_takes_out_as_torch(torch_mod):
    a = np.random.default_rng(0).standard_normal((4, 3))
    b = np.random.default_rng(1).standard_normal((4, 2))
    want = torch_mod.linalg.lstsq(torch_mod.tensor(a), torch_mod.tensor(b))
    outs = tuple(
        ember.empty(0, dtype=d) for d in (ember.float64,) * 2 + (ember.int64, ember.float64)
    )
    got = ember.linalg.lstsq(ember.tensor(a), ember.tensor(b), out=outs)
    assert got[0] is outs[0]
    np.testing.assert_allclose(outs[0].numpy(), want.solution.numpy(), rtol=1e-10)
