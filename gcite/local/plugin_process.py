"""Run the plugin as the daemon does (`python -m main`, stdio) and play the daemon's side: the local install protocol.

The plugin writes one manifest line at start, then JSON lines: log and heartbeat events, and for each request
`session` events (`stream` messages, then `end`, or `error`; `invoke` when the plugin calls Dify backwards).
Requests are JSON lines on its stdin. The SDK's stdio loop does not exit on end of input, so `close()` terminates
the process. A reader thread routes every line to its session as it arrives, so any number of requests may be in
flight, from any number of threads.

Tools: `invoke_tool` / `call_tool` / `wait` (sessions collect `stream` messages, see `Session`).

Endpoints (what the daemon does for `https://<dify>/e/<hook>/<path>`):
- `daemon_http_request(method, target, headers, body, ...)` builds the raw request as the daemon forwards it:
  path after the hook, IP headers removed, `Dify-Hook-Id`/`Dify-Hook-Url` added, written in Go's
  `http.Request.Write` shape (request line, `Host`, `User-Agent`, `Content-Length`, the other headers in canonical
  form sorted by name, blank line, body);
- `invoke_endpoint(raw, settings, app_handler=...)` sends `invoke_endpoint` with that request hex-encoded and
  returns an `EndpointCall`: the status and headers, then the body's pieces as they arrive (hex-decoded);
  `request(method, target, ...)` does both;
- the plugin's backwards invocations (`session.app.chat.invoke(...)`) are answered by `app_handler(request)`
  (`request` = {app_id, query, inputs, response_mode, conversation_id, user}), run in its own thread: each dict it
  yields goes back as one `backwards_response` `stream` message, then `end`; an exception becomes the daemon's
  `error` message ("invoke app failed: …").

Models (a tool calling `self.session.model.llm.invoke(...)`): `llm_handler(request)` answers the backwards `llm`
invocation (`request` = {provider, model, model_type, mode, completion_params, prompt_messages, tools, stop,
stream}) with `LLMResultChunk` dicts, each sent as it comes; an exception becomes the daemon's error ("invoke llm
model failed: …" before the first chunk, "read llm model failed: …" after). Given to the process (every session) or
to one call. `start_tool` returns a `ToolCall` whose `stream()` yields the tool's messages as they arrive.
As the daemon does, a type of invocation the manifest's `resource.permission` does not allow is refused with the
daemon's message, and a type no handler answers is answered with an error.
"""

import binascii
import json
import os
import queue
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

AppHandler = Callable[[dict[str, Any]], Iterable[Mapping[str, Any]]]
Handler = AppHandler  # any backwards invocation: its request -> the dicts it answers with
# the daemon's refusals (internal/core/io_tunnel/backwards_invocation/task.go) and error prefixes (…LLMTask)
PERMISSIONS = {
    "app": (("app", "enabled"), "permission denied, you need to enable app access in plugin manifest"),
    "llm": (("model", "llm"), "permission denied, you need to enable llm access in plugin manifest"),
}
FAILED = {
    "app": ("invoke app failed", "invoke app failed"),
    "llm": ("invoke llm model failed", "read llm model failed"),
}  # (before the first chunk, after)

# headers the daemon deletes before forwarding (internal/service/endpoint.go::copyRequest)
DAEMON_DROPPED_HEADERS = (
    "X-Forwarded-For",
    "X-Real-Ip",
    "X-Forwarded",
    "X-Original-Forwarded-For",
    "X-Original-Url",
    "X-Original-Host",
)
GO_USER_AGENT = "Go-http-client/1.1"


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


