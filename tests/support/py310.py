"""Run nodes/*.py under Python 3.10 (Dify's Code-node sandbox) and compare with this interpreter's results."""

import json
import subprocess

import pytest

from tests.support import ROOT

DRIVER = r"""
import importlib.util, json, sys
cases = json.load(sys.stdin)
out = []
for case in cases:
    spec = importlib.util.spec_from_file_location(case["node"], case["path"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        out.append({"ok": module.main(**case["kwargs"])})
    except Exception as e:
        out.append({"error": type(e).__name__ + ": " + str(e)})
json.dump(out, sys.stdout)
"""


def python310() -> str:
    found = subprocess.run([str(ROOT / "scripts" / "find_python.sh"), "3.10"], capture_output=True, text=True)
    if found.returncode != 0:
        pytest.skip("no Python 3.10 installed: " + found.stderr.strip())
    return found.stdout.strip()


def run_cases(node: str, cases: list[dict]) -> list[dict]:
    """Each case's kwargs run through `main` of nodes/<node>.py under 3.10 and here; returns the 3.10 outcomes."""
    path = str(ROOT / "nodes" / f"{node}.py")
    payload = json.dumps([{"node": node, "path": path, "kwargs": k} for k in cases])
    done = subprocess.run([python310(), "-I", "-c", DRIVER], input=payload, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def local_outcome(main, kwargs: dict) -> dict:
    try:
        return {"ok": json.loads(json.dumps(main(**kwargs)))}
    except Exception as e:  # noqa: BLE001 - the outcome is what we compare
        return {"error": type(e).__name__ + ": " + str(e)}


def assert_same_under_310(node: str, main, cases: list[dict]) -> None:
    remote = run_cases(node, cases)
    assert len(remote) == len(cases)
    for kwargs, theirs in zip(cases, remote):
        assert theirs == local_outcome(main, kwargs), kwargs
