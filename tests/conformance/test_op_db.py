"""Every OpInfo of PyTorch's op database, run through torch and ember and compared.

One test per op and category (``test_function[add]``, ``test_errors[cat]``, ``test_vjp[...]``);
the categories and the comparison are described in ``_runner.py``, the lists of expected
disagreements in ``_lists.py``. Skips as a whole where torch (or expecttest, which torch's
testing internals import) is not installed.
"""

import pytest

pytest.importorskip("torch")
pytest.importorskip("expecttest")

from . import _lists, _runner  # noqa: E402

KEYS = sorted(_runner.ops_by_key())


def _check(key: str, category: str) -> None:
    status, message = _lists.judge(key, category, _runner.result_for(key, category))
    if status in ("n/a", "deliberate"):
        pytest.skip(message)
    if status == "known":
        pytest.xfail(message)
    if status in ("fail", "stale"):
        pytest.fail(message, pytrace=False)


@pytest.mark.parametrize("key", KEYS)
def test_function(key):
    _check(key, "function")


@pytest.mark.parametrize("key", KEYS)
def test_method(key):
    _check(key, "method")


@pytest.mark.parametrize("key", KEYS)
def test_inplace(key):
    _check(key, "inplace")


@pytest.mark.parametrize("key", KEYS)
def test_out(key):
    _check(key, "out")


@pytest.mark.parametrize("key", KEYS)
def test_errors(key):
    _check(key, "errors")


@pytest.mark.parametrize("key", KEYS)
def test_error_messages(key):
    _check(key, "error_messages")


@pytest.mark.parametrize("key", KEYS)
def test_vjp(key):
    _check(key, "vjp")


@pytest.mark.parametrize("key", KEYS)
def test_jvp(key):
    _check(key, "jvp")


def test_lists_name_real_ops_and_categories():
    ops = set(KEYS) | {"*"}
    categories = set(_runner.CATEGORIES) | {"*"}
    for entry in [*_lists.deliberate(), *_lists.known().values()]:
        assert entry.op in ops, f"unknown op {entry.op!r} in a conformance list"
        assert entry.category in categories, f"unknown category {entry.category!r}"
        assert entry.reason, f"{entry.op} {entry.category}: an entry needs a reason"


def test_the_suite_runs_the_kernels_threshold_users_get():
    import subprocess
    import sys

    probe = "from ember._kernels import jit; print(jit.MIN_WORK)"
    default = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    ).stdout.strip()
    assert int(default) == _runner.USERS_MIN_WORK
