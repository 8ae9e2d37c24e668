"""Helpers (no tests) for the chat endpoint's tests: tokens, requests through the plugin process, canned Dify streams,
and the protocol's shape checks."""

import base64
import json
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import jwt

from gcite.local.plugin_process import EndpointCall, PluginProcess
from gcite.protocol import (
    CITATION_KEYS,
    DONE_KEYS,
    EVENTS,
    OPEN_COMMENT,
    SOURCE_KEYS,
    SUPPORT_CITATION_KEYS,
    SUPPORT_DONE_KEYS,
    parse_gcite_sse,
    safe_url,
)

SECRET = "endpoint-test-secret-0123456789-abcdefghij"
ORIGIN = "https://chat.example.com"
SETTINGS = {
    "app": {"app_id": "app-gcite"},
    "token_secret": SECRET,
    "allowed_origins": f"{ORIGIN}, https://Other.Example.org/",
    "snippet_length": "300",
}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def token(
    sub: str = "alice",
    roles: Iterable[str] | None = ("前台",),
    exp_in: float = 600,
    secret: str = SECRET,
    algorithm: str = "HS256",
    **claims: Any,
) -> str:
    payload: dict[str, Any] = {"sub": sub, "exp": int(time.time() + exp_in), **claims}
    if roles is not None:
        payload["roles"] = list(roles)
    return raw_token(payload, secret, algorithm)


def raw_token(payload: Mapping[str, Any], secret: str = SECRET, algorithm: str = "HS256") -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyJWT warns about a key shorter than HS512's hash
        return jwt.encode(dict(payload), secret, algorithm=algorithm)


def unsigned_token(payload: Mapping[str, Any]) -> str:
    """An `alg: none` token: header and payload, empty signature."""
    header = b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return f"{header}.{b64(json.dumps(dict(payload)).encode())}."


def post(
    plugin: PluginProcess,
    body: Any,
    *,
    bearer: str | None = None,
    headers: Mapping[str, str] | None = None,
    handler: Any = None,
    settings: Mapping[str, Any] = SETTINGS,
) -> EndpointCall:
    raw = body if isinstance(body, (bytes, str)) else json.dumps(body, ensure_ascii=False)
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if bearer is not None:
        all_headers["Authorization"] = f"Bearer {bearer}"
    return plugin.request("POST", "/gcite/chat", headers=all_headers, body=raw, settings=settings, app_handler=handler)


def events_of(call: EndpointCall, timeout: float = 120) -> list[tuple[str, dict[str, Any]]]:
    call.read(timeout)
    return list(parse_gcite_sse(call.text))


def answer_text(events: list[tuple[str, dict[str, Any]]]) -> str:
    return "".join(data["text"] for name, data in events if name == "text")


# --- canned Dify streams ------------------------------------------------------------------------------------------


def chunk(n: int, text: str, *, source_type: str = "rag", title: str = "", url: str = "", **extra: Any) -> dict:
    return {
        "id": str(n),
        "source_type": source_type,
        "content": text,
        "document_title": title or f"title {n}",
        "url": url,
        "score": 0.5,
        "display_subtitle": f"subtitle {n}",
        "document_name": f"doc-{n}.md",
        "dataset_name": "kb",
        "site_name": "",
        "site_host": "",
        "source_file_url": url,
        "segment_position": n,
        "published_date": "",
        "dataset_id": "ds-secret-id",
        "document_id": f"doc-id-{n}",
        "segment_id": f"seg-id-{n}",
        "provider": "",
        **extra,
    }


def envelope(event: str, conversation: str = "conv-1", message: str = "msg-1", **body: Any) -> dict:
    return {
        "event": event,
        "conversation_id": conversation,
        "message_id": message,
        "created_at": 1760000000,
        "task_id": "task-1",
        **body,
    }


def node(event: str, node_id: str, node_type: str, outputs: dict | None = None, **kw: Any) -> dict:
    data = {
        "id": f"exec-{node_id}",
        "node_id": node_id,
        "node_type": node_type,
        "title": node_id,
        "inputs": {"user_roles": '["前台"]', "sys.user_id": "shared-end-user"},
        "outputs": outputs,
        "status": "succeeded",
    }
    return envelope(event, workflow_run_id="run-1", data=data, **kw)


