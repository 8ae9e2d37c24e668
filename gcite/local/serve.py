"""`python -m gcite serve`: the chat page and the chat endpoint on 127.0.0.1, served as an operator's Dify serves them.

A stand-in for Dify's `/e/<hook>/…` route: each HTTP request under `/e/<hook>/` is encoded as the plugin daemon
encodes it and sent to the real plugin process (`python -m main`) over stdio; the plugin's backwards app invocations
are answered by running the chatflow DSL on the local runner (graphon), and the plugin's streamed response is written
back as it comes. Nothing of the page or the endpoint runs in this process.

It also mints tokens, signed with a secret made at start (or the operator's fixed one, `secret`), for a few sample
users with different roles (and one with none), and lists them at `/local/users`; the page, opened with `#local`,
shows them in a user picker. The built-in stand-in LLM streams at a human pace (`--pace`), so the streaming can be
seen. With a fixed secret the hook is fixed too (derived from it), so the endpoint's URL stays the same across
restarts on one port.

It answers only requests whose `Host` is its own address (127.0.0.1 or localhost with its port; 421 otherwise), so a
web page on another name that resolves to 127.0.0.1 (DNS rebinding) cannot read the tokens; a `Content-Length` that
is not a number is 400, a body over the daemon's 10 MiB 413. Pages on other origins are refused by the endpoint's
`allowed_origins` setting, which holds the page's own origin and the `allow_origins` given (`--allow-origin`); those
origins may also read `/local/users` (CORS), so an app in development can pick a sample user's token.
"""

import hashlib
import hmac
import json
import secrets
import string
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SAMPLE_USERS = (  # `examples`: questions the page offers each user, ones the sample data answers for their roles
    {
        "id": "wang",
        "name": "王经理 Manager Wang",
        "roles": ["物业经理"],
        "examples": {
            "zh": ["冷水机组供水温度设定是多少？", "巡更时发现异常怎么上报？", "电梯困人怎么办？"],
            "en": [
                "What is the chiller's supply water temperature set to?",
                "How do I report an anomaly on patrol?",
                "What do I do when someone is trapped in a lift?",
            ],
        },
    },
    {
        "id": "li",
        "name": "李工 Engineer Li",
        "roles": ["运维工程师"],
        "examples": {
            "zh": ["冷水机组供水温度设定是多少？", "会议室怎么预约？"],
            "en": ["What is the chiller's supply water temperature set to?", "How do I book a meeting room?"],
        },
    },
    {
        "id": "chen",
        "name": "陈前台 Receptionist Chen",
        "roles": ["前台"],
        "examples": {
            "zh": ["访客怎么登记？", "会议室怎么预约？"],
            "en": ["How do I register a visitor?", "How do I book a meeting room?"],
        },
    },
    {
        "id": "guest",
        "name": "访客 Guest",
        "roles": [],
        "examples": {
            "zh": ["会议室怎么预约？", "巡更时发现异常怎么上报？"],
            "en": ["How do I book a meeting room?", "How do I report an anomaly on patrol?"],
        },
    },
)
TOKEN_HOURS = 12
DEFAULT_PORT = 8765
DEFAULT_PACE = 0.06  # seconds between the stand-in model's deltas (4 characters each)
LOCAL_APP_ID = "gcite-local-chatflow"
MAX_BODY_BYTES = 10 * 2**20  # the daemon reads at most 10 MiB of a request body (internal/service/endpoint.go)
READ_TIMEOUT = 30.0  # seconds one socket operation may wait


# --- the model, at a human pace -----------------------------------------------------------------------------


class PacedModel:
    """Wraps a runner LLM: its stream is slowed to `pace` seconds per delta; a question containing `fail_on`
    makes it raise (the chatflow then fails as it does when a model provider is down)."""

    def __init__(self, inner: Any, pace: float = DEFAULT_PACE, fail_on: str | None = None) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_pace", pace)
        object.__setattr__(self, "_fail_on", fail_on)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)

    def invoke_llm(self, *, prompt_messages: Sequence[Any], **kwargs: Any) -> Iterator[Any]:
        from gcite.local.llm import message_text

        last_user = next((m for m in reversed(prompt_messages) if m.role.value == "user"), None)
        if self._fail_on and last_user is not None and self._fail_on in message_text(last_user):
            raise RuntimeError("the model provider is unavailable (simulated by gcite serve --fail-on)")
        chunks = self._inner.invoke_llm(prompt_messages=prompt_messages, **kwargs)
        return self._paced(chunks)

    def _paced(self, chunks: Iterator[Any]) -> Iterator[Any]:
        for chunk in chunks:
            if self._pace > 0:
                time.sleep(self._pace)
            yield chunk


