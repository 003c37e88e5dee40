"""The exceptions of ``ember.distributed``, with PyTorch's names and hierarchy."""


class DistError(RuntimeError):
    """An error of the distributed package."""


class DistBackendError(DistError):
    """An error in the communication backend (MPI underneath)."""


class DistNetworkError(DistError):
    """A peer could not be reached."""


class DistStoreError(DistError):
    """The rendezvous failed, for example it timed out waiting for ranks."""


class QueueEmptyError(DistStoreError):
    """A rendezvous queue was empty."""