def dify_stream(
    deltas: Iterable[str],
    chunks: list[dict],
    *,
    conversation: str = "conv-1",
    message: str = "msg-1",
    references: str = "- [C:1] title 1",
    end: bool = True,
    selectors: bool = True,
) -> list[dict]:
    """A chatflow's Service API stream: merge node, LLM deltas, the Answer node's appended reference list, end."""

    def msg(answer: str, selector: list[str]) -> dict:
        body = {"id": message, "answer": answer}
        if selectors:
            body["from_variable_selector"] = selector
        return envelope("message", conversation, message, **body)

    events = [
        envelope("workflow_started", conversation, message, data={"inputs": {"user_roles": '["前台"]'}}),
        node("node_started", "merge", "tool", conversation=conversation, message=message),
        node(
            "node_finished",
            "merge",
            "tool",
            {"chunk_metadata": chunks, "formatted_chunks": "[C:1]\nsecret", "skipped": []},
            conversation=conversation,
            message=message,
        ),
        node("node_started", "llm", "llm", conversation=conversation, message=message),
    ]
    events += [msg(delta, ["llm", "text"]) for delta in deltas]
    events += [
        msg("\n\n", ["answer", "answer"]),
        node("node_finished", "llm", "llm", {"text": "".join(deltas)}, conversation=conversation, message=message),
        msg(references, ["validate", "references_by_marker_markdown"]),
        node(
            "node_finished",
            "validate",
            "tool",
            {"references_by_marker_markdown": references},
            conversation=conversation,
            message=message,
        ),
        envelope("workflow_finished", conversation, message, data={"status": "succeeded", "outputs": {}}),
    ]
    if end:
        events.append(envelope("message_end", conversation, message, id=message, metadata={"usage": {}}))
    return events


class Canned:
    """An app handler answering every invocation with `stream(request)` (a list of events, or the events of a
    callable), `pause` seconds between events; records the requests. `fail_after`: raise after that many events."""

    def __init__(self, stream: Any, pause: float = 0.0, fail_after: int | None = None) -> None:
        self.stream, self.pause, self.fail_after = stream, pause, fail_after
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        with self._lock:
            self.requests.append(request)
        events = self.stream(request) if callable(self.stream) else self.stream
        for n, event in enumerate(events):
            if self.fail_after is not None and n == self.fail_after:
                raise ConnectionError("read app failed: upstream closed")
            if self.pause:
                time.sleep(self.pause)
            yield event


# --- the protocol's shape -----------------------------------------------------------------------------------------


def assert_protocol(raw: str, events: list[tuple[str, dict[str, Any]]]) -> None:
    """Only documented events and fields, in the documented order; every URL http(s) or empty."""
    assert raw.startswith(OPEN_COMMENT)
    names = [name for name, _ in events]
    assert names[0] == "ready" and events[0][1] == {}
    assert set(names) <= set(EVENTS), names
    assert names[-1] in ("done", "error") and names.count("done") + names.count("error") == 1, names
    if "text" in names or "cite" in names:
        assert "sources" in names
        first = min(names.index(n) for n in ("text", "cite") if n in names)
        assert names.index("sources") < first
    assert names.count("sources") <= 1
    for name, data in events:
        if name == "sources":
            assert set(data) == {"sources"}
            for source in data["sources"]:
                assert tuple(source) == SOURCE_KEYS and all(isinstance(v, str) for v in source.values()), source
                assert safe_url(source["url"]) == source["url"]
        elif name in ("text", "replace"):
            assert set(data) == {"text"} and isinstance(data["text"], str)
        elif name == "cite":
            assert set(data) == {"numbers", "ids", "new"}
            assert data["numbers"] == sorted(data["numbers"]) and len(data["ids"]) == len(data["numbers"])
            assert set(data["new"]) <= set(data["numbers"])
        elif name == "done":
            assert set(DONE_KEYS) <= set(data) <= set(DONE_KEYS) | set(SUPPORT_DONE_KEYS), data.keys()
            assert data["status"] in ("cited", "uncited", "insufficient_evidence")
            for n, citation in enumerate(data["citations"], start=1):
                assert set(CITATION_KEYS) <= set(citation) <= set(CITATION_KEYS) | set(SUPPORT_CITATION_KEYS)
                assert citation["number"] == n and safe_url(citation["url"]) == citation["url"]
        elif name == "error":
            assert set(data) == {"code", "message"} and data["code"] and data["message"]
        elif name == "ready":
            assert data == {}
