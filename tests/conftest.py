import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))



def pytest_sessionfinish(session, exitstatus):
    """dify_plugin patches threading with gevent; at interpreter exit, logging's weak references to handlers then
    call into a half-torn-down gevent and print a spurious traceback after the summary. Dropping the weak
    references (not the handlers) once the tests are done stops that."""
    import logging

    logging._handlerList.clear()
