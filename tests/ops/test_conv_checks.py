"""ember.ops.conv's argument checks in torch's order and half-precision results, against torch."""

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(0)

CASES = [  # (conv, input shape and dtype, weight shape and dtype, bias or None, kwargs)
    ("conv1d", ((1, 1, 4), "int64"), ((1, 1, 2), "int64"), ((1,), "float64"), {}),
    ("conv2d", ((1, 2, 4, 4), "float64"), ((1, 2, 3, 3), "float64"), ((1,), "complex128"), {}),
    ("conv1d", ((1, 1, 4), "float64"), ((1, 2, 2), "float64"), None, {"stride": (-1,)}),
    (
        "conv3d",
        ((1, 1, 4, 4, 4), "float64"),
        ((1, 1, 2, 2, 2), "float64"),
        None,
        {"padding": (-1,)},
    ),
    ("conv2d", ((1, 1, 4, 4), "float64"), ((1, 1, 2, 2), "float64"), None, {"dilation": (-1,)}),
    ("conv2d", ((1, 2, 4, 4), "float64"), ((1, 2, 3, 3), "float64"), None, {"stride": (1, 2, 3)}),
    ("conv2d", ((1, 2, 4, 4), "float64"), ((1, 2, 3), "float64"), None, {}),
    ("conv1d", ((1, 2, 4), "float64"), ((1, 2), "float64"), None, {}),
    ("conv1d", ((1, 2, 4), "float64"), ((1, 2, 3), "float64"), None, {"padding": "bad"}),
    ("conv2d", ((1, 1, 4, 3), "float64"), ((1, 2, 2), "float64"), None, {"padding": "same"}),
    (
        "conv1d",
        ((1, 2, 4), "float64"),
        ((1, 2, 3), "float64"),
        None,
        {"padding": "same", "stride": 2},
    ),
    (
        "conv1d",
        ((1, 2, 4), "float64"),
        ((1, 2, 3), "float64"),
        None,
        {"padding": "same", "dilation": (1, 2)},
    ),
    ("conv2d", ((2, 2, 4, 3), "float64"), ((2, 2, 1, 3), "float64"), None, {"groups": 3}),
    ("conv2d", ((1, 2, 4, 4), "float64"), ((4, 1, 3, 3), "float64"), None, {"groups": 3}),
    ("conv2d", ((1, 3, 4, 4), "float64"), ((1, 2, 3, 3), "float64"), None, {}),
    (
        "conv_transpose3d",
        ((1, 1, 4, 4, 4), "float64"),
        ((1, 1, 2, 2, 2), "float64"),
        None,
        {"stride": (-1,)},
    ),
]


def _message(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the type is compared
        return type(error), str(error)
    return None, "no error"


@pytest.mark.parametrize("conv, x, w, b, kwargs", CASES)
def test_invalid_arguments_raise_torchs_error(torch_mod, conv, x, w, b, kwargs):
    def make(lib, spec):
        if spec is None:
            return None
        shape, dtype = spec
        return lib.from_numpy(np.ones(shape, dtype=dtype))

    def call(lib):
        args = [make(lib, x), make(lib, w), make(lib, b)]
        return lambda: getattr(lib.nn.functional, conv)(*args, **kwargs)

    want_type, want = _message(call(torch_mod))
    got_type, got = _message(call(ember))
    assert want_type is RuntimeError
    assert (got_type, got) == (want_type, want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize(
    "conv, x_shape, w_shape, kwargs",
    [
        ("conv2d", (2, 3, 6, 6), (4, 3, 3, 3), {"padding": 1}),
        ("conv1d", (2, 4, 9), (4, 2, 3), {"groups": 2}),
        (
            "conv_transpose1d",
            (1, 3, 4),
            (3, 3, 3),
            {"stride": 2, "padding": 2, "output_padding": 1},
        ),
        (
            "conv_transpose2d",
            (1, 3, 4, 4),
            (3, 3, 3, 3),
            {"stride": 2, "padding": 2, "output_padding": 1},
        ),
    ],
)
def test_half_precision_results_and_gradients_match_torch(
    torch_mod, dtype, conv, x_shape, w_shape, kwargs
):
    x = RNG.standard_normal(x_shape).astype(np.float32) * 8
    w = RNG.standard_normal(w_shape).astype(np.float32) * 8
    b = RNG.standard_normal(w_shape[1] if "transpose" in conv else w_shape[0]).astype(np.float32)
    theirs = [
        torch_mod.from_numpy(a).to(getattr(torch_mod, dtype)).requires_grad_() for a in (x, w, b)
    ]
    mine = [ember.from_numpy(a).to(getattr(ember, dtype)).requires_grad_() for a in (x, w, b)]
    want = getattr(torch_mod.nn.functional, conv)(*theirs, **kwargs)
    got = getattr(ember.nn.functional, conv)(*mine, **kwargs)
    assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
    # torch rounds once (float32 sums) or per col2im add, as ember: a rounding step apart at most
    np.testing.assert_allclose(
        got.detach().float().numpy(), want.float().detach().numpy(), rtol=1e-2, atol=0.06
    )
    got.float().sum().backward()
    want.float().sum().backward()
    for mine_t, their_t in zip(mine, theirs):
        assert str(mine_t.grad.dtype) == str(their_t.grad.dtype).replace("torch", "ember")
        np.testing.assert_allclose(
            mine_t.grad.float().numpy(), their_t.grad.float().numpy(), rtol=2e-2, atol=0.5
        )
