"""Rendezvous: find the peers and join them into one MPI communicator.

Only the address exchange uses a plain TCP socket. Rank 0 listens on ``MASTER_ADDR:MASTER_PORT``
(or the ``tcp://host:port`` of ``init_method``) and opens an MPI port; each other rank connects,
says its rank, and when its turn comes receives the MPI port name. The group grows one rank at a
time: the members so far ``Comm_accept`` collectively, the newcomer ``Comm_connect``s, and
``Intercomm.Merge`` makes one intracommunicator. Ranks are admitted in rank order so the merged
ranks are the given ones.

With ``file:///path`` the ranks meet through a file on a file system they share: rank 0 listens on
a free port and writes its address into the file, the others read it there. Rank 0 removes the
file once every rank has read it (or when the rendezvous fails), so the same path can be used for
the next ``init_process_group``, as PyTorch's FileStore removes its file when done.

MPICH can only connect processes that each were started by a process manager (``mpiexec -n 1``
per process, which is what ``ember.multiprocessing.spawn`` does): two bare Python processes
("singletons") are refused with "Local and remote groups ... must be disjoint".
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.parse
from dataclasses import dataclass

from .errors import DistNetworkError, DistStoreError


@dataclass
class RendezvousPoint:
    """Where the ranks meet: rank 0's TCP address, or a shared file (``file://``)."""

    master_addr: str
    master_port: int
    world_size: int
    rank: int
    file_path: str | None = None


def _from_query(query: dict, name: str, given: int, scheme: str, what: str) -> int:
    if given >= 0:
        return given
    if name not in query:
        raise ValueError(
            f"Error initializing torch.distributed using {scheme}:// rendezvous: "
            f"{what} parameter missing"
        )
    return int(query[name])


def parse_init_method(init_method: str, world_size: int, rank: int) -> RendezvousPoint:
    """Where to meet, from ``env://``, ``tcp://host:port`` or ``file:///path``."""
    url = urllib.parse.urlparse(init_method)
    query = dict(urllib.parse.parse_qsl(url.query))
    if url.scheme == "env":
        prefix = "Error initializing torch.distributed using env:// rendezvous: "

        def env(name: str) -> str:
            value = os.environ.get(name)
            if value is None:
                raise ValueError(f"{prefix}environment variable {name} expected, but not set")
            return value

        if rank < 0:
            rank = int(query.get("rank", env("RANK")))
        if world_size < 0:
            world_size = int(query.get("world_size", env("WORLD_SIZE")))
        if world_size == 1:
            return RendezvousPoint("", 0, 1, rank)
        return RendezvousPoint(env("MASTER_ADDR"), int(env("MASTER_PORT")), world_size, rank)
    if url.scheme in ("tcp", "file"):
        rank = _from_query(query, "rank", rank, url.scheme, "rank")
        world_size = _from_query(query, "world_size", world_size, url.scheme, "world size")
        if url.scheme == "file":
            path = urllib.parse.unquote(url.netloc + url.path)
            if not path:
                raise ValueError(f"file:// init_method needs a path, got {init_method!r}")
            return RendezvousPoint("", 0, world_size, rank, file_path=path)
        if not url.hostname or not url.port:
            raise ValueError(f"tcp:// init_method needs a host and a port, got {init_method!r}")
        return RendezvousPoint(url.hostname, url.port, world_size, rank)
    raise RuntimeError(
        f"No rendezvous handler for {url.scheme}:// (ember supports env://, tcp:// and file://)"
    )


def _this_host() -> str:
    """An address of this machine that peers on other machines can reach, if there is one."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def _publish(path: str, host: str, port: int) -> None:
    """Write rank 0's address into the rendezvous file in one step (readers never see half)."""
    partial = f"{path}.{os.getpid()}.partial"
    with open(partial, "w") as f:
        json.dump({"host": host, "port": port}, f)
    os.replace(partial, path)


