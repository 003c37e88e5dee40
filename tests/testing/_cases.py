import numpy as np


def cases(m):
    t = m.tensor
    return [
        ("close", lambda: m.testing.assert_close(t([1.0, 2.0, 3.0]), t([1.0, 2.1, 3.0]))),
        ("ok", lambda: m.testing.assert_close(t([1.0, 2.0, 3.0]), t([1.0, 2.000001, 3.0]))),
        ("int", lambda: m.testing.assert_close(t([1, 2, 3]), t([1, 3, 3]))),
        ("bool", lambda: m.testing.assert_close(t([True, False]), t([True, True]))),
        ("shape", lambda: m.testing.assert_close(t([1.0, 2.0]), t([1.0, 2.0, 3.0]))),
        ("dtype", lambda: m.testing.assert_close(t([1.0, 2.0]), t([1.0, 2.0], dtype=m.float64))),
        (
            "dtype_off",
            lambda: m.testing.assert_close(
                t([1.0, 2.0]), t([1.0, 2.5], dtype=m.float64), check_dtype=False
            ),
        ),
        ("scalar", lambda: m.testing.assert_close(1.0, 1.1)),
        ("scalar_int", lambda: m.testing.assert_close(1, 2)),
        ("scalar_types", lambda: m.testing.assert_close(1, 1.0)),
        ("scalar_types_off", lambda: m.testing.assert_close(1, 1.0, check_dtype=False)),
        ("0d", lambda: m.testing.assert_close(t(1.0), t(1.5))),
        ("tensor_vs_number", lambda: m.testing.assert_close(t(1.0), 1.0)),
        ("seq", lambda: m.testing.assert_close([t(1.0), t([2.0, 3.0])], [t(1.0), t([2.0, 3.5])])),
        ("seq_len", lambda: m.testing.assert_close([1, 2], [1, 2, 3])),
        ("seq_ok", lambda: m.testing.assert_close((1.0, 2), [1.0, 2])),
        ("map", lambda: m.testing.assert_close({"a": t([1.0]), "b": 2}, {"a": t([1.5]), "b": 2})),
        ("map_keys", lambda: m.testing.assert_close({"a": 1, "b": 2}, {"a": 1, "c": 2})),
        ("numpy", lambda: m.testing.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.5]))),
        (
            "numpy_vs_tensor",
            lambda: m.testing.assert_close(np.array([1.0, 2.0], dtype=np.float32), t([1.0, 2.0])),
        ),
        ("nan", lambda: m.testing.assert_close(t([float("nan"), 1.0]), t([float("nan"), 1.0]))),
        (
            "nan_eq",
            lambda: m.testing.assert_close(
                t([float("nan"), 1.0]), t([float("nan"), 1.0]), equal_nan=True
            ),
        ),
        (
            "nan_mis",
            lambda: m.testing.assert_close(t([1.0, float("nan"), 1.0]), t([1.0, 2.0, 5.0])),
        ),
        ("inf", lambda: m.testing.assert_close(t([float("inf")]), t([float("inf")]))),
        ("inf_mis", lambda: m.testing.assert_close(t([float("inf")]), t([-float("inf")]))),
        ("rtol_only", lambda: m.testing.assert_close(t([1.0]), t([1.0]), rtol=1e-3)),
        ("atol_only", lambda: m.testing.assert_close(t([1.0]), t([1.0]), atol=1e-3)),
        (
            "custom_tol",
            lambda: m.testing.assert_close(t([1.0, 2.0]), t([1.01, 2.0]), rtol=0, atol=1e-3),
        ),
        (
            "custom_tol_ok",
            lambda: m.testing.assert_close(t([1.0, 2.0]), t([1.01, 2.0]), rtol=0, atol=1e-1),
        ),
        ("msg_str", lambda: m.testing.assert_close(t([1.0]), t([2.0]), msg="boom")),
        (
            "msg_call",
            lambda: m.testing.assert_close(t([1.0]), t([2.0]), msg=lambda s: "X" + s[:10]),
        ),
        (
            "half",
            lambda: m.testing.assert_close(
                t([1.0, 2.0], dtype=m.float16), t([1.001, 2.0], dtype=m.float16)
            ),
        ),
        (
            "bf16",
            lambda: m.testing.assert_close(
                t([1.0, 2.0], dtype=m.bfloat16), t([1.01, 2.0], dtype=m.bfloat16)
            ),
        ),
        (
            "f64",
            lambda: m.testing.assert_close(
                t([1.0, 2.0], dtype=m.float64), t([1.0 + 1e-6, 2.0], dtype=m.float64)
            ),
        ),
        ("complex", lambda: m.testing.assert_close(t([1 + 1j, 2j]), t([1 + 1.1j, 2j]))),
        (
            "2d",
            lambda: m.testing.assert_close(
                t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0, 2.0], [3.5, 4.0]])
            ),
        ),
        (
            "stride",
            lambda: m.testing.assert_close(
                t([[1.0, 2.0], [3.0, 4.0]]).t(), t([[1.0, 3.0], [2.0, 4.0]]), check_stride=True
            ),
        ),
        ("str", lambda: m.testing.assert_close("a", "a")),
        ("none", lambda: m.testing.assert_close(None, None)),
        ("none_vs", lambda: m.testing.assert_close(None, 1)),
        ("zero_expected", lambda: m.testing.assert_close(t([0.0, 1.0]), t([1e-4, 1.0]))),
        ("rg", lambda: m.testing.assert_close(t([1.0], requires_grad=True), t([1.0]))),
        ("int_vs_float_tensor", lambda: m.testing.assert_close(t([1, 2]), t([1.0, 2.0]))),
        (
            "int_vs_float_tensor_off",
            lambda: m.testing.assert_close(t([1, 2]), t([1.0, 2.5]), check_dtype=False),
        ),
        ("empty", lambda: m.testing.assert_close(t([]), t([]))),
        ("allclose", lambda: m.testing.assert_allclose(t([1.0, 2.0]), [1.0, 2.5])),
        ("allclose_ok", lambda: m.testing.assert_allclose(t([1.0, 2.0]), [1.0, 2.0])),
        (
            "nested",
            lambda: m.testing.assert_close(
                {"a": [1, {"b": t([1.0, 2.0])}]}, {"a": [1, {"b": t([1.0, 3.0])}]}
            ),
        ),
        ("bool_scalar", lambda: m.testing.assert_close(True, False)),
        ("np_scalar", lambda: m.testing.assert_close(np.float64(1.0), 1.0)),
        ("large", lambda: m.testing.assert_close(m.arange(1000.0), m.arange(1000.0) * 1.001)),
    ]


def outcome(fn):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e).replace("torch.", "ember.")
    return "ok", ""