class EndpointCall(Session):
    """One endpoint request in flight: `status`/`headers` once the head came, then the body as it streams.

    `pieces()` yields each body piece (bytes) as it arrives; `read()` waits for the end and returns the whole body.
    `timeline` holds (seconds since sent, piece) for every piece; `app_requests` every backwards app invocation
    the plugin made for this request; `error` the session error if the plugin failed the request.
    """

    def __init__(self, session_id: str, sent_at: float) -> None:
        super().__init__(session_id, sent_at)
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.timeline: list[tuple[float, bytes]] = []
        self.app_requests: list[dict[str, Any]] = []
        self.handler_errors: list[BaseException] = []
        self._pieces: queue.Queue[bytes | None] = queue.Queue()
        self._head = threading.Event()
        self._over = threading.Event()

    def _message(self, data: dict[str, Any]) -> None:
        self.messages.append(data)
        if "status" in data:
            self.status = int(data["status"])
            self.headers = {str(k): str(v) for k, v in (data.get("headers") or {}).items()}
            self._head.set()
        if data.get("result"):
            piece = binascii.unhexlify(data["result"])
            self.timeline.append((time.perf_counter() - self.sent_at, piece))
            self._pieces.put(piece)

    def _finish(self) -> None:
        self._head.set()
        self._over.set()
        self._pieces.put(None)

    def wait_head(self, timeout: float = 60) -> int | None:
        """The HTTP status (None when the plugin failed the request without one)."""
        if not self._head.wait(timeout):
            raise TimeoutError(f"no response head for {self.session_id} in {timeout:.0f} s")
        return self.status

    def pieces(self, timeout: float = 60) -> Iterator[bytes]:
        """The body's pieces as they arrive; `timeout` is the longest wait for the next one."""
        while True:
            try:
                piece = self._pieces.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"no body piece for {self.session_id} in {timeout:.0f} s") from None
            if piece is None:
                return
            yield piece

    def read(self, timeout: float = 60) -> bytes:
        if not self._over.wait(timeout):
            raise TimeoutError(f"endpoint call {self.session_id} did not end in {timeout:.0f} s")
        return b"".join(piece for _, piece in self.timeline)

    @property
    def text(self) -> str:
        return b"".join(piece for _, piece in self.timeline).decode("utf-8")


class ToolCall(Session):
    """One tool invocation in flight: `stream()` yields its messages as they arrive; `error` once it failed."""

    def __init__(self, session_id: str, sent_at: float) -> None:
        super().__init__(session_id, sent_at)
        self.timeline: list[tuple[float, dict[str, Any]]] = []  # (seconds since sent, message)
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def _message(self, data: dict[str, Any]) -> None:
        self.messages.append(data)
        self.timeline.append((time.perf_counter() - self.sent_at, data))
        self._queue.put(data)

    def _finish(self) -> None:
        self._queue.put(None)

    def stream(self, timeout: float = 60) -> Iterator[dict[str, Any]]:
        """The messages as they arrive, until the call ends (then `error` says whether it failed); `timeout` is the
        longest wait for the next one."""
        while True:
            try:
                message = self._queue.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"no message from tool call {self.session_id} in {timeout:.0f} s") from None
            if message is None:
                return
            yield message


def envelope(session_id: str, event: str, data: Any, endpoint_id: str | None = None) -> dict[str, Any]:
    """One line the daemon writes to the plugin's stdin (a request, or the answer to a backwards call), before JSON."""
    return {
        "session_id": session_id,
        "event": event,
        "conversation_id": None,
        "message_id": None,
        "app_id": None,
        "endpoint_id": endpoint_id,
        "context": {},
        "data": data,
    }


