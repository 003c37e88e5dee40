"""A hard limit for tests that start processes: SIGALRM turns a hang into a failure."""

from __future__ import annotations

import signal

import pytest


@pytest.fixture(autouse=True)
def hard_timeout(request):
    seconds = getattr(request.module, "TIME_LIMIT", 60)

    def expire(signum, frame):
        raise TimeoutError(f"{request.node.name} ran past its {seconds} s limit")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
