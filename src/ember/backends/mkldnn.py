"""``ember.backends.mkldnn``: oneDNN is not used by ember."""

from ._flags import set_flags

enabled = False
deterministic = False


def is_available() -> bool:
    return False


def flags(enabled=False, deterministic=False):
    import sys

    return set_flags(sys.modules[__name__], enabled=enabled, deterministic=deterministic)