# --- tokens -------------------------------------------------------------------------------------------------


def mint_token(secret: str, sub: str, roles: list[str], hours: float = TOKEN_HOURS) -> str:
    """What an operator's login service does: an HS256 JWT with `sub`, `roles` and `exp`."""
    import jwt

    return jwt.encode({"sub": sub, "roles": roles, "exp": int(time.time() + hours * 3600)}, secret, algorithm="HS256")


def hook_of(secret: str) -> str:
    """The 16 lowercase letters of the endpoint's hook for a fixed secret: the same secret, the same URL (the hook
    tells nothing of the secret: it is an HMAC of a constant under it)."""
    digest = hmac.new(secret.encode("utf-8"), b"gcite serve hook", hashlib.sha256).digest()
    return "".join(string.ascii_lowercase[byte % 26] for byte in digest[:16])


# --- the server ---------------------------------------------------------------------------------------------


class LocalDify:
    """The plugin process, the app the endpoint invokes, the endpoint's settings and the HTTP server."""

    def __init__(
        self,
        port: int = DEFAULT_PORT,
        llm: Any = None,
        pace: float = DEFAULT_PACE,
        dsl_text: str | None = None,
        knowledge_base: dict[str, Any] | None = None,
        fail_on: str | None = None,
        allow_origins: Sequence[str] = (),
        secret: str | None = None,
    ) -> None:
        """`dsl_text`: the chatflow's text (default: the shipped plugin chatflow); `knowledge_base`: the knowledge
        base's data (default: the built-in sample); `allow_origins`: other origins (normalised, as
        `gcite.cli.serve.origin_of` makes them) whose pages may call the endpoint; `secret`: a fixed token signing
        secret (at least 32 bytes), else one made now."""
        from gcite import ROOT
        from gcite.authoring.chatflows import PLUGIN_DSL
        from gcite.local.llm import ExtractiveModel

        self.root = ROOT
        self.secret = secret or secrets.token_urlsafe(32)
        self.hook = hook_of(secret) if secret else "".join(secrets.choice(string.ascii_lowercase) for _ in range(16))
        self.allow_origins = list(dict.fromkeys(allow_origins))
        self.dsl_text = dsl_text if dsl_text is not None else PLUGIN_DSL.read_text(encoding="utf-8")
        self.knowledge_base = knowledge_base
        self.llm = PacedModel(llm or ExtractiveModel(), pace, fail_on)
        self.users = [{**u, "token": mint_token(self.secret, u["id"], u["roles"])} for u in SAMPLE_USERS]
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        self.server.daemon_threads = True
        self.server.local = self  # type: ignore[attr-defined]
        self.port = self.server.server_address[1]
        self._endpoint: Any = None
        self._thread: threading.Thread | None = None

    def own_host(self, host: str | None) -> bool:
        """Whether a request's `Host` names this server: 127.0.0.1 or localhost with its port."""
        names = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        if self.port == 80:
            names |= {"127.0.0.1", "localhost"}
        return (host or "").strip().lower() in names

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/e/{self.hook}"

    @property
    def page_url(self) -> str:
        return f"{self.base}/gcite/#local"

    @property
    def settings(self) -> dict[str, Any]:
        """The endpoint group's settings, as the operator would fill them in Dify."""
        return {
            "app": {"app_id": LOCAL_APP_ID},
            "token_secret": self.secret,
            "allowed_origins": " ".join([f"http://127.0.0.1:{self.port}", *self.allow_origins]),
        }

    def start(self) -> "LocalDify":
        self._endpoint = self._start_endpoint()
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self._endpoint is not None:
            self._endpoint.close()
            self.app.close()
            self.app.services.close()  # the plugin process and the local search server

    # the daemon's part

    def _start_endpoint(self) -> Any:
        from gcite.local.app_host import AppHost, sample_services
        from gcite.local.plugin_process import PluginProcess

        overrides: dict[str, Any] = {"llm": self.llm}
        if self.knowledge_base is not None:
            overrides["knowledge_base"] = self.knowledge_base
        self.app = AppHost(self.dsl_text, sample_services(**overrides), app_id=LOCAL_APP_ID)
        return PluginProcess(self.root, sys.executable)

    def forward(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes, host: str | None = None
    ) -> tuple[int, dict[str, str], Iterator[bytes]]:
        """One request to the plugin, as the daemon sends it (for `host`, the name it was sent to); its status,
        headers and body pieces as they come."""
        call = self._endpoint.request(
            method,
            target,
            headers=headers,
            body=body,
            settings=self.settings,
            app_handler=self.app,
            host=host or f"127.0.0.1:{self.port}",
            hook_id=self.hook,
        )
        status = call.wait_head(timeout=60)
        if status is None:
            raise RuntimeError(f"the plugin failed the request: {call.error}")
        return status, call.headers, call.pieces(timeout=300)


