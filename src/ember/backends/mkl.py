"""``ember.backends.mkl``: whether NumPy's BLAS is Intel MKL."""


def is_available() -> bool:
    import numpy as np

    config = getattr(np, "show_config", None)
    try:
        info = np.show_config(mode="dicts") if config else {}
    except TypeError:
        return False
    blas = info.get("Build Dependencies", {}).get("blas", {}).get("name", "")
    return "mkl" in str(blas).lower()
