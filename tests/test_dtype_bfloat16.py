"""bfloat16 (src/ember/_dtype.py): its NumPy dtype comes from ml_dtypes, imported on first use;
without the package every way to make bfloat16 data raises, naming it."""

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember import _dtype as dt


def _run(code: str) -> str:
    """Run ``code`` in a fresh interpreter; its stdout (a failure shows its stderr)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_ml_dtypes_is_imported_when_bfloat16_data_is_first_made():
    out = _run(
        """
        import sys
        import ember
        print("ml_dtypes" in sys.modules)
        x = ember.ones(2, dtype=ember.bfloat16)
        print("ml_dtypes" in sys.modules, x.dtype, x.numpy().dtype, x.float().tolist())
        """
    )
    assert out.split("\n")[:2] == ["False", "True ember.bfloat16 bfloat16 [1.0, 1.0]"]


def test_bfloat16_array_made_outside_ember_is_recognised_on_first_lookup():
    out = _run(
        """
        import ember, ml_dtypes, numpy as np
        from ember import _dtype as dt
        a = np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)
        print(dt.FROM_NUMPY.get(a.dtype), dt.FROM_NUMPY[a.dtype], ember.from_numpy(a).dtype)
        print(dt.FROM_NUMPY.get(np.dtype("datetime64[s]")))
        """
    )
    assert out.split("\n")[:2] == ["ember.bfloat16 ember.bfloat16 ember.bfloat16", "None"]


def test_ml_dtypes_imported_before_ember_is_taken_at_once():
    out = _run(
        """
        import ml_dtypes, ember
        from ember import _dtype as dt
        print(dt._NP_SLOT.__get__(ember.bfloat16))
        """
    )
    assert out.strip() == "bfloat16"


_MAKERS = [
    "ember.ones(2, dtype=ember.bfloat16)",
    "ember.zeros(2, dtype=ember.bfloat16)",
    "ember.empty(2, dtype=ember.bfloat16)",
    "ember.full((2,), 1.5, dtype=ember.bfloat16)",
    "ember.arange(3, dtype=ember.bfloat16)",
    "ember.linspace(0, 1, 3, dtype=ember.bfloat16)",
    "ember.eye(2, dtype=ember.bfloat16)",
    "ember.randn(2, dtype=ember.bfloat16)",
    "ember.rand(2, dtype=ember.bfloat16)",
    "ember.tensor([1.0], dtype=ember.bfloat16)",
    "ember.zeros_like(ember.ones(2), dtype=ember.bfloat16)",
    "ember.ones(2).new_zeros(2, dtype=ember.bfloat16)",
    "ember.ones(2).to(ember.bfloat16)",
    "ember.ones(2).bfloat16()",
    "ember.ones(2).type(ember.bfloat16)",
    "ember.nn.Linear(2, 2).bfloat16()",
    "ember.BFloat16Tensor(2)",
    "ember.finfo(ember.bfloat16)",
]


def test_without_ml_dtypes_bfloat16_raises_naming_the_package_and_never_returns_another_dtype():
    out = _run(
        f"""
        import sys
        sys.modules["ml_dtypes"] = None  # as if it were not installed
        import ember
        for code in {_MAKERS!r}:
            try:
                made = eval(code)
            except RuntimeError as e:
                print("raised" if "pip install ml_dtypes" in str(e) else f"bad message: {{e}}")
            else:
                print(f"{{code}} returned {{made!r}}")
        print(ember.cuda.is_bf16_supported(), ember._dtype.is_available(ember.bfloat16))
        print(ember.ones(2, dtype=ember.float16).dtype, (ember.ones(2) * 2).sum().item())
        lin = ember.nn.Linear(2, 2)
        try:
            with ember.autocast("cpu"):
                lin(ember.ones(1, 2))
        except RuntimeError as e:
            print("autocast raised" if "pip install ml_dtypes" in str(e) else e)
        with ember.autocast("cpu", dtype=ember.float16):
            print(lin(ember.ones(1, 2)).dtype)
        """
    )
    lines = out.strip().split("\n")
    assert lines[: len(_MAKERS)] == ["raised"] * len(_MAKERS)
    assert lines[len(_MAKERS) :] == [
        "False False",
        "ember.float16 4.0",
        "autocast raised",
        "ember.float16",
    ]


def test_bfloat16_is_available_and_round_trips_through_pickle():
    assert dt.is_available(ember.bfloat16)
    assert pickle.loads(pickle.dumps(ember.bfloat16)) is ember.bfloat16
    assert isinstance(ember.bfloat16, ember.dtype)
    assert ember.bfloat16.np.name == "bfloat16" and ember.bfloat16.itemsize == 2


def test_factories_give_bfloat16_as_asked():
    for made in (
        ember.ones(2, dtype=ember.bfloat16),
        ember.zeros(2, dtype=ember.bfloat16),
        ember.empty(2, dtype=ember.bfloat16),
        ember.full((2,), 1.5, dtype=ember.bfloat16),
        ember.arange(2, dtype=ember.bfloat16),
        ember.randn(2, dtype=ember.bfloat16),
    ):
        assert made.dtype is ember.bfloat16 and made.numpy().dtype == ember.bfloat16.np
    assert ember.full((2,), 1.5, dtype=ember.bfloat16).float().tolist() == [1.5, 1.5]
    assert ember.arange(3, dtype=ember.bfloat16).float().tolist() == [0.0, 1.0, 2.0]


def test_cpu_autocast_runs_linear_in_bfloat16_and_backward_reaches_float32_parameters():
    ember.manual_seed(0)
    lin = ember.nn.Linear(3, 2)
    x = ember.randn(4, 3)
    with ember.autocast("cpu"):
        y = lin(x)
    assert y.dtype is ember.bfloat16
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    want = x.numpy() @ w.T + b
    # bfloat16 keeps 8 significant bits: a relative error up to 2^-8 per rounding
    np.testing.assert_allclose(y.float().detach().numpy(), want, rtol=2e-2, atol=2e-2)
    y.float().sum().backward()
    assert lin.weight.grad.dtype is ember.float32 and lin.bias.grad.dtype is ember.float32
    # d(sum y)/dW[i, j] = sum over the batch of x[:, j]; d/db = batch size
    want_w = np.broadcast_to(x.numpy().sum(0), (2, 3))
    np.testing.assert_allclose(lin.weight.grad.numpy(), want_w, rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(lin.bias.grad.numpy(), [4.0, 4.0])


@pytest.mark.parametrize("name", ["float32", "float64", "int64", "bool"])
def test_other_dtypes_keep_a_plain_slot(name):
    # the hot path reads .np on every op: only bfloat16 goes through a property
    assert type(getattr(dt, name if name != "bool" else "bool_")) is dt.dtype


def test_bfloat16_is_a_floating_dtype_to_every_nan_check(torch_mod):
    # ml_dtypes' bfloat16 has NumPy kind "V": checks of kind "f" alone missed it
    def results(m):
        x = m.tensor([float("nan"), -2.0, 0.3]).to(m.bfloat16)
        y = m.tensor([0.3, float("nan"), 5.0]).to(m.bfloat16)
        p = m.tensor([[[[1.0, float("nan")], [2.0, 3.0]]]]).to(m.bfloat16).requires_grad_()
        pooled = m.nn.functional.max_pool2d(p, 2)
        pooled.sum().backward()
        s = m.tensor([5.0, 6.0]).to(m.bfloat16).requires_grad_()
        reduced = m.tensor([1.0, 2.0]).to(m.bfloat16).scatter_reduce(0, m.tensor([0, 0]), s, "amax")
        reduced.sum().backward()
        return [
            x.sign().float().tolist(),
            y.cummax(0)[1].tolist(),
            y.cummin(0)[1].tolist(),
            p.grad.float().tolist(),
            s.grad.float().tolist(),
        ]

    assert results(ember) == results(torch_mod)


def test_anomaly_mode_sees_nan_in_a_bfloat16_gradient():
    q = ember.tensor([1.0, 2.0]).to(ember.bfloat16).requires_grad_()
    with ember.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="returned nan values"):
            (q * float("nan")).sum().backward()
