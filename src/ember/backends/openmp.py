"""``ember.backends.openmp``: ember's kernels do not use OpenMP (NumPy's BLAS has its own pool)."""


def is_available() -> bool:
    return False
