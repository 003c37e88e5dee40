"""The ranks' stdout through the launcher: MPICH's banner dropped, everything else kept, whole
lines from each rank."""

from __future__ import annotations

import os
import time

import pytest

from ember.distributed._rank_output import BannerFilter, RankOutput

# what hydra's mpiexec printed on stdout when the launcher stopped its rank (SIGTERM)
BANNER = (
    b"\n"
    + b"=" * 83
    + b"\n"
    + b"=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
    + b"=   PID 4586 RUNNING AT vm\n"
    + b"=   EXIT CODE: 15\n"
    + b"=   CLEANING UP REMAINING PROCESSES\n"
    + b"=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n"
    + b"=" * 83
    + b"\n"
    + b"YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Terminated (signal 15)\n"
    + b"This typically refers to a problem with your application.\n"
    + b"Please see the FAQ page for debugging suggestions\n"
)


def _filtered(stream: bytes, piece: int) -> bytes:
    banner_filter = BannerFilter()
    out = b"".join(banner_filter.feed(stream[i : i + piece]) for i in range(0, len(stream), piece))
    return out + banner_filter.close()


@pytest.mark.parametrize("piece", [1, 2, 7, 64, 100_000])
@pytest.mark.parametrize(
    ("stream", "kept"),
    [
        (b"epoch 1\nepoch 2\n" + BANNER, b"epoch 1\nepoch 2\n"),
        (b"rank 0 up\n" + BANNER + BANNER, b"rank 0 up\n"),  # two ranks' banners
        # the banner's first newline ends the rank's unfinished line, and is kept
        (b"no newline at the end" + BANNER, b"no newline at the end\n"),
        # the rank's own blank lines and rules of = are its output, not a banner
        (b"a\n\n" + b"=" * 40 + b"\nb\n\n\n", b"a\n\n" + b"=" * 40 + b"\nb\n\n\n"),
        (b"=" * 83 + b"\n= a table row\n", b"=" * 83 + b"\n= a table row\n"),
        (b"====", b"===="),
        (b"progress 10%\rprogress 20%\r", b"progress 10%\rprogress 20%\r"),
    ],
)
def test_the_banner_is_dropped_and_everything_else_kept(stream, kept, piece):
    assert _filtered(stream, piece) == kept


def test_output_that_is_not_a_banner_passes_at_once():
    banner_filter = BannerFilter()
    assert banner_filter.feed(b"step 1\nstep") == b"step 1\nstep"  # the partial line too
    assert banner_filter.feed(b" 2 of 3\n\n") == b" 2 of 3\n"  # the blank line waits
    assert banner_filter.feed(b"done\n") == b"\ndone\n"


def test_each_ranks_lines_stay_whole(tmp_path):
    """Two writers sending a line's text and its end separately (as mpiexec forwards them)
    come out as whole lines, not "rank 0rank 1\\n\\n"."""
    log = tmp_path / "stdout"
    saved = os.dup(1)
    with open(log, "wb") as target:
        os.dup2(target.fileno(), 1)
    try:
        output = RankOutput()
        pipes = [output.pipe(), output.pipe()]
        for rank, pipe in enumerate(pipes):
            os.write(pipe, f"rank {rank} up".encode())
        time.sleep(0.05)
        for pipe in pipes:
            os.write(pipe, b"\n")
            os.close(pipe)
        output.close()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    assert sorted(log.read_bytes().splitlines(keepends=True)) == [b"rank 0 up\n", b"rank 1 up\n"]


def test_a_line_that_waits_for_its_end_is_shown_meanwhile(tmp_path):
    log = tmp_path / "stdout"
    saved = os.dup(1)
    with open(log, "wb") as target:
        os.dup2(target.fileno(), 1)
    try:
        output = RankOutput()
        pipe = output.pipe()
        os.write(pipe, b"password: ")
        deadline = time.monotonic() + 5
        while log.read_bytes() != b"password: " and time.monotonic() < deadline:
            time.sleep(0.05)
        assert log.read_bytes() == b"password: "
        os.close(pipe)
        output.close()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
