"""Stand-in for the plugin daemon (a Go program that cannot be built here): only the HTTP calls Dify's api makes
for the G-Cite chatflows, in the shapes `api/core/plugin/impl/` reads (request and answer per call below).

Every answer is the daemon's envelope `{"code": 0, "message": "", "data": ...}`; a streamed call sends one such
envelope per `data:` line. Paths are under `/plugin/{tenant_id}/`, authenticated by `X-Api-Key`
(PLUGIN_DAEMON_KEY); the plugin is named by `X-Plugin-ID`.

- Model provider `langgenius/openai` (the chatflows' `langgenius/openai/openai`, model gpt-4o-mini): listed by
  `management/models`; `dispatch/model/schema`, `dispatch/model/validate_provider_credentials` and
  `dispatch/llm/invoke` (streamed `LLMResultChunk`s of `scripted_llm.answer`) are answered here: the LLM is
  the scripted one, not a model.
- Tool provider `gcite/gcite` (OUR plugin): the declaration is read from the plugin's own YAML
  (provider/gcite.yaml and the tools it lists) as the daemon reads a package; `dispatch/tool/invoke`,
  `validate_credentials` and `get_runtime_parameters` are forwarded to OUR plugin process over stdio
  (`PluginProcess`, the daemon's side of the local protocol), its `stream` messages relayed line by line as they
  arrive, its error as the daemon reports a plugin's error (code -500, `PluginInvokeError` wrapping the plugin's
  error). A tool's backwards model call (`cited_answer`) goes to Dify's real inner API, `POST
  /inner/api/invoke/llm` (the request plus `tenant_id`, `user_id` = the tool call's user, `type` "llm", as
  `dispatchDifyInvocationTask` adds them), whose length-prefixed frames are relayed to the plugin as they come;
  Dify's model manager then calls `dispatch/llm/invoke` here, like an LLM node.
- `management/installation/missing` (the DSL import's dependency check): nothing is missing.
- `/e/{hook_id}/{path}`: the plugin's endpoint, as the daemon serves it: the raw request handed to the plugin
  (`daemon_http_request`), its answer streamed back; the plugin's backwards app invocations go to Dify's real
  inner API, `POST /inner/api/invoke/app` with `X-Inner-Api-Key` (INNER_API_KEY_FOR_PLUGIN), whose
  length-prefixed frames are unpacked and relayed to the plugin as the daemon does.

Any other call is recorded in `unknown` and answered 404, so a test sees a call it does not expect.
"""

import datetime
import json
import struct
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from gcite.local.plugin_process import ToolCall, daemon_http_request
from tests.dify import scripted_llm
from tests.support.local_http import origin, start_server, stop_server
from tests.support.yamltext import safe_load

OPENAI_PLUGIN_ID = "langgenius/openai"
OPENAI_IDENTIFIER = "langgenius/openai:0.3.5@dcc15b5847dbe38c64c2a9fdc1ea2d46466b7028eb4766b251bc363b0eec3af3"
MODEL = "gpt-4o-mini"


def envelope(data: Any) -> dict[str, Any]:
    return {"code": 0, "message": "", "data": data}


def plugin_error(error: Mapping[str, Any]) -> dict[str, Any]:
    """A plugin's session error as the daemon reports it: PluginInvokeError wrapping the plugin's own error."""
    inner = {
        "error_type": error.get("error_type") or "Exception",
        "message": error.get("message") or error.get("error") or "",
        "args": error.get("args"),
    }
    return {
        "code": -500,
        "message": json.dumps({"error_type": "PluginInvokeError", "message": json.dumps(inner)}),
        "data": None,
    }


def i18n(value: Any) -> Any:
    if isinstance(value, dict):
        return {**value, "en_US": value.get("en_US") or next(iter(value.values()), "")}
    return value


def tool_provider_declaration(plugin_dir: Path) -> dict[str, Any]:
    """provider/gcite.yaml and its tools' YAML as the daemon sends a tool provider's declaration (the
    `credentials_for_provider` map becomes the `credentials_schema` list)."""
    provider = safe_load((plugin_dir / "provider" / "gcite.yaml").read_text(encoding="utf-8"))
    credentials = [{"name": name, **spec} for name, spec in (provider.get("credentials_for_provider") or {}).items()]
    tools = []
    for path in provider.get("tools") or []:
        tool = safe_load((plugin_dir / path).read_text(encoding="utf-8"))
        tools.append(
            {
                "identity": {**tool["identity"], "provider": provider["identity"]["name"]},
                "parameters": tool.get("parameters") or [],
                "description": tool.get("description"),
                "output_schema": tool.get("output_schema") or {},
                "has_runtime_parameters": False,
            }
        )
    return {"identity": provider["identity"], "credentials_schema": credentials, "tools": tools}


