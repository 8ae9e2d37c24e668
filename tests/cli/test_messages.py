"""Messages that tell the user what to do: the wrong Python, a taken port, a wrong endpoint hook, a server that is
not Dify's Knowledge API, a refused connection (said once), and `gcite secret`."""

import base64
import io
import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler
from types import SimpleNamespace

import pytest

from gcite.cli import serve as serve_cli
from gcite.cli.chat import chat_command
from gcite.cli.main import build_parser
from gcite.local.serve import DEFAULT_PORT, LocalDify
from tests.support import ROOT
from tests.support.local_http import origin, start_server, stop_server


def gcite(*args, **env):
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, env=dict(os.environ, **env)
    )


def test_a_python_without_our_packages_gets_one_line_naming_the_venv():
    done = gcite("-S", "-m", "gcite", "demo")  # -S: no site-packages, as the system Python has none of ours
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert ".venv/bin/python -m gcite" in done.stderr and "source .venv/bin/activate" in done.stderr


def test_the_venv_python_runs_the_cli():
    done = gcite("-m", "gcite", "--version")
    assert done.returncode == 0 and done.stdout.startswith("gcite ")


def test_secret_prints_32_random_bytes_once():
    first, second = gcite("-m", "gcite", "secret"), gcite("-m", "gcite", "secret")
    assert first.returncode == 0 and first.stderr == ""
    lines = first.stdout.splitlines()
    assert len(lines) == 1
    secret = lines[0]
    assert len(base64.urlsafe_b64decode(secret + "=" * (-len(secret) % 4))) >= 32
    assert secret != second.stdout.strip()


# --- gcite serve and make demo: the port ------------------------------------------------------------------


@pytest.fixture
def taken_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_taken_port_named_with_port_is_one_line_naming_port(taken_port):
    done = gcite("-m", "gcite", "serve", "--port", str(taken_port))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: port {taken_port} on 127.0.0.1 is already in use (another gcite serve or make demo?): choose another "
        f"with --port PORT, or --port 0 for any free port"
    ]


def test_when_the_default_port_is_taken_serve_takes_a_free_one_and_prints_it(capsys):
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", DEFAULT_PORT))
            sock.listen()
        except OSError:
            pass  # another program holds it already: taken either way
        local = serve_cli.serve_on_port(SimpleNamespace(port=None), lambda port: LocalDify(port))
    try:
        assert local is not None and local.port != DEFAULT_PORT
        out = capsys.readouterr().out
        assert f"port {DEFAULT_PORT} is in use" in out and f"serving on port {local.port} instead" in out
        assert "--port" in out
    finally:
        local.server.server_close()


# --- gcite chat --url: a wrong hook, a refused connection --------------------------------------------------


class NotFound(BaseHTTPRequestHandler):
    """What a Dify answers for an unknown hook, and any web server for a path it does not have: 404, not JSON."""

    def do_GET(self):
        self.send_response(404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html><body>404 page not found</body></html>")

    do_POST = do_GET

    def log_message(self, *args):
        pass


class DaemonNotFound(NotFound):
    """What Dify's plugin daemon answers for a hook it does not know (internal/server/endpoint.go): 404 and its JSON."""

    def do_POST(self):
        body = json.dumps(
            {
                "code": -400,
                "message": json.dumps(
                    {"message": "endpoint not found", "error_type": "PluginDaemonBadRequestError", "args": None}
                ),
                "data": None,
            }
        ).encode()
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def daemon():
    server = start_server(DaemonNotFound)
    yield f"{origin(server)}"
    stop_server(server)


@pytest.fixture
def not_found_server():
    server = start_server(NotFound)
    yield f"{origin(server)}"
    stop_server(server)


def chat(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = chat_command(build_parser().parse_args(["chat", *argv]), io.StringIO(), out, err)
    return code, out.getvalue(), err.getvalue()


def test_a_wrong_hook_says_so_and_where_dify_shows_the_url(not_found_server):
    url = f"{not_found_server}/e/wronghook/gcite/chat"
    code, out, err = chat("How do I book a meeting room?", "--url", url, "--token", "t")
    assert code == 1 and out == ""
    assert err.splitlines() == [
        f"error (http_404): no G-Cite endpoint at {url} (HTTP 404): the hook or the path is "
        f"wrong; copy the endpoint's URL from Dify: Plugins → G-Cite citations → Endpoints "
        f"(it ends in /e/<hook>/gcite/chat)"
    ]


def test_a_hook_difys_daemon_does_not_know_says_so_too(daemon):
    url = f"{daemon}/e/abcdefghijklmnop/gcite/chat"
    code, _, err = chat("q", "--url", url, "--token", "t")
    assert code == 1 and len(err.splitlines()) == 1
    assert f"no G-Cite endpoint at {url} (HTTP 404): the hook or the path is wrong" in err
    assert "Plugins → G-Cite citations → Endpoints" in err


def test_user_against_a_server_that_is_not_gcite_serve(not_found_server):
    code, _, err = chat("q", "--url", f"{not_found_server}/e/x/gcite/chat", "--user", "wang")
    assert code == 2 and len(err.splitlines()) == 1 and "--user works with gcite serve only" in err


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_refused_connection_is_said_once():
    url = f"http://127.0.0.1:{closed_port()}/e/hook/gcite/chat"
    code, _, err = chat("q", "--url", url, "--token", "t")
    assert code == 1
    assert err.splitlines() == [
        f"error (connection): cannot connect to {url}: is the server running, and is --url right?"
    ]
    code, _, err = chat("q", "--url", url, "--user", "wang")
    assert code == 2 and len(err.splitlines()) == 1 and "is gcite serve running there?" in err


# --- acl audit: not Dify's Knowledge API, a refused connection ---------------------------------------------


def audit(base_url):
    return gcite(
        "-m",
        "gcite",
        "acl",
        "audit",
        "--dataset",
        "ds-1",
        "--retries",
        "2",
        DIFY_BASE_URL=base_url,
        DIFY_DATASET_API_KEY="dataset-secret-key",
    )


def test_acl_audit_against_a_server_that_is_not_difys_knowledge_api(not_found_server):
    done = audit(f"{not_found_server}/v1")
    assert done.returncode == 5
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "does not answer as Dify's Knowledge API" in errors[0]
    assert "--base-url / DIFY_BASE_URL" in errors[0] and "no dataset" not in done.stderr
    assert "dataset-secret-key" not in done.stdout + done.stderr


def test_acl_audit_says_a_refused_connection_once_not_as_a_warning_then_an_error():
    base = f"http://127.0.0.1:{closed_port()}/v1"
    done = audit(base)
    assert done.returncode == 5
    assert done.stderr.splitlines() == [
        f"error: listing the dataset's metadata fields: cannot connect to {base} "
        f"(connection refused): check --base-url / DIFY_BASE_URL"
    ]


def test_acl_audit_still_retries_a_dropped_connection():
    """Only a refusal is final: a server that accepts and hangs up (a restart, a proxy) is tried again."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        stop = threading.Event()

        def hang_up():
            while not stop.is_set():
                try:
                    conn, _ = sock.accept()
                except OSError:
                    return
                conn.close()

        threading.Thread(target=hang_up, daemon=True).start()
        try:
            done = audit(f"http://127.0.0.1:{sock.getsockname()[1]}/v1")
        finally:
            stop.set()
    assert done.returncode == 5
    assert done.stderr.count("warning:") == 2 and "failed after 3 attempts" in done.stderr
