"""The error type of every malformed checkpoint."""

import pickle


class SerializationError(pickle.UnpicklingError, RuntimeError):
    """A file that is not a valid checkpoint (safetensors or PyTorch's zip format)."""
