"""RPC settings and names: ``WorkerInfo``, ``TensorPipeRpcBackendOptions``, ``BackendType`` and
torch's constants (``DEFAULT_RPC_TIMEOUT_SEC`` ...)."""

from __future__ import annotations

import enum
import re

DEFAULT_RPC_TIMEOUT_SEC: float = 60.0
DEFAULT_INIT_METHOD: str = "env://"
DEFAULT_NUM_WORKER_THREADS: int = 16
DEFAULT_SHUTDOWN_TIMEOUT: float = 0
UNSET_RPC_TIMEOUT: float = -1.0  # "use the agent's rpc_timeout"; 0 means no timeout at all

_NAME_PATTERN = re.compile(r"^[A-Za-z0-9\-_:]*$")
_MAX_NAME_LENGTH = 128


class BackendType(enum.Enum):
    """The RPC backends: ember has one, TensorPipe's name for it (its transport is ember's)."""

    TENSORPIPE = "TENSORPIPE"


class WorkerInfo:
    """A worker's name and id (its rank), as ``get_worker_info`` gives it.

    Example::
        >>> rpc.get_worker_info("worker1")
        WorkerInfo(id=1, name=worker1)
    """

    __slots__ = ("name", "id")

    def __init__(self, name: str, id: int) -> None:
        self.name = name
        self.id = id

    def __eq__(self, other) -> bool:
        return isinstance(other, WorkerInfo) and (self.name, self.id) == (other.name, other.id)

    def __hash__(self) -> int:
        return hash((self.name, self.id))

    def __repr__(self) -> str:
        return f"WorkerInfo(id={self.id}, name={self.name})"

    def __reduce__(self):
        return WorkerInfo, (self.name, self.id)


def check_worker_name(name) -> None:
    """torch's rule for worker names (letters, digits, ``-_:``, 1 to 127 characters)."""
    if (
        not isinstance(name, str)
        or not name
        or len(name) >= _MAX_NAME_LENGTH
        or not _NAME_PATTERN.match(name)
    ):
        raise RuntimeError(
            "Worker name must match ^[A-Za-z0-9-_:]*$, and must be non-empty and shorter than "
            f"{_MAX_NAME_LENGTH} chars, but got {name}"
        )


class RpcBackendOptions:
    """What every backend takes: the default timeout of a call and where the workers meet."""

    def __init__(
        self, rpc_timeout: float = DEFAULT_RPC_TIMEOUT_SEC, init_method: str = DEFAULT_INIT_METHOD
    ) -> None:
        self.rpc_timeout = float(rpc_timeout)
        self.init_method = init_method


class TensorPipeRpcBackendOptions(RpcBackendOptions):
    """Options of the RPC agent, with torch's names and defaults.

    ``num_worker_threads`` threads run the requests that arrive; ``rpc_timeout`` (seconds) is the
    default timeout of a call (0: none); ``init_method`` is ``env://`` (``MASTER_ADDR`` and
    ``MASTER_PORT``), ``tcp://host:port`` or ``file:///path``. Only CPU tensors travel:
    ``device_maps``/``devices`` are kept for compatibility and must map nothing.

    Example::
        >>> options = rpc.TensorPipeRpcBackendOptions(
        ...     init_method="tcp://127.0.0.1:29500", num_worker_threads=8, rpc_timeout=20)
    """

    def __init__(
        self,
        *,
        num_worker_threads: int = DEFAULT_NUM_WORKER_THREADS,
        rpc_timeout: float = DEFAULT_RPC_TIMEOUT_SEC,
        init_method: str = DEFAULT_INIT_METHOD,
        device_maps: dict | None = None,
        devices: list | None = None,
        _transports: list | None = None,
        _channels: list | None = None,
    ) -> None:
        super().__init__(rpc_timeout, init_method)
        if int(num_worker_threads) < 1:
            raise ValueError(f"num_worker_threads must be positive, got {num_worker_threads}")
        self.num_worker_threads = int(num_worker_threads)
        self.device_maps = dict(device_maps or {})
        self.devices = list(devices or [])
        self._transports = _transports
        self._channels = _channels

    def set_device_map(self, to: str, device_map: dict) -> None:
        """Record a device map for calls to ``to`` (ember's RPC moves CPU tensors only)."""
        self.device_maps.setdefault(to, {}).update(device_map)

    def set_devices(self, devices: list) -> None:
        self.devices = list(devices)
