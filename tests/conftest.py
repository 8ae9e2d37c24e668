import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_configure(config):
    """In a run that leaves the browser tests out (`make test-fast`, the first run of `make test`), import
    dify_plugin before any test module is collected, as the plugin process does (main.py imports it first).

    That import monkey-patches threading with gevent. Done in the middle of the session instead (the first test that
    builds the package or loads the plugin through the SDK does it), graphon's engine, imported before it, mixes OS
    threads with greenlets: every later chatflow run then waits out its dispatcher's and workers' 2-second join
    timeouts (about 4.5 s a run instead of 0.4 s), and which tests pay depends on their order. The browser tests are
    the exception: their driver must not share gevent's patching (the Makefile runs them in a process of their own),
    so a run that may select them is left as it was."""
    from _pytest.mark.expression import Expression

    markexpr = config.getoption("markexpr")
    if markexpr and not Expression.compile(markexpr).evaluate(lambda name, **kwargs: name == "browser"):
        import warnings

        with warnings.catch_warnings():  # pytest.ini's filter for this warning is not in force yet
            warnings.filterwarnings("ignore", message="Monkey-patching ssl")
            import dify_plugin  # noqa: F401 - the import is the point


def pytest_sessionfinish(session, exitstatus):
    """dify_plugin patches threading with gevent; at interpreter exit, logging's weak references to handlers then
    call into a half-torn-down gevent and print a spurious traceback after the summary. Dropping the weak
    references (not the handlers) once the tests are done stops that. First it stops the plugin process the chatflow
    tests shared (tests/support/plugins.py), if one was started."""
    import logging

    plugins = sys.modules.get("tests.support.plugins")
    if plugins is not None:
        plugins.close_shared_plugins()
    logging._handlerList.clear()
