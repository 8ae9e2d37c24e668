"""A pytest plugin for scripts/test_fast.sh: how far a run is, in a file the script reads while pytest runs.

Loaded with `-p tests.progress`; with GCITE_TEST_PROGRESS=FILE set, it writes one line `<done> <total> <failed>` to
FILE once the tests are collected and again after each test (replacing the file whole, so a reader never sees half a
line). The script prints it as `[shard 1] 412/913 tests …` every few seconds: pytest's own `-q` output goes to a
file until the shard ends, and a timer thread here would not run while dify_plugin's gevent patching holds the
process in a test. Without the variable it does nothing.
"""

import os

import pytest

_state = {"done": 0, "total": 0, "failed": set()}


def _write() -> None:
    path = os.environ.get("GCITE_TEST_PROGRESS")
    if not path:
        return
    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as file:
        file.write(f"{_state['done']} {_state['total']} {len(_state['failed'])}\n")
    os.replace(temporary, path)


def pytest_collection_finish(session: pytest.Session) -> None:
    _state["total"] = len(session.items)
    _write()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:  # in its set-up, call or teardown
        _state["failed"].add(report.nodeid)


def pytest_runtest_logfinish(nodeid: str, location: tuple) -> None:
    _state["done"] += 1
    _write()
