"""The CPU-bound checks (`tools.validate_citations.off_loop`) run in the plugin's own pool of CHECK_WORKERS real
threads: each holds its answer's working set while it runs, so however many answers end at once, at most that many
working sets are alive (tests/hostile/test_plugin_memory.py measures the process). Run in a subprocess that imports
the SDK, which patches threading with gevent as in the plugin process."""

import json
import subprocess
import sys

from tests.support import ROOT

CHILD = """
import json
import dify_plugin  # noqa: F401 - applies gevent's patching, as in the plugin process
import gevent
from gevent import monkey
from tools.validate_citations import CHECK_WORKERS, off_loop

assert monkey.is_module_patched("threading")
Lock, sleep = monkey.get_original("threading", "Lock"), monkey.get_original("time", "sleep")
lock, running, most = Lock(), [0], [0]

def check(n):
    with lock:
        running[0] += 1
        most[0] = max(most[0], running[0])
    sleep(0.1)
    with lock:
        running[0] -= 1
    return n

calls = [gevent.spawn(off_loop, check, n) for n in range(8)]
gevent.joinall(calls, timeout=30)
print(json.dumps({"results": sorted(c.value for c in calls), "most": most[0], "workers": CHECK_WORKERS}))
"""


def test_at_most_check_workers_checks_run_at_once():
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["results"] == list(range(8))  # every call ran, each once
    assert measured["most"] == measured["workers"] == 2
