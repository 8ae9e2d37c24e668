"""The package starts as the Marketplace's install test and Dify Cloud start it: unpacked, only requirements.txt
installed into a fresh venv, `python -m main` with INSTALL_METHOD=serverless and SERVERLESS_PORT, no network and
no credentials; it must answer HTTP within 20 s (the install test waits for "Serving Flask app", then GET / must
answer 200 or 404, and force-stops the plugin after 20 s: dify-marketplace-toolkit validator/test-plugin-install.py).

The variable names are the SDK's (`dify_plugin/config/config.py`: INSTALL_METHOD, SERVERLESS_HOST, SERVERLESS_PORT)
and its server's routes (`core/server/serverless/request_reader.py`: POST /invoke, GET /health).

"No network" is a fresh network namespace (`unshare -n`, only loopback up): the plugin and the probe run inside it,
and the probe first proves that nothing outside is reachable. Where namespaces are not available the plugin runs with
every proxy variable pointing at a closed port instead, and the test says so in its result.
"""

import json
import shutil
import socket
import subprocess
import sys

import pytest

from gcite.release.package import build
from tests.support import ROOT
from tests.support.package_env import package_python, unpack

LIMIT = 20.0  # seconds: the install test's force-stop
PORT = 8080  # the install test's SERVERLESS_PORT (inside a fresh namespace nothing else holds it)

# Runs inside the namespace with the stdlib only: starts the plugin, polls it, stops it, prints one JSON line.
PROBE = r"""
import json, os, socket, subprocess, sys, threading, time, urllib.error, urllib.request
python, folder, port, limit = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
result = {"outside_reachable": None}
try:
    socket.create_connection(("1.1.1.1", 443), timeout=2).close()
    result["outside_reachable"] = True
except OSError:
    result["outside_reachable"] = False
env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
       "INSTALL_METHOD": "serverless", "SERVERLESS_HOST": "127.0.0.1", "SERVERLESS_PORT": port}
env.update(json.loads(sys.argv[5]))
started = time.monotonic()
process = subprocess.Popen([python, "-m", "main"], cwd=folder, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, start_new_session=True)
lines = []
threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, b"")), daemon=True).start()

def get(path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return response.status, response.read(200).decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, ""
    except OSError:
        return None, ""

root = health = (None, "")
while time.monotonic() - started < limit and process.poll() is None:
    root = get("/")
    if root[0] is not None:
        result["answered_after"] = round(time.monotonic() - started, 2)
        health = get("/health")
        break
    time.sleep(0.05)
result.update(root_status=root[0], health=list(health), exited_early=process.poll())
process.terminate()
try:
    process.wait(5)
except subprocess.TimeoutExpired:
    process.kill()
    process.wait()
time.sleep(0.1)
result["output"] = b"".join(lines).decode("utf-8", "replace")[-4000:]
print(json.dumps(result))
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def namespaces_work() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    return subprocess.run(["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def serverless(tmp_path_factory):
    package = build(ROOT, tmp_path_factory.mktemp("dist"))
    folder = unpack(package.path, tmp_path_factory.mktemp("plugin"))
    python = package_python(folder / "requirements.txt")
    extra = {"HOME": str(tmp_path_factory.mktemp("home"))}  # and no other variable: no credentials
    if namespaces_work():
        probe = [sys.executable, "-c", PROBE, python, str(folder), str(PORT), str(LIMIT), json.dumps(extra)]
        command = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *probe]
        isolation = "network namespace"
    else:
        dead = "http://127.0.0.1:9"
        extra.update({name: dead for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")})
        command = [sys.executable, "-c", PROBE, python, str(folder), str(free_port()), str(LIMIT), json.dumps(extra)]
        isolation = "proxies at a closed port"
    done = subprocess.run(command, capture_output=True, text=True, timeout=LIMIT + 60)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["isolation"] = isolation
    print(f"\nserverless start: {result.get('answered_after')} s ({isolation})")
    return folder, result


def test_only_the_requirements_are_installed(serverless):
    folder, _ = serverless
    python = package_python(folder / "requirements.txt")
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = {p["name"].lower().replace("_", "-") for p in json.loads(listed)}
    assert {"dify-plugin", "pyjwt", "requests"} <= names
    assert not names & {"pytest", "graphon", "cryptography", "playwright", "hypothesis"}  # nothing from the dev tools


def test_the_package_answers_http_in_serverless_mode_within_20_seconds(serverless):
    _, result = serverless
    if result["isolation"] == "network namespace":
        assert result["outside_reachable"] is False, "the namespace still reaches the network"
    assert result.get("answered_after") is not None, f"no HTTP answer within {LIMIT} s:\n{result['output']}"
    assert result["answered_after"] < LIMIT
    assert result["root_status"] in (200, 404)  # what the install test accepts
    assert result["health"] == [200, "OK"]
    assert result["exited_early"] is None, f"the plugin exited:\n{result['output']}"
    assert "Serving Flask app" in result["output"]  # the line the install test waits for
    assert "Traceback" not in result["output"], result["output"]
