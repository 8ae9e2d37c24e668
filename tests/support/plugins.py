"""One plugin process per test process for the tests that run chatflows (`gcite.local.runner.SharedPlugins`), as the
daemon keeps one per installed plugin for every conversation: a start costs about 0.7 CPU-s and 1.5 s of waiting,
and some 60 tests run a chatflow with a G-Cite tool. Tests about the process itself (its threads, its memory, its
start) start their own. tests/conftest.py closes it when the session ends."""

from gcite.local.runner import SharedPlugins

_shared: list[SharedPlugins] = []  # made on first use: after conftest's dify_plugin import, so with gevent's lock


def shared_plugins() -> SharedPlugins:
    if not _shared:
        _shared.append(SharedPlugins())
    return _shared[0]


def close_shared_plugins() -> None:
    while _shared:
        _shared.pop().close()
