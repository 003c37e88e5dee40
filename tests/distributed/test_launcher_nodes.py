"""``ember run`` over several "nodes" simulated on loopback: --nnodes/--node-rank, a hostfile,
torchrun's rendezvous flags and environment, --max-restarts."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ._harness import SPAWN_TIMEOUT, free_port, needs_mpi
from .test_run import _run

SCRIPT = """
import os
import sys
import ember
import ember.distributed as dist

names = ["RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
         "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID"]
if "--fail-first" in sys.argv and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
    sys.exit(3 if os.environ["RANK"] == "1" else 0)
dist.init_process_group("gloo")
t = ember.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
env = " ".join(f"{n}={os.environ[n]}" for n in names)
# a file per rank: the ranks' stdout pass through mpiexec, which may split or join lines
with open(f"rank{dist.get_rank()}.txt", "w") as f:
    f.write(f"{env} sum={t.item():g} elastic={dist.is_torchelastic_launched()}")
dist.destroy_process_group()
"""

LAUNCHER = [sys.executable, "-m", "ember.distributed.run"]


def _script(tmp_path: Path) -> str:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(SCRIPT))
    return str(path)


def _lines(folder: Path) -> list[str]:
    return [path.read_text() for path in sorted(folder.glob("rank*.txt"))]


def test_two_launchers_make_one_world_of_two_nodes(tmp_path):
    needs_mpi()
    port, script = free_port(), _script(tmp_path)
    timeout = ["--timeout", str(SPAWN_TIMEOUT - 10)]
    node = [*LAUNCHER, "--nnodes", "2", "--nproc-per-node", "1", *timeout, "--rdzv-id", "job7"]
    # node 0 names rank 0's address as torchrun's static rendezvous does, node 1 as c10d does
    nodes = [
        [*node, "--node-rank", "0", "--master-addr", "127.0.0.1", "--master-port", str(port)],
        [
            *node,
            "--node_rank",
            "1",
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            f"127.0.0.1:{port}",
        ],
    ]
    started = [
        subprocess.Popen(
            [*command, script],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for command in nodes
    ]
    outputs = []
    try:
        for process in started:
            out, err = process.communicate(timeout=SPAWN_TIMEOUT)
            assert process.returncode == 0, out + err
            outputs.append(out)
    finally:
        for process in started:
            if process.poll() is None:
                os.killpg(process.pid, 9)
    common = "WORLD_SIZE=2 LOCAL_WORLD_SIZE=1 GROUP_WORLD_SIZE=2 ROLE_WORLD_SIZE=2"
    assert _lines(tmp_path) == [
        f"RANK={node_rank} LOCAL_RANK=0 GROUP_RANK={node_rank} ROLE_RANK={node_rank} "
        f"{common} TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_RUN_ID=job7 sum=3 elastic=True"
        for node_rank in range(2)
    ]


def test_hostfile_starts_a_launcher_per_host(tmp_path):
    needs_mpi()
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# two nodes on this machine\n127.0.0.1 slots=2\nlocalhost slots=2\n")
    # a remote shell that runs the command here, as `ssh host command` would there
    rsh = tmp_path / "fake-ssh"
    rsh.write_text('#!/bin/sh\nshift\nexec sh -c "$1"\n')
    rsh.chmod(rsh.stat().st_mode | stat.S_IEXEC)
    command = [*LAUNCHER, "--hostfile", str(hostfile), "--rsh", str(rsh)]
    command += ["--master-port", str(free_port()), "--timeout", str(SPAWN_TIMEOUT - 10)]
    done = _run([*command, _script(tmp_path)], tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    lines = _lines(tmp_path)
    assert len(lines) == 4
    for rank, line in enumerate(lines):
        assert line.startswith(f"RANK={rank} LOCAL_RANK={rank % 2} GROUP_RANK={rank // 2} ")
        assert "WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_WORLD_SIZE=2" in line
        assert line.endswith("sum=10 elastic=True")  # 1 + 2 + 3 + 4


def test_max_restarts_starts_the_workers_again(tmp_path):
    needs_mpi()
    command = [*LAUNCHER, "--standalone", "--nproc-per-node", "2", "--max-restarts", "1"]
    command += ["--timeout", str(SPAWN_TIMEOUT - 10), _script(tmp_path), "--fail-first"]
    done = _run(command, tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "process 1 terminated with exit code 3" in done.stderr
    assert "restarting the workers (1 of 1)" in done.stderr
    lines = _lines(tmp_path)
    assert [line.split()[0] for line in lines] == ["RANK=0", "RANK=1"]
    assert all("TORCHELASTIC_RESTART_COUNT=1" in line and "sum=3" in line for line in lines)


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--nnodes", "1:4"], "elastic ranges"),
        (["--nproc-per-node", "two"], "Unsupported nproc_per_node value: two"),
        (["--nnodes", "2", "--node-rank", "2"], "--node-rank 2 is not in [0, 2)"),
        (["--nnodes", "2", "--max-restarts", "1"], "--max-restarts needs a single node"),
    ],
)
def test_bad_launcher_flags_are_refused(capsys, flags, message):
    from ember.distributed.run import main

    assert main([*flags, "train.py"]) == 2
    assert message in capsys.readouterr().err


def test_hostfile_lines_endpoints_and_process_counts(tmp_path):
    from ember.distributed.run import _endpoint, _nproc_per_node, _parser, _read_hostfile

    hosts = tmp_path / "hosts"
    hosts.write_text("# cluster\nnode-a slots=4\n\nnode-b:4  # MPICH's form\nnode-c\n")
    assert _read_hostfile(str(hosts)) == [("node-a", 4), ("node-b", 4), ("node-c", None)]
    hosts.write_text("# nobody\n")
    with pytest.raises(ValueError, match="no hosts in it"):
        _read_hostfile(str(hosts))
    parse = _parser().parse_args
    assert _endpoint(parse(["x.py"])) == ("127.0.0.1", 29500)
    assert _endpoint(parse(["--rdzv-endpoint", "head", "x.py"])) == ("head", 29400)
    assert _endpoint(parse(["--rdzv_endpoint", "head:1234", "x.py"])) == ("head", 1234)
    assert _endpoint(parse(["--master-addr", "a", "--rdzv-endpoint", "b:7", "x.py"])) == ("a", 7)
    assert _nproc_per_node(None) == 1 and _nproc_per_node("3") == 3
    assert _nproc_per_node("cpu") == (os.cpu_count() or 1)
