"""``ember.backends.opt_einsum``: contraction order for einsum (NumPy's ``optimize``)."""

enabled = True
strategy = "auto"


def is_available() -> bool:
    """NumPy's einsum optimises the contraction order itself."""
    return True


def get_opt_einsum():
    return None