def model_provider_declaration() -> dict[str, Any]:
    return {
        "provider": "openai",
        "label": {"en_US": "OpenAI"},
        "supported_model_types": ["llm"],
        "configurate_methods": ["predefined-model"],
        "provider_credential_schema": {
            "credential_form_schemas": [
                {"variable": "openai_api_key", "label": {"en_US": "API Key"}, "type": "secret-input", "required": True}
            ]
        },
        "models": [model_schema()],
    }


def model_schema() -> dict[str, Any]:
    return {
        "model": MODEL,
        "label": {"en_US": MODEL},
        "model_type": "llm",
        "fetch_from": "predefined-model",
        "features": [],
        "model_properties": {"mode": "chat", "context_size": 128000},
        "parameter_rules": [
            {
                "name": "temperature",
                "use_template": "temperature",
                "label": {"en_US": "Temperature"},
                "type": "float",
                "min": 0,
                "max": 2,
                "default": 1,
            },
            {
                "name": "max_tokens",
                "use_template": "max_tokens",
                "label": {"en_US": "Max tokens"},
                "type": "int",
                "min": 1,
                "max": 16384,
                "default": 512,
            },
        ],
        "pricing": {"input": "0", "output": "0", "unit": "0.000001", "currency": "USD"},
    }


def empty_usage() -> dict[str, Any]:
    return {
        "prompt_tokens": 0,
        "prompt_unit_price": "0.0",
        "prompt_price_unit": "0.0",
        "prompt_price": "0.0",
        "completion_tokens": 0,
        "completion_unit_price": "0.0",
        "completion_price_unit": "0.0",
        "completion_price": "0.0",
        "total_tokens": 0,
        "total_price": "0.0",
        "currency": "USD",
        "latency": 0.0,
    }


def unpack_frames(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The payloads of Dify's length-prefixed response (libs/helper.py: magic 1 byte, reserved 1, header length 2,
    data length 4, reserved 6, little endian)."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        while len(buffer) >= 14:
            _magic, _reserved, header_length, length = struct.unpack("<BBHI", buffer[:8])
            start = 4 + header_length
            if len(buffer) < start + length:
                break
            yield buffer[start : start + length]
            buffer = buffer[start + length :]
    if buffer:
        raise ValueError(f"{len(buffer)} bytes left over after the last length-prefixed frame")