class PluginProcess:
    def __init__(
        self,
        plugin_dir: Path,
        python: str,
        env: dict[str, str] | None = None,
        start_timeout: float = 60,
        llm_handler: Handler | None = None,
    ):
        self._process = subprocess.Popen(
            [python, "-m", "main"],
            cwd=plugin_dir,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "INSTALL_METHOD": "local", **(env or {})},
        )
        self._sessions: dict[str, Session] = {}
        self._handlers: dict[str, dict[str, Handler]] = {}  # session -> invocation type -> handler
        self.llm_handler = llm_handler
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._write_lock = threading.Lock()
        self._manifest: queue.Queue[dict[str, Any] | BaseException] = queue.Queue()
        self._exited = False
        self.stray: list[dict[str, Any]] = []  # events that belong to no session we opened
        self.logs: list[dict[str, Any]] = []  # the plugin's log events (`data`: level, message, timestamp)
        self._stderr: list[bytes] = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        try:
            first = self._manifest.get(timeout=start_timeout)
        except queue.Empty:
            self.close()
            raise TimeoutError(
                f"no output from the plugin in {start_timeout:.0f} s; stderr: {self.stderr[-2000:]}"
            ) from None
        if isinstance(first, BaseException):
            raise first
        self.manifest = first

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

    def send(
        self,
        data: dict[str, Any],
        session_id: str | None = None,
        *,
        endpoint_id: str | None = None,
        app_handler: AppHandler | None = None,
        llm_handler: Handler | None = None,
        call_class: type[Session] = Session,
    ) -> str:
        return self.start(
            data,
            session_id,
            endpoint_id=endpoint_id,
            app_handler=app_handler,
            llm_handler=llm_handler,
            call_class=call_class,
        ).session_id

    def start(
        self,
        data: dict[str, Any],
        session_id: str | None = None,
        *,
        endpoint_id: str | None = None,
        app_handler: AppHandler | None = None,
        llm_handler: Handler | None = None,
        call_class: type[Session] = Session,
    ) -> Session:
        """Send one request; returns its session (a `call_class`). `llm_handler` overrides the process's."""
        session_id = session_id or f"s-{uuid.uuid4().hex[:12]}"
        handlers = {
            kind: handler
            for kind, handler in (("app", app_handler), ("llm", llm_handler or self.llm_handler))
            if handler is not None
        }
        with self._lock:
            if self._exited:
                raise EOFError(f"the plugin exited ({self._process.poll()}); stderr: {self.stderr[-2000:]}")
            session = self._sessions[session_id] = call_class(session_id, time.perf_counter())
            self._handlers[session_id] = handlers
        self._write(envelope(session_id, "request", data, endpoint_id))
        return session

    def invoke_tool(
        self,
        provider: str,
        tool: str,
        parameters: dict[str, Any],
        session_id: str | None = None,
        credentials: Mapping[str, Any] | None = None,
    ) -> str:
        """`credentials`: the provider's credentials as the daemon sends them (none by default)."""
        return self.send(
            {
                "type": "tool",
                "action": "invoke_tool",
                "user_id": "user-1",
                "provider": provider,
                "tool": tool,
                "credentials": dict(credentials or {}),
                "credential_type": "api-key",
                "tool_parameters": parameters,
            },
            session_id,
        )

    def wait(self, session_ids: list[str], timeout: float = 60) -> list[Session]:
        """Wait until every session has ended (or failed); returns them in the order asked."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not all(self._sessions[s].ended_at for s in session_ids):
                remaining = deadline - time.monotonic()
                if self._exited:
                    raise EOFError(f"the plugin exited ({self._process.poll()}); stderr: {self.stderr[-2000:]}")
                if remaining <= 0:
                    missing = [s for s in session_ids if not self._sessions[s].ended_at]
                    raise TimeoutError(
                        f"{len(missing)} session(s) did not end: {missing[:5]}; stderr: {self.stderr[-2000:]}"
                    )
                self._changed.wait(min(remaining, 1.0))
            return [self._sessions[s] for s in session_ids]

    def call_tool(
        self,
        provider: str,
        tool: str,
        parameters: dict[str, Any],
        timeout: float = 60,
        credentials: Mapping[str, Any] | None = None,
    ) -> Session:
        return self.wait([self.invoke_tool(provider, tool, parameters, credentials=credentials)], timeout)[0]

    def start_tool(
        self,
        provider: str,
        tool: str,
        parameters: dict[str, Any],
        *,
        credentials: Mapping[str, Any] | None = None,
        llm_handler: Handler | None = None,
        user_id: str = "user-1",
    ) -> "ToolCall":
        """One tool invocation whose messages stream (`ToolCall.stream()`)."""
        call = self.start(
            {
                "type": "tool",
                "action": "invoke_tool",
                "user_id": user_id,
                "provider": provider,
                "tool": tool,
                "credentials": dict(credentials or {}),
                "credential_type": "api-key",
                "tool_parameters": parameters,
            },
            llm_handler=llm_handler,
            call_class=ToolCall,
        )
        assert isinstance(call, ToolCall)
        return call

    # endpoints

    def invoke_endpoint(
        self,
        raw_http_request: bytes,
        settings: Mapping[str, Any],
        *,
        app_handler: AppHandler | None = None,
        endpoint_id: str = "endpoint-local",
        session_id: str | None = None,
    ) -> EndpointCall:
        """Send one HTTP request to the plugin's endpoints as the daemon does; returns the call in flight."""
        data = {
            "user_id": "",
            "type": "endpoint",
            "action": "invoke_endpoint",
            "raw_http_request": binascii.hexlify(raw_http_request).decode("ascii"),
            "settings": dict(settings),
        }
        session_id = self.send(
            data, session_id, endpoint_id=endpoint_id, app_handler=app_handler, call_class=EndpointCall
        )
        call = self._sessions[session_id]
        assert isinstance(call, EndpointCall)
        return call

    def request(
        self,
        method: str,
        target: str,
        *,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
        body: bytes | str = b"",
        settings: Mapping[str, Any],
        app_handler: AppHandler | None = None,
        host: str = "127.0.0.1",
        hook_id: str = "localhooklocalhk",
    ) -> EndpointCall:
        """`daemon_http_request` + `invoke_endpoint`."""
        raw = daemon_http_request(method, target, headers, body, host=host, hook_id=hook_id)
        return self.invoke_endpoint(raw, settings, app_handler=app_handler)

    # the wire

    def _write(self, payload: dict[str, Any]) -> None:
        line = (json.dumps(payload, ensure_ascii=False) + "\n").encode("utf-8")
        with self._write_lock:
            try:
                self._process.stdin.write(line)
                self._process.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as error:
                raise EOFError(f"the plugin exited ({self._process.poll()}); stderr: {self.stderr[-2000:]}") from error

    def _read_stdout(self) -> None:
        first = True
        for line in self._process.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                with self._lock:
                    self.stray.append({"unparsed": line.decode("utf-8", "replace")})
                continue
            if first:
                first = False
                self._manifest.put(event)
                continue
            self._dispatch(event)
        with self._changed:
            self._exited = True
            for session in self._sessions.values():
                if isinstance(session, (EndpointCall, ToolCall)) and not session.ended_at:
                    session._finish()  # noqa: SLF001 - the process ends the calls it runs
            self._changed.notify_all()
        if first:
            self._manifest.put(EOFError(f"the plugin exited ({self._process.wait()}); stderr: {self.stderr[-2000:]}"))

    def _read_stderr(self) -> None:
        for line in self._process.stderr:
            self._stderr.append(line)

    def _dispatch(self, event: dict[str, Any]) -> None:
        with self._changed:
            session = self._sessions.get(event.get("session_id") or "")
            if event.get("event") == "log":
                self.logs.append(event.get("data") or {})
                return
            if event.get("event") != "session" or session is None:
                if event.get("event") != "heartbeat":
                    self.stray.append(event)
                    self._changed.notify_all()
                return
            data = event.get("data") or {}
            kind = data.get("type")
            if kind == "invoke":
                self._start_backwards(session, data.get("data") or {})
                return
            if kind == "stream":
                if isinstance(session, (EndpointCall, ToolCall)):
                    session._message(data["data"])  # noqa: SLF001 - the process feeds the calls it runs
                else:
                    session.messages.append(data["data"])
            elif kind == "error":
                session.error = data["data"]
                self._end(session)
            elif kind == "end":
                self._end(session)
            self._changed.notify_all()

    @staticmethod
    def _end(session: Session) -> None:
        session.ends += 1
        session.ended_at = session.ended_at or time.perf_counter()
        if isinstance(session, (EndpointCall, ToolCall)):
            session._finish()  # noqa: SLF001 - the process ends the calls it runs

    # backwards invocations

    def _start_backwards(self, session: Session, invoke: dict[str, Any]) -> None:
        request_id = str(invoke.get("backwards_request_id") or "")
        request = invoke.get("request") if isinstance(invoke.get("request"), dict) else {}
        kind = str(invoke.get("type"))
        handler = self._handlers.get(session.session_id, {}).get(kind)
        if isinstance(session, EndpointCall) and kind == "app":
            session.app_requests.append(dict(request))
        threading.Thread(
            target=self._answer_backwards, daemon=True, args=(session, kind, request_id, request, handler)
        ).start()

    def allows(self, kind: str) -> bool:
        """Does the plugin's manifest allow this type of backwards invocation (as the daemon checks)?"""
        if kind not in PERMISSIONS:
            return True
        (group, flag), _ = PERMISSIONS[kind]
        permission = ((self.manifest.get("resource") or {}).get("permission") or {}).get(group) or {}
        return bool(permission.get(flag))

    def _answer_backwards(
        self, session: Session, kind: str, request_id: str, request: dict[str, Any], handler: Handler | None
    ) -> None:
        def respond(event: str, message: str, data: Any) -> None:
            self._write(
                envelope(
                    session.session_id,
                    "backwards_response",
                    {"backwards_request_id": request_id, "event": event, "message": message, "data": data},
                )
            )

        before, after = FAILED.get(kind, (f"invoke {kind} failed", f"invoke {kind} failed"))
        answered = False
        try:
            if not self.allows(kind):
                respond("error", PERMISSIONS[kind][1], None)
                return
            if handler is None:
                raise PermissionError(f"the local daemon answers no {kind!r} invocation here")
            for chunk in handler(request):
                respond("response", "stream", dict(chunk))
                answered = True
        except EOFError:
            return  # the plugin is gone: nobody to answer
        except Exception as error:  # noqa: BLE001 - reported to the plugin as the daemon reports it
            if isinstance(session, EndpointCall):
                session.handler_errors.append(error)
            try:
                respond("error", f"{after if answered else before}: {error}", None)
            except EOFError:
                pass
            return
        try:
            respond("end", "", None)
        except EOFError:
            pass


