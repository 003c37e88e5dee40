"""Which ranks are still there: a TCP link from every rank to rank 0, closed when a process ends.

MPI cannot tell a rank that a peer died: a collective waiting for a killed rank waits for ever
(MPICH over UCX never fails the request). The operating system, though, closes a process's
sockets however it ends (an exception, ``sys.exit``, ``os._exit``, SIGKILL). So once the MPI world
is made, every rank opens one TCP connection to rank 0, which listens on a port it announces over
MPI: rank 0 sees a link close at once and tells every other rank; the other ranks see rank 0's
end on their own link. A rank that ends in order says how first: "left" from
``destroy_process_group``, "exited" (with the exception that ended the script, if one did) from an
atexit hook, so the survivors' errors say what happened. A machine that vanishes without closing
its sockets is caught by TCP keepalive (about half a minute), and past the process group's timeout
by the waiting collective itself (``ember.distributed.watchdog``).

``lost`` maps the global rank of each rank known to be gone to how it ended (``watchdog.wait``
reads it while it waits); ``left`` holds those of them that left in order, with
``destroy_process_group``.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import selectors
import socket
import sys
import threading
import time
import warnings

lost: dict[int, str] = {}  # global rank -> how it ended ("was killed or crashed", ...)
left: set[int] = set()  # the lost ranks that are leaving in order (destroy_process_group)

_SILENT_END = "was killed or crashed (its connection closed without a word)"
LEFT = "left the process group (destroy_process_group)"
_CONNECT_SECONDS = 10.0  # how long rank 0 waits for the others' links before going without them


def _keepalive(sock: socket.socket) -> None:
    """Notice a peer machine that vanished in about 25 seconds instead of hours."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3)):
        if hasattr(socket, name):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def _addresses(known_host: str | None) -> list[str]:
    """Where the other ranks may reach rank 0, best first."""
    found = [known_host] if known_host else []
    try:
        found.append(socket.gethostbyname(socket.gethostname()))
    except OSError:
        pass
    found += [socket.gethostname(), "127.0.0.1"]
    return list(dict.fromkeys(found))


def _send(sock: socket.socket, lock: threading.Lock, message: dict) -> None:
    with lock:
        try:
            sock.sendall(json.dumps(message).encode() + b"\n")
        except OSError:
            pass  # the peer is gone: its end of the link says so


class Links:
    """This rank's links: to every other rank on rank 0, to rank 0 elsewhere."""

    def __init__(self, rank: int, peers: dict[int, socket.socket]):
        self.rank = rank
        self.peers = peers
        self._locks = {peer: threading.Lock() for peer in peers}
        self._pending = {peer: b"" for peer in peers}
        self._said: dict[int, str] = {}  # how a peer said it ends, before its link closes
        self._closed = False
        self._announced = False
        self._wake_read, self._wake_write = socket.socketpair()
        self._thread = threading.Thread(
            target=self._watch, name="ember-distributed-liveness", daemon=True
        )
        self._thread.start()
        atexit.register(self._at_exit)

    # --- what this rank says -------------------------------------------------------------------
    def announce(self, how: str) -> None:
        """Tell the others how this rank ends (rank 0 tells everyone, the others tell rank 0)."""
        if self._announced:
            return
        self._announced = True
        if self.rank == 0:
            for peer, sock in self.peers.items():
                _send(sock, self._locks[peer], {"lost": 0, "how": how})
        else:
            _send(self.peers[0], self._locks[0], {"ending": how})

    def close(self, how: str = LEFT) -> None:
        """Say how this rank ends (unless it has), stop watching and close the links."""
        if self._closed:
            return
        self.announce(how)
        self._closed = True
        atexit.unregister(self._at_exit)
        self._wake_write.send(b"x")
        self._thread.join(5.0)
        for sock in (*self.peers.values(), self._wake_read, self._wake_write):
            sock.close()

    def _at_exit(self) -> None:
        # an uncaught exception ended the script: Python keeps it in sys.last_value (3.11)
        error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        if error is not None:
            self.close(f"exited after raising {type(error).__name__}: {error}")
        else:
            self.close("exited without destroy_process_group")

    # --- what the others say -------------------------------------------------------------------
    def _watch(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._wake_read, selectors.EVENT_READ, None)
        for peer, sock in self.peers.items():
            selector.register(sock, selectors.EVENT_READ, peer)
        with selector:
            while not self._closed:
                for key, _ in selector.select():
                    if key.data is None:
                        return  # close() woke us
                    if not self._read(key.data, key.fileobj):
                        selector.unregister(key.fileobj)

    def _read(self, peer: int, sock: socket.socket) -> bool:
        """Handle what ``peer`` sent; False once its link has closed."""
        try:
            chunk = sock.recv(4096)
        except OSError:
            chunk = b""
        if not chunk:
            self._lose(peer, self._said.get(peer, _SILENT_END))
            return False
        data = self._pending[peer] + chunk
        *lines, self._pending[peer] = data.split(b"\n")
        for line in lines:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "ending" in message:  # a rank telling rank 0 how it ends
                self._said[peer] = message["ending"]
                self._lose(peer, message["ending"])
            elif "lost" in message:  # rank 0 telling of a rank that ended
                self._lose(int(message["lost"]), message["how"])
        return True

    def _lose(self, rank: int, how: str) -> None:
        if rank in lost or self._closed:
            return
        lost[rank] = how
        if how == LEFT:
            left.add(rank)
        if self.rank == 0:
            # the others hear of it only from rank 0; the leaving ones too, since they wait for
            # the rest in destroy_process_group
            for peer, sock in self.peers.items():
                if peer != rank:
                    _send(sock, self._locks[peer], {"lost": rank, "how": how})


