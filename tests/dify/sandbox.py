"""Stand-in for dify-sandbox (a Go program that cannot be built here): `POST /v1/sandbox/run` as it answers it.

Request: header `X-Api-Key`, JSON `{language, code, preload, enable_network}`. Answer: `{"code": 0, "message":
"success", "data": {"stdout": ..., "error": ...}}` where `error` is the program's whole stderr (Dify's Code node
raises it as the node's error when it is not empty). The program (`preload`, then `code`) runs in a fresh
Python 3.10 process when pyenv has it (the sandbox's Python), else 3.12, killed after `timeout` seconds, in which
case `error: timeout` is added to stderr as dify-sandbox's output capture does (default 15 s: docker-compose's
SANDBOX_WORKER_TIMEOUT). A wrong key is answered 401; a language other than python3 gets the sandbox's error code.
"""

import json
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.support.local_http import origin, start_server, stop_server

ROOT = Path(__file__).resolve().parents[2]


def sandbox_python() -> tuple[str, str]:
    """(path, version) of the interpreter the stand-in runs code with: 3.10 if found, else 3.12."""
    for version in ("3.10", "3.12"):
        found = subprocess.run([str(ROOT / "scripts" / "find_python.sh"), version], capture_output=True, text=True)
        if found.returncode == 0 and found.stdout.strip():
            return found.stdout.strip(), version
    raise RuntimeError("neither Python 3.10 nor 3.12 found for the sandbox stand-in (scripts/find_python.sh)")


class Sandbox:
    def __init__(self, api_key: str, timeout: float = 15.0) -> None:
        self.api_key = api_key
        self.timeout = timeout
        self.python, self.version = sandbox_python()
        self.runs: list[dict[str, Any]] = []  # every request and answer, for the tests
        self._lock = threading.Lock()
        sandbox = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                if self.path != "/v1/sandbox/run":
                    return self._send(404, {"code": -404, "message": "not found"})
                if self.headers.get("X-Api-Key") != sandbox.api_key:
                    return self._send(401, {"code": -401, "message": "unauthorized"})
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                self._send(200, sandbox.run(body))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = start_server(Handler)
        self.url = f"{origin(self.server)}"

    def run(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("language") != "python3":
            return {"code": -400, "message": f"unsupported language {body.get('language')!r}", "data": None}
        preload = body.get("preload") or ""
        program = (preload + "\n" if preload else "") + (body.get("code") or "")
        with tempfile.NamedTemporaryFile("w", suffix=".py", encoding="utf-8", delete=True) as f:
            f.write(program)
            f.flush()
            try:
                done = subprocess.run([self.python, "-I", f.name], capture_output=True, timeout=self.timeout)
                stdout, stderr = done.stdout, done.stderr
            except subprocess.TimeoutExpired as expired:
                stdout, stderr = expired.stdout or b"", (expired.stderr or b"") + b"error: timeout\n"
        answer = {
            "code": 0,
            "message": "success",
            "data": {"stdout": stdout.decode("utf-8", "replace"), "error": stderr.decode("utf-8", "replace")},
        }
        with self._lock:
            self.runs.append({"request": body, "answer": answer})
        return answer

    def close(self) -> None:
        stop_server(self.server)
