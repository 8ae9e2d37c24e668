"""The support checks (`tools.validate_citations.check_off_loop`) run in the plugin's own pool of CHECK_WORKERS real
threads: each holds its answer's working set while it runs, so however many answers end at once, at most that many
working sets are alive (tests/hostile/test_plugin_memory.py measures the process). Other work off the loop
(`off_loop`, a node's outputs in the endpoint) never waits behind them. Run in a subprocess that imports the SDK,
which patches threading with gevent as in the plugin process."""

import json
import subprocess
import sys

from tests.support import ROOT

CHILD = """
import json
import dify_plugin  # noqa: F401 - applies gevent's patching, as in the plugin process
import gevent
from gevent import monkey
from tools.validate_citations import CHECK_WORKERS, check_off_loop, off_loop

assert monkey.is_module_patched("threading")
Lock, sleep = monkey.get_original("threading", "Lock"), monkey.get_original("time", "sleep")
clock = monkey.get_original("time", "monotonic")
lock, running, most = Lock(), [0], [0]

def check(n, seconds=0.1):
    with lock:
        running[0] += 1
        most[0] = max(most[0], running[0])
    sleep(seconds)
    with lock:
        running[0] -= 1
    return n

calls = [gevent.spawn(check_off_loop, check, n) for n in range(8)]
gevent.joinall(calls, timeout=30)
long_checks = [gevent.spawn(check_off_loop, check, n, 1.5) for n in range(CHECK_WORKERS)]
gevent.sleep(0.2)  # both long checks hold the check pool
started = clock()
quick = off_loop(sum, [1, 2])
waited = clock() - started
gevent.joinall(long_checks, timeout=30)
print(json.dumps({"results": sorted(c.value for c in calls), "most": most[0], "workers": CHECK_WORKERS,
                  "quick": quick, "waited": waited, "long": sorted(c.value for c in long_checks)}))
"""


def test_at_most_check_workers_checks_run_at_once_and_other_work_never_waits_behind_them():
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["results"] == list(range(8))  # every call ran, each once
    assert measured["most"] == measured["workers"] == 2
    assert measured["long"] == list(range(measured["workers"]))
    assert measured["quick"] == 3 and measured["waited"] < 0.5, measured  # not queued behind the 1.5 s checks