class Daemon:
    def __init__(
        self, plugin: Any, plugin_dir: Path, *, api_key: str, inner_api_key: str, plugin_identifier: str
    ) -> None:
        """`plugin`: a running `PluginProcess` of OUR plugin."""
        self.plugin = plugin
        self.api_key = api_key
        self.inner_api_key = inner_api_key
        self.inner_api_url = ""  # Dify's own URL, set once it is known
        self.tenant_id = ""  # the workspace whose app the endpoint invokes, set after set-up
        self.plugin_identifier = plugin_identifier
        self.tool_declaration = tool_provider_declaration(plugin_dir)
        self.calls: list[tuple[str, str]] = []  # (method, path without the tenant) of every call
        self.llm_requests: list[dict[str, Any]] = []  # every dispatch/llm/invoke body
        self.tool_requests: list[dict[str, Any]] = []
        self.app_requests: list[dict[str, Any]] = []  # every backwards app invocation of the endpoint
        self.unknown: list[str] = []
        self.script: Any = None  # a test's own answer for the chatflow LLM calls: messages -> text or its pieces
        self.pace = 0.0  # seconds between the streamed pieces of a scripted answer
        self.model_calls: list[dict[str, Any]] = []  # every backwards model call relayed to Dify's inner API
        self.endpoint_settings: dict[str, dict[str, Any]] = {}  # hook id -> the endpoint's settings
        self._lock = threading.Lock()
        daemon = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # a streamed body ends when the connection closes

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                daemon.handle(self, "GET")

            def do_POST(self) -> None:
                daemon.handle(self, "POST")

            def do_OPTIONS(self) -> None:
                daemon.handle(self, "OPTIONS")

        self.server = start_server(Handler)
        self.url = f"{origin(self.server)}"

    def close(self) -> None:
        stop_server(self.server)

    # --- HTTP -----------------------------------------------------------------------------------------------

    def handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        url = urlsplit(h.path)
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        parts = url.path.strip("/").split("/")
        if parts[0] == "e" and len(parts) >= 2:
            return self.endpoint(
                h, method, parts[1], "/" + "/".join(parts[2:]) + (f"?{url.query}" if url.query else ""), body
            )
        if h.headers.get("X-Api-Key") != self.api_key:
            return self.send_json(h, 401, {"code": -401, "message": "unauthorized", "data": None})
        if parts[0] != "plugin" or len(parts) < 3:
            return self.not_found(h, method, url.path)
        path = "/".join(parts[2:])
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        data = json.loads(body) if body else {}
        with self._lock:
            self.calls.append((method, path))
        route = {
            ("GET", "management/models"): lambda: self.send_json(h, 200, envelope(self.model_providers(parts[1]))),
            ("GET", "management/tools"): lambda: self.send_json(h, 200, envelope([self.tool_provider()])),
            ("GET", "management/tool"): lambda: self.tool(h, query),
            ("POST", "management/installation/missing"): lambda: self.send_json(h, 200, envelope([])),
            ("POST", "dispatch/model/schema"): lambda: self.send_stream(
                h, [envelope({"model_schema": model_schema()})]
            ),
            ("POST", "dispatch/model/validate_provider_credentials"): lambda: self.send_stream(
                h, [envelope({"result": True, "credentials": None})]
            ),
            ("POST", "dispatch/model/validate_model_credentials"): lambda: self.send_stream(
                h, [envelope({"result": True, "credentials": None})]
            ),
            ("POST", "dispatch/llm/num_tokens"): lambda: self.send_stream(h, [envelope({"num_tokens": 0})]),
            ("POST", "dispatch/llm/invoke"): lambda: self.llm(h, data),
            ("POST", "dispatch/tool/invoke"): lambda: self.tool_call(h, "invoke_tool", data),
            ("POST", "dispatch/tool/validate_credentials"): lambda: self.tool_call(
                h, "validate_tool_credentials", data
            ),
            ("POST", "dispatch/tool/get_runtime_parameters"): lambda: self.tool_call(
                h, "get_tool_runtime_parameters", data
            ),
        }.get((method, path))
        if route is None:
            return self.not_found(h, method, url.path)
        route()

    def not_found(self, h: BaseHTTPRequestHandler, method: str, path: str) -> None:
        with self._lock:
            self.unknown.append(f"{method} {path}")
        self.send_json(
            h, 404, {"code": -404, "message": f"the stand-in daemon does not serve {method} {path}", "data": None}
        )

    @staticmethod
    def send_json(h: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def send_stream(h: BaseHTTPRequestHandler, events: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.end_headers()
        for event in events:
            h.wfile.write(b"data: " + json.dumps(event, ensure_ascii=False).encode("utf-8") + b"\n\n")
            h.wfile.flush()

    # --- models -----------------------------------------------------------------------------------------------

    def model_providers(self, tenant_id: str) -> list[dict[str, Any]]:
        now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC).isoformat()
        return [
            {
                "id": str(uuid.uuid5(uuid.NAMESPACE_URL, OPENAI_IDENTIFIER)),
                "created_at": now,
                "updated_at": now,
                "provider": "openai",
                "tenant_id": tenant_id,
                "plugin_unique_identifier": OPENAI_IDENTIFIER,
                "plugin_id": OPENAI_PLUGIN_ID,
                "installation_source": "marketplace",
                "declaration": model_provider_declaration(),
            }
        ]

    def llm(self, h: BaseHTTPRequestHandler, data: dict[str, Any]) -> None:
        with self._lock:
            self.llm_requests.append(data)
        request = data.get("data") or {}
        messages = request.get("prompt_messages") or []
        script = self.script if self.script and not scripted_llm.is_title_request(messages) else scripted_llm.answer
        text = script(messages)
        model = request.get("model") or MODEL
        pace = self.pace

        def chunks() -> Iterator[dict[str, Any]]:
            pieces = text if isinstance(text, list) else scripted_llm.pieces(text)
            for index, piece in enumerate(pieces):
                if pace:
                    time.sleep(pace)
                yield envelope(
                    {
                        "model": model,
                        "prompt_messages": [],
                        "delta": {"index": index, "message": {"role": "assistant", "content": piece}},
                    }
                )
            yield envelope(
                {
                    "model": model,
                    "prompt_messages": [],
                    "delta": {
                        "index": len(pieces),
                        "message": {"role": "assistant", "content": ""},
                        "usage": empty_usage(),
                        "finish_reason": "stop",
                    },
                }
            )

        self.send_stream(h, chunks())

    # --- tools (OUR plugin process) -------------------------------------------------------------------------

    def tool_provider(self) -> dict[str, Any]:
        return {
            "provider": "gcite",
            "plugin_unique_identifier": self.plugin_identifier,
            "plugin_id": "gcite/gcite",
            "declaration": json.loads(json.dumps(self.tool_declaration)),
        }

    def tool(self, h: BaseHTTPRequestHandler, query: dict[str, str]) -> None:
        if query.get("plugin_id") != "gcite/gcite" or query.get("provider") != "gcite":
            return self.send_json(
                h,
                200,
                {
                    "code": -404,
                    "message": json.dumps(
                        {"error_type": "PluginNotFoundError", "message": f"tool provider {query} not found"}
                    ),
                    "data": None,
                },
            )
        self.send_json(h, 200, envelope(self.tool_provider()))

    def tool_call(self, h: BaseHTTPRequestHandler, action: str, data: dict[str, Any]) -> None:
        if h.headers.get("X-Plugin-ID") != "gcite/gcite":
            return self.send_stream(
                h,
                [
                    {
                        "code": -404,
                        "message": json.dumps(
                            {
                                "error_type": "PluginNotFoundError",
                                "message": f"plugin {h.headers.get('X-Plugin-ID')} not found",
                            }
                        ),
                        "data": None,
                    }
                ],
            )
        with self._lock:
            self.tool_requests.append({"action": action, **data})
        user_id = data.get("user_id") or ""
        request = {"type": "tool", "action": action, "user_id": user_id, **(data.get("data") or {})}
        call = self.plugin.start(
            request, call_class=ToolCall, llm_handler=lambda invoke: self.invoke_llm(invoke, user_id)
        )

        def events() -> Iterator[dict[str, Any]]:
            for message in call.stream(timeout=300):
                yield envelope(message)
            if call.error is not None:
                yield plugin_error(call.error)

        self.send_stream(h, events())

    # --- the plugin's endpoint --------------------------------------------------------------------------------

    def endpoint(self, h: BaseHTTPRequestHandler, method: str, hook_id: str, target: str, body: bytes) -> None:
        settings = self.endpoint_settings.get(hook_id)
        if settings is None:
            return self.send_json(h, 404, {"code": -404, "message": "endpoint not found", "data": None})
        headers = [(k, v) for k, v in h.headers.items() if k.lower() not in ("host", "content-length", "connection")]
        raw = daemon_http_request(
            method, target, headers, body, host=h.headers.get("Host") or "127.0.0.1", hook_id=hook_id
        )
        call = self.plugin.invoke_endpoint(raw, settings, app_handler=self.invoke_app)
        status = call.wait_head(timeout=120)
        if status is None:
            return self.send_json(
                h, 500, {"code": -500, "message": f"plugin failed the request: {call.error}", "data": None}
            )
        h.send_response(status)
        for name, value in call.headers.items():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                h.send_header(name, value)
        h.end_headers()
        for piece in call.pieces(timeout=240):
            h.wfile.write(piece)
            h.wfile.flush()

    def inner_messages(self, kind: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """`POST /inner/api/invoke/<kind>` on Dify's real inner API: each framed message as it arrives (an HTTP
        status other than 200 is an error)."""
        response = requests.post(
            f"{self.inner_api_url}/inner/api/invoke/{kind}",
            json=body,
            stream=True,
            timeout=240,
            headers={"X-Inner-Api-Key": self.inner_api_key, "Content-Type": "application/json"},
        )
        if response.status_code != 200:
            raise RuntimeError(f"Dify's inner API answered {response.status_code}: {response.text[:500]}")
        for frame in unpack_frames(response.iter_content(chunk_size=None)):
            yield json.loads(frame)

    def invoke_llm(self, request: dict[str, Any], user_id: str) -> Iterator[dict[str, Any]]:
        """A tool's backwards model call, answered by Dify's real inner API (frames relayed as they arrive); an
        error frame fails the read as the daemon's StreamResponse does ("request failed: …")."""
        body = {**request, "tenant_id": self.tenant_id, "user_id": user_id, "type": "llm"}
        with self._lock:
            self.model_calls.append(body)
        for message in self.inner_messages("llm", body):
            if message.get("error"):
                raise RuntimeError(f"request failed: {message['error']}")
            if message.get("data") is None:
                raise RuntimeError("data is nil")
            yield message["data"]

    def invoke_app(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """A backwards app invocation, answered by Dify's real inner API (frames relayed as they arrive)."""
        with self._lock:
            self.app_requests.append(dict(request))
        # the daemon's body: the request plus tenant_id, type and user_id = the session user ("" for endpoints)
        body = {**request, "tenant_id": self.tenant_id, "type": "app", "user_id": ""}
        for message in self.inner_messages("app", body):
            if message.get("error"):
                raise RuntimeError(message["error"])
            if message.get("data") is not None:
                yield message["data"]
