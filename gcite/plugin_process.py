"""Run the plugin as the daemon does (`python -m main`, stdio) and talk to it: the local install protocol.

The plugin writes one manifest line at start, then JSON lines: log and heartbeat events, and for each request
`session` events (`stream` messages, then `end`, or `error`). Requests are JSON lines on its stdin. The SDK's stdio
loop does not exit on end of input, so `close()` terminates the process.
"""

import json
import os
import queue
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Session:
    session_id: str
    sent_at: float
    messages: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    ended_at: float | None = None
    ends: int = 0

    @property
    def variables(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for message in self.messages:
            if message.get("type") == "variable":
                body = message["message"]
                name, value = body["variable_name"], body["variable_value"]
                out[name] = out.get(name, "") + value if body.get("stream") else value
        return out


class PluginProcess:
    def __init__(self, plugin_dir: Path, python: str, env: dict[str, str] | None = None, start_timeout: float = 60):
        self._process = subprocess.Popen(
            [python, "-m", "main"], cwd=plugin_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env={**os.environ, "INSTALL_METHOD": "local", **(env or {})})
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self.stray: list[dict[str, Any]] = []  # events that belong to no session we opened
        self._stderr: list[bytes] = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self.manifest = self._next_json(start_timeout)

    # lifecycle

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def close(self) -> None:
        if self.alive:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> "PluginProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    # requests

    def send(self, data: dict[str, Any], session_id: str | None = None) -> str:
        session_id = session_id or f"s-{uuid.uuid4().hex[:12]}"
        request = {"session_id": session_id, "event": "request", "conversation_id": None, "message_id": None,
                   "app_id": None, "endpoint_id": None, "context": {}, "data": data}
        with self._lock:
            self._sessions[session_id] = Session(session_id, time.perf_counter())
        self._process.stdin.write((json.dumps(request, ensure_ascii=False) + "\n").encode("utf-8"))
        self._process.stdin.flush()
        return session_id

    def invoke_tool(self, provider: str, tool: str, parameters: dict[str, Any], session_id: str | None = None) -> str:
        return self.send({"type": "tool", "action": "invoke_tool", "user_id": "user-1", "provider": provider,
                          "tool": tool, "credentials": {}, "credential_type": "api-key",
                          "tool_parameters": parameters}, session_id)

    def wait(self, session_ids: list[str], timeout: float = 60) -> list[Session]:
        """Read events until every session has ended (or failed); returns them in the order asked."""
        deadline = time.monotonic() + timeout
        while not all(self._sessions[s].ended_at for s in session_ids):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                missing = [s for s in session_ids if not self._sessions[s].ended_at]
                raise TimeoutError(f"{len(missing)} session(s) did not end: {missing[:5]}; stderr: {self.stderr[-2000:]}")
            self._dispatch(self._next_json(remaining))
        return [self._sessions[s] for s in session_ids]

    def call_tool(self, provider: str, tool: str, parameters: dict[str, Any], timeout: float = 60) -> Session:
        return self.wait([self.invoke_tool(provider, tool, parameters)], timeout)[0]

    # reading

    def _read_stdout(self) -> None:
        for line in self._process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _read_stderr(self) -> None:
        for line in self._process.stderr:
            self._stderr.append(line)

    def _next_json(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"no output from the plugin in {timeout:.0f} s; stderr: {self.stderr[-2000:]}") from None
            if line is None:
                raise EOFError(f"the plugin exited ({self._process.poll()}); stderr: {self.stderr[-2000:]}")
            line = line.strip()
            if line:
                return json.loads(line)

    def _dispatch(self, event: dict[str, Any]) -> None:
        session = self._sessions.get(event.get("session_id") or "")
        if event.get("event") != "session" or session is None:
            if event.get("event") not in ("heartbeat", "log"):
                self.stray.append(event)
            return
        data = event["data"]
        if data["type"] == "stream":
            session.messages.append(data["data"])
        elif data["type"] == "error":
            session.error = data["data"]
        elif data["type"] == "end":
            session.ends += 1
            session.ended_at = session.ended_at or time.perf_counter()
