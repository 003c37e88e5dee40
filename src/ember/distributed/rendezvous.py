"""Rendezvous: find the peers and join them into one MPI communicator.

Only the address exchange uses a plain TCP socket. Rank 0 listens on ``MASTER_ADDR:MASTER_PORT``
(or the ``tcp://host:port`` of ``init_method``) and opens an MPI port; each other rank connects,
says its rank, and when its turn comes receives the MPI port name. The group grows one rank at a
time: the members so far ``Comm_accept`` collectively, the newcomer ``Comm_connect``s, and
``Intercomm.Merge`` makes one intracommunicator. Ranks are admitted in rank order so the merged
ranks are the given ones.

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

from .errors import DistNetworkError, DistStoreError


def parse_init_method(init_method: str, world_size: int, rank: int) -> tuple[str, int, int, int]:
    """``(master_addr, master_port, world_size, rank)`` from ``env://`` or ``tcp://host:port``."""
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
            return "", 0, 1, rank
        return env("MASTER_ADDR"), int(env("MASTER_PORT")), world_size, rank
    if url.scheme == "tcp":
        if rank < 0:
            if "rank" not in query:
                raise ValueError(
                    "Error initializing torch.distributed using tcp:// rendezvous: "
                    "rank parameter missing"
                )
            rank = int(query["rank"])
        if world_size < 0:
            if "world_size" not in query:
                raise ValueError(
                    "Error initializing torch.distributed using tcp:// rendezvous: "
                    "world size parameter missing"
                )
            world_size = int(query["world_size"])
        if not url.hostname or not url.port:
            raise ValueError(f"tcp:// init_method needs a host and a port, got {init_method!r}")
        return url.hostname, url.port, world_size, rank
    raise RuntimeError(
        f"No rendezvous handler for {url.scheme}:// (ember supports env:// and tcp://)"
    )


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
    from mpi4py import MPI

    while comm.Get_size() < world_size:
        intercomm = comm.Accept(port_name if comm.Get_rank() == 0 else None, MPI.INFO_NULL, 0)
        merged = intercomm.Merge(high=False)
        intercomm.Free()
        if comm is not MPI.COMM_SELF:
            comm.Free()
        comm = merged
    return comm


def join_world(master_addr: str, master_port: int, world_size: int, rank: int, timeout: float):
    """An MPI intracommunicator of ``world_size`` processes where this one has rank ``rank``."""
    from mpi4py import MPI

    deadline = time.monotonic() + timeout
    if rank == 0:
        server = socket.create_server(("", master_port), reuse_port=False)
        try:
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
            port_name = MPI.Open_port()
            comm = MPI.COMM_SELF
            for peer_rank in range(1, world_size):
                _send_line(peers[peer_rank], {"port": port_name})
                comm = _grow_once(comm, port_name)
            MPI.Close_port(port_name)
            for conn in peers.values():
                conn.close()
        finally:
            server.close()
        return comm
    conn = None
    while conn is None:
        try:
            conn = socket.create_connection((master_addr, master_port), timeout=1.0)
        except OSError:
            if time.monotonic() > deadline:
                raise DistNetworkError(
                    f"ember.distributed rendezvous: rank {rank} could not reach rank 0 at "
                    f"{master_addr}:{master_port} within {timeout:g} seconds"
                ) from None
            time.sleep(0.05)
    with conn:
        _send_line(conn, {"rank": rank, "world_size": world_size})
        reply = _read_line(conn, deadline, "rank 0 to hand out the MPI port")
    if "error" in reply:
        raise DistStoreError(f"ember.distributed rendezvous: {reply['error']}")
    intercomm = MPI.COMM_SELF.Connect(reply["port"], MPI.INFO_NULL, 0)
    comm = intercomm.Merge(high=True)
    intercomm.Free()
    return _grow(comm, None, world_size)


def _grow_once(comm, port_name: str):
    """Rank 0's side of admitting one newcomer (the other members run ``_grow``)."""
    from mpi4py import MPI

    intercomm = comm.Accept(port_name, MPI.INFO_NULL, 0)
    merged = intercomm.Merge(high=False)
    intercomm.Free()
    if comm is not MPI.COMM_SELF:
        comm.Free()
    return merged