class _Handler(BaseHTTPRequestHandler):
    server_version = "gcite-serve"
    protocol_version = "HTTP/1.0"  # one request per connection; a streamed body ends when the connection closes
    timeout = READ_TIMEOUT  # a client that stops sending mid-request frees its thread

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the URL is printed once at start
        pass

    @property
    def local(self) -> LocalDify:
        return self.server.local  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        self._route()

    def do_HEAD(self) -> None:
        self._route()

    def do_POST(self) -> None:
        self._route()

    def do_OPTIONS(self) -> None:
        self._route()

    def do_PUT(self) -> None:
        self._route()

    def do_DELETE(self) -> None:
        self._route()

    def _route(self) -> None:
        path = self.path.split("?", 1)[0]
        prefix = f"/e/{self.local.hook}"
        if not self.local.own_host(self.headers.get("Host")):
            # a page on another name that resolves here (DNS rebinding) must not read the sample tokens
            self._plain(
                421,
                f"gcite serve answers only http://127.0.0.1:{self.local.port} and http://localhost:{self.local.port}\n",
                {"Content-Type": "text/plain; charset=utf-8"},
            )
            return
        if path == "/" and self.command == "GET":
            self._plain(302, "", {"Location": f"{prefix}/gcite/#local"})
        elif path == "/local/users" and self.command == "GET":
            users = [{k: u[k] for k in ("id", "name", "roles", "token", "examples")} for u in self.local.users]
            headers = {"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store", "Vary": "Origin"}
            origin = (self.headers.get("Origin") or "").strip()
            if origin and origin.rstrip("/").lower() in self.local.allow_origins:  # an app given with --allow-origin
                headers["Access-Control-Allow-Origin"] = origin
            self._plain(200, json.dumps(users, ensure_ascii=False), headers)
        elif self.path.startswith(prefix + "/"):
            body = self._body()
            if body is not None:
                self._forward(self.path[len(prefix) :], body)
        else:
            self._plain(404, "404 page not found\n", {"Content-Type": "text/plain; charset=utf-8"})

    def _body(self) -> bytes | None:
        """The request body, or None when it was refused with 400/411/413 (a Content-Length that is not a number, a
        body the daemon would not take)."""
        text = "text/plain; charset=utf-8"
        if self.headers.get("Transfer-Encoding"):
            self._plain(411, "send the body with a Content-Length\n", {"Content-Type": text})
            return None
        values = self.headers.get_all("Content-Length") or []
        if len(set(values)) > 1 or any(not v.strip().isdigit() or not v.strip().isascii() for v in values):
            self._plain(400, "Content-Length must be one whole number of bytes\n", {"Content-Type": text})
            return None
        length = int(values[0]) if values else 0
        if length > MAX_BODY_BYTES:
            self._plain(
                413,
                f"the body is over {MAX_BODY_BYTES // 2**20} MiB, the most Dify's plugin daemon reads\n",
                {"Content-Type": text},
            )
            return None
        try:
            body = self.rfile.read(length) if length else b""
        except OSError:  # the client stopped sending for READ_TIMEOUT seconds, or went away
            self.close_connection = True
            return None
        if len(body) < length:
            self._plain(400, "the body ended before its Content-Length\n", {"Content-Type": text})
            return None
        return body

    def _forward(self, path: str, body: bytes) -> None:
        try:
            status, headers, chunks = self.local.forward(
                self.command, path, dict(self.headers.items()), body, host=self.headers["Host"].strip().lower()
            )
        except Exception as error:  # noqa: BLE001 - what the daemon answers when the plugin fails
            print(f"gcite serve: the plugin failed: {type(error).__name__}: {error}", file=sys.stderr)
            self._plain(500, "Internal Server Error\n", {"Content-Type": "text/plain; charset=utf-8"})
            return
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        self.end_headers()
        try:
            for chunk in chunks:
                if self.command != "HEAD":
                    self.wfile.write(chunk)
                    self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away

    def _plain(self, status: int, text: str, headers: Mapping[str, str]) -> None:
        data = text.encode("utf-8")
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