# --- the raw request, as the daemon forwards it ------------------------------------------------------------------


def canonical_header(name: str) -> str:
    """Go's textproto.CanonicalMIMEHeaderKey: `content-type` → `Content-Type`; names with other bytes unchanged."""
    if not name or any(not (ch.isascii() and (ch.isalnum() or ch in "!#$%&'*+-.^_`|~")) for ch in name):
        return name
    return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))


def go_request_write(method: str, target: str, host: str, headers: Iterable[tuple[str, str]], body: bytes) -> bytes:
    """The bytes of Go's `http.Request.Write` for a request with a known body length."""
    grouped: dict[str, list[str]] = {}
    for name, value in headers:
        grouped.setdefault(canonical_header(name), []).append(value)
    user_agent = grouped.pop("User-Agent", [GO_USER_AGENT])[0]
    for skipped in ("Host", "Content-Length", "Transfer-Encoding", "Trailer"):
        grouped.pop(skipped, None)
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    if user_agent:
        lines.append(f"User-Agent: {user_agent}")
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    for name in sorted(grouped):
        for value in grouped[name]:
            lines.append(f"{name}: {' '.join(value.replace(chr(13), ' ').replace(chr(10), ' ').split())}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body


def daemon_http_request(
    method: str,
    target: str,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    body: bytes | str = b"",
    *,
    host: str = "127.0.0.1",
    hook_id: str = "localhooklocalhk",
    scheme: str = "http",
) -> bytes:
    """What the daemon hands the plugin for `<scheme>://<host>/e/<hook_id><target>` (`target` = path + query)."""
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers)
    body_bytes = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    dropped = {h.lower() for h in DAEMON_DROPPED_HEADERS} | {"dify-hook-id"}
    pairs = [(k, v) for k, v in pairs if k.lower() not in dropped]
    path, _, query = target.partition("?")
    if query:  # Go's url.Values.Encode: sorted by key, form-encoded
        path += "?" + urlencode(sorted(parse_qsl(query, keep_blank_values=True), key=lambda kv: kv[0]))
    pairs.append(("Dify-Hook-Id", hook_id))
    if not any(k.lower() == "dify-hook-url" for k, _ in pairs):
        pairs.append(("Dify-Hook-Url", f"{scheme}://{host}/e/{hook_id}{target.partition('?')[0]}"))
    return go_request_write(method, path, host, pairs, body_bytes)