def _read_published(path: str) -> tuple[str, int] | None:
    """Rank 0's address from the rendezvous file, or None while it is not there yet."""
    try:
        with open(path) as f:
            found = json.load(f)
        return found["host"], int(found["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # not written yet, or an empty file made by the caller (as torch's tests do)


def check_launched_by_process_manager(world_size: int) -> None:
    """A clear error where MPICH would refuse to connect bare processes."""
    if world_size > 1 and "PMI_RANK" not in os.environ and "PMIX_RANK" not in os.environ:
        raise RuntimeError(
            f"ember.distributed: this process was not started by an MPI process manager, and MPI "
            f"cannot join bare processes into a world of {world_size}. Start each rank with "
            f"ember.multiprocessing.spawn(fn, nprocs={world_size}), or under `mpiexec -n 1 "
            f"python script.py` per rank, or all ranks at once with `mpiexec -n {world_size} "
            f"python script.py` (then init_method='env://' is not even needed)."
        )


def _send_line(conn: socket.socket, message: dict) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _read_line(conn: socket.socket, deadline: float, what: str) -> dict:
    data = b""
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise DistStoreError(f"ember.distributed rendezvous: timed out waiting for {what}")
        conn.settimeout(left)
        try:
            chunk = conn.recv(4096)
        except TimeoutError:
            continue
        if not chunk:
            raise DistNetworkError(
                f"ember.distributed rendezvous: connection closed waiting for {what}"
            )
        data += chunk
    return json.loads(data)


def _grow(comm, port_name: str | None, world_size: int):
    """Members so far accept newcomers (collectively) until the world is complete."""
    while comm.Get_size() < world_size:
        comm = _admit_one(comm, port_name if comm.Get_rank() == 0 else None)
    return comm


def join_world(point: RendezvousPoint, timeout: float):
    """An MPI intracommunicator of ``world_size`` processes where this one has rank ``rank``."""
    from mpi4py import MPI

    world_size, rank = point.world_size, point.rank
    deadline = time.monotonic() + timeout
    if rank == 0:
        server = socket.create_server(("", point.master_port), reuse_port=False)
        try:
            if point.file_path is not None:
                _publish(point.file_path, _this_host(), server.getsockname()[1])
            peers: dict[int, socket.socket] = {}
            while len(peers) < world_size - 1:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DistStoreError(
                        f"ember.distributed rendezvous: timed out after {timeout:g} seconds "
                        f"waiting for clients. {len(peers) + 1}/{world_size} clients joined."
                    )
                server.settimeout(left)
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue
                hello = _read_line(conn, deadline, "a joining rank to say its rank")
                peer_rank, peer_world = int(hello["rank"]), int(hello["world_size"])
                problem = None
                if peer_world != world_size:
                    problem = f"world_size {peer_world} differs from rank 0's {world_size}"
                elif not 0 < peer_rank < world_size or peer_rank in peers:
                    problem = f"rank {peer_rank} is out of range or already taken"
                if problem:
                    _send_line(conn, {"error": problem})
                    conn.close()
                    raise DistStoreError(f"ember.distributed rendezvous: {problem}")
                peers[peer_rank] = conn
            if point.file_path is not None:
                _remove(point.file_path)  # every rank has read it: free the path for reuse
            port_name = MPI.Open_port()
            comm = MPI.COMM_SELF
            for peer_rank in range(1, world_size):
                _send_line(peers[peer_rank], {"port": port_name})
                comm = _admit_one(comm, port_name)
            MPI.Close_port(port_name)
            for conn in peers.values():
                conn.close()
        finally:
            server.close()
            if point.file_path is not None:
                _remove(point.file_path)
        return comm
    conn = _connect_to_rank_0(point, deadline, timeout)
    with conn:
        _send_line(conn, {"rank": rank, "world_size": world_size})
        reply = _read_line(conn, deadline, "rank 0 to hand out the MPI port")
    if "error" in reply:
        raise DistStoreError(f"ember.distributed rendezvous: {reply['error']}")
    intercomm = MPI.COMM_SELF.Connect(reply["port"], MPI.INFO_NULL, 0)
    comm = intercomm.Merge(high=True)
    intercomm.Free()
    return _grow(comm, None, world_size)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _connect_to_rank_0(point: RendezvousPoint, deadline: float, timeout: float) -> socket.socket:
    """A connection to rank 0, retried until the deadline (rank 0 may start later)."""
    address = None if point.file_path else (point.master_addr, point.master_port)
    while True:
        if point.file_path is not None:
            # read again on every try: a file left by an earlier run is replaced by rank 0
            address = _read_published(point.file_path)
        if address is not None:
            try:
                return socket.create_connection(address, timeout=1.0)
            except OSError:
                pass
        if time.monotonic() > deadline:
            if point.file_path is not None and address is None:
                raise DistStoreError(
                    f"ember.distributed rendezvous: rank {point.rank} timed out after "
                    f"{timeout:g} seconds waiting for rank 0 to write its address into "
                    f"{point.file_path}"
                )
            host, port = address
            raise DistNetworkError(
                f"ember.distributed rendezvous: rank {point.rank} could not reach rank 0 at "
                f"{host}:{port} within {timeout:g} seconds"
            )
        time.sleep(0.05)


def _admit_one(comm, port_name: str | None):
    """Admit one newcomer into ``comm`` (collective over its members; ``port_name`` is read on
    rank 0 only): the merged communicator, the old one freed."""
    from mpi4py import MPI

    intercomm = comm.Accept(port_name, MPI.INFO_NULL, 0)
    merged = intercomm.Merge(high=False)
    intercomm.Free()
    if comm is not MPI.COMM_SELF:
        comm.Free()
    return merged
