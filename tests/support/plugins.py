"""One plugin process per test process for the tests that run chatflows (`gcite.local.runner.SharedPlugins`), as the
daemon keeps one per installed plugin for every conversation: a start costs about 0.7 CPU-s and 1.5 s of waiting,
and some 60 tests run a chatflow with a G-Cite tool. Tests about the process itself (its threads, its memory, its
start) start their own. tests/conftest.py closes it when the session ends.

Only when dify_plugin was imported first (conftest does, in a run that leaves the browser tests out, as `make test`
and `make test-fast` run): the process's reader threads then live all session, and a thread alive while dify_plugin
is imported breaks that import. In any other run `shared_plugins()` is None: each test's services start their own
process and stop it, as before."""

import sys

from gcite.local.runner import SharedPlugins

_shared: list[SharedPlugins] = []  # made on first use, after the dify_plugin import: with gevent's lock


def shared_plugins() -> SharedPlugins | None:
    if "dify_plugin" not in sys.modules:
        return None
    if not _shared:
        _shared.append(SharedPlugins())
    return _shared[0]


def close_shared_plugins() -> None:
    while _shared:
        _shared.pop().close()