_links: list[Links] = []  # this process's links while a world of several ranks exists


def _forget_in_forked_child() -> None:
    """A forked child (a DataLoader worker) must not hold the links open after its parent died,
    nor speak for its parent when it exits."""
    for links in _links:
        links._closed = True
        atexit.unregister(links._at_exit)
        for sock in (*links.peers.values(), links._wake_read, links._wake_write):
            sock.close()
    _links.clear()
    lost.clear()
    left.clear()


os.register_at_fork(after_in_child=_forget_in_forked_child)


def connect(comm, known_host: str | None = None) -> None:
    """Link the ranks of ``comm`` (the world, just made) to its rank 0; every rank calls it.

    Where a link cannot be made (a firewall between machines), every rank goes on without links
    and a warning says so: a dead rank is then noticed only at the process group's timeout.
    """
    from mpi4py import MPI

    lost.clear()
    left.clear()
    rank, size = comm.Get_rank(), comm.Get_size()
    peers: dict[int, socket.socket] = {}
    problem = None
    if rank == 0:
        token = secrets.token_hex(16)
        try:
            server = socket.create_server(("", 0))
        except OSError as error:
            problem = f"rank 0 could not listen for them ({error})"
            comm.bcast(None, 0)
        else:
            comm.bcast((_addresses(known_host), server.getsockname()[1], token), 0)
        deadline = time.monotonic() + _CONNECT_SECONDS
        try:
            while problem is None and len(peers) < size - 1 and time.monotonic() < deadline:
                server.settimeout(max(0.01, deadline - time.monotonic()))
                try:
                    conn, _ = server.accept()
                except OSError:
                    continue
                try:
                    conn.settimeout(2.0)
                    hello = json.loads(conn.makefile("rb").readline())
                    if hello["token"] != token:
                        raise ValueError("not one of ours")
                    peers[int(hello["rank"])] = conn
                except (OSError, ValueError, KeyError, TypeError):
                    conn.close()
        finally:
            if problem is None:
                server.close()
        if problem is None and len(peers) < size - 1:
            problem = f"{size - 1 - len(peers)} rank(s) did not connect within {_CONNECT_SECONDS}s"
    else:
        offer = comm.bcast(None, 0)
        hosts, port, token = offer or ([], 0, "")
        problem = None if offer else "rank 0 could not listen for them"
        for host in hosts:
            try:
                conn = socket.create_connection((host, port), timeout=2.0)
            except OSError as error:
                problem = f"rank {rank} could not reach rank 0 at {host}:{port} ({error})"
                continue
            conn.sendall(json.dumps({"rank": rank, "token": token}).encode() + b"\n")
            peers[0], problem = conn, None
            break
    if comm.allreduce(0 if problem else 1, op=MPI.MIN) == 0:
        for conn in peers.values():
            conn.close()
        if problem is not None:
            warnings.warn(
                f"ember.distributed: no liveness link to rank 0 ({problem}); a rank that dies "
                "will be noticed only at the process group's timeout",
                RuntimeWarning,
                stacklevel=3,
            )
        return
    for conn in peers.values():
        conn.settimeout(None)
        _keepalive(conn)
    _links.append(Links(rank, peers))


def disconnect() -> None:
    """Close this rank's links (saying it leaves, if it has not yet)."""
    while _links:
        _links.pop().close(LEFT)
