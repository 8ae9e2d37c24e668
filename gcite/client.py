"""`gcite.client`: read a cited answer as typed events, from either stream a back end may have.

- The **G-Cite protocol** (`POST /gcite/chat` of the plugin's endpoint, or `gcite serve`): SSE with named events
  `ready`, `sources`, `text`, `cite`, `replace`, `done`, `error` — `gcite_events(lines)`, `chat(url, token, query)`.
- The **raw Dify stream** (`POST /v1/chat-messages`, `response_mode=streaming`, for back ends that call the Service
  API themselves): `dify_events(events)` translates it with `gcite.protocol` (the same module the endpoint uses), so
  the chunk list comes from any `node_finished` whose outputs carry `chunk_metadata`, and the answer's `[C:N]`
  markers become `text` and `cite` events.

Both yield the same `Event` objects. A stream that ends without `done` or `error` (a cut connection) ends with
`Error("incomplete", …)`; `ping`, comments and unknown events are skipped. `collect(events)` folds them into one
JSON-able result.
"""

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gcite.protocol import DONE_KEYS, EVENTS, sse_blocks
from gcite.sse import sse_lines

MERGE_NODE = "merge"
INCOMPLETE = "the connection closed before the answer was complete"


# --- typed events -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ready:
    pass


@dataclass(frozen=True)
class Sources:
    sources: list[dict[str, str]]


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Cite:
    numbers: list[int]
    ids: list[str]
    new: list[int]


@dataclass(frozen=True)
class Replace:
    text: str


@dataclass(frozen=True)
class Done:
    status: str
    citations: list[dict[str, Any]]
    invalid_ids: list[str]
    conversation: str
    message_id: str
    extra: dict[str, Any] = field(default_factory=dict)  # uncited_sentences and the proxies, when present


@dataclass(frozen=True)
class Error:
    code: str
    message: str


Event = Ready | Sources | Text | Cite | Replace | Done | Error
NAMES = EVENTS  # the G-Cite protocol's events


def to_event(name: str, data: dict[str, Any]) -> Event | None:
    """One protocol event as a typed event; None for names this client does not know (skipped)."""
    if name == "ready":
        return Ready()
    if name == "sources":
        return Sources(list(data.get("sources") or []))
    if name == "text":
        return Text(str(data.get("text", "")))
    if name == "cite":
        return Cite(
            list(data.get("numbers") or []), [str(i) for i in data.get("ids") or []], list(data.get("new") or [])
        )
    if name == "replace":
        return Replace(str(data.get("text", "")))
    if name == "done":
        return Done(
            str(data.get("status", "")),
            list(data.get("citations") or []),
            list(data.get("invalid_ids") or []),
            str(data.get("conversation") or ""),
            str(data.get("message_id") or ""),
            {k: v for k, v in data.items() if k not in DONE_KEYS},
        )
    if name == "error":
        return Error(str(data.get("code") or "error"), str(data.get("message") or ""))
    return None


# --- SSE ----------------------------------------------------------------------------------------------------


class UnreadableEvent(ValueError):
    """A Service API event whose `data:` is not JSON, with more of the stream after it."""


class LocalRunError(Exception):
    """The local runner could not run the chatflow (a DSL it cannot run, a role the pre-filter refuses): the cause,
    in one line, for `gcite chat`'s `error:` line."""


def parse_dify_sse(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The Service API's events (its `data:` JSON objects); `event: ping` and comments are skipped. A last event cut
    before its end (a cut connection) ends the stream there; an unreadable event with more after it raises
    UnreadableEvent."""
    blocks = iter(sse_blocks(lines))
    for name, data in blocks:
        if name == "ping":
            continue
        try:
            event = json.loads(data)
        except ValueError:
            if next(blocks, None) is None:
                return  # the connection was cut inside this event: the stream is incomplete
            raise UnreadableEvent("the server sent an unreadable event") from None
        yield event


def _ended(events: Iterator[Event]) -> Iterator[Event]:
    """Stops at `done` or `error`; a stream ending before either ends with Error("incomplete")."""
    for event in events:
        yield event
        if isinstance(event, (Done, Error)):
            return
    yield Error("incomplete", INCOMPLETE)


def gcite_events(lines: Iterable[str]) -> Iterator[Event]:
    """Typed events from the G-Cite protocol's SSE lines."""

    def typed() -> Iterator[Event]:
        for name, data in sse_blocks(lines):
            if name in NAMES:
                try:
                    payload = json.loads(data)
                except ValueError:
                    yield Error("bad_stream", f"the server sent an unreadable {name} event")
                    return
                event = to_event(name, payload if isinstance(payload, dict) else {})
                if event is not None:
                    yield event

    return _ended(typed())


def dify_events(events: Iterable[dict[str, Any]], merge_node: str | None = None) -> Iterator[Event]:
    """Typed events from the raw Dify stream (Service API event dicts), translated by `gcite.protocol`."""
    from gcite import protocol

    problems: list[BaseException] = []

    def typed() -> Iterator[Event]:
        for name, data in protocol.translate(
            events, protocol.Translator(source_node=merge_node), on_problem=lambda code, error: problems.append(error)
        ):
            problem = problems[-1] if problems else None
            if name == "error" and isinstance(problem, LocalRunError):
                raise problem
            if name == "error" and isinstance(problem, UnreadableEvent):
                yield Error("bad_stream", str(problem))
                continue
            event = to_event(name, data)
            if event is not None:
                yield event

    return _ended(typed())


def sse_events(lines: Iterable[str]) -> Iterator[Event]:
    """Typed events from SSE lines of either stream: a G-Cite event name, or Dify `data:` objects with an `event`
    key."""
    iterator = iter(lines)
    head: list[str] = []
    for line in iterator:
        head.append(line)
        stripped = line.strip()
        if stripped.startswith("event:") and stripped[6:].strip() in NAMES:
            return gcite_events(_chain(head, iterator))
        if stripped.startswith("data:"):
            return dify_events(parse_dify_sse(_chain(head, iterator)))
    return gcite_events(head)


def _chain(head: list[str], rest: Iterator[str]) -> Iterator[str]:
    yield from head
    yield from rest


# --- HTTP ---------------------------------------------------------------------------------------------------


def _http_error(response: Any) -> Error:
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    code = str(body.get("code") or f"http_{response.status_code}")
    return Error(code, str(body.get("message") or f"the server answered {response.status_code}"))


def _lines(response: Any) -> Iterator[str]:
    """The body's lines: UTF-8, split at LF only (U+2028 and other Unicode line separators in the JSON are text)."""
    import requests

    try:
        yield from sse_lines(response.iter_content(chunk_size=None))
    except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError, RuntimeError):
        return  # a cut connection or bytes that are not UTF-8: the stream ends here, and `_ended` says so


def _post_stream(
    url: str, body: dict[str, Any], bearer: str, timeout: float, events: Callable[[Iterator[str]], Iterator[Event]]
) -> Iterator[Event]:
    """POST `body` with a bearer token and yield `events(lines)` of the streamed answer; an unreachable server or a
    non-200 answer is one `Error` event."""
    import requests

    try:
        response = requests.post(
            url, json=body, headers={"Authorization": f"Bearer {bearer}"}, stream=True, timeout=timeout
        )
    except requests.RequestException as error:
        yield Error("connection", f"cannot reach {url}: {type(error).__name__}")
        return
    with response:
        if response.status_code != 200:
            yield _http_error(response)
            return
        response.encoding = "utf-8"
        yield from events(_lines(response))


def chat(url: str, token: str, query: str, conversation: str | None = None, timeout: float = 300) -> Iterator[Event]:
    """Ask the G-Cite endpoint (`https://<dify>/e/<hook>/gcite/chat`, or `gcite serve`'s) and yield its events."""
    body: dict[str, Any] = {"query": query}
    if conversation:
        body["conversation"] = conversation
    return _post_stream(url, body, token, timeout, gcite_events)


def service_api(
    base_url: str,
    api_key: str,
    query: str,
    inputs: dict[str, Any] | None = None,
    conversation_id: str | None = None,
    user: str = "gcite-client",
    timeout: float = 300,
) -> Iterator[Event]:
    """Ask a Dify app through the Service API (`POST {base_url}/chat-messages`, raw stream) and yield the events."""
    body = {
        "query": query,
        "inputs": inputs or {},
        "response_mode": "streaming",
        "user": user,
        "conversation_id": conversation_id or "",
    }
    return _post_stream(
        base_url.rstrip("/") + "/chat-messages",
        body,
        api_key,
        timeout,
        lambda lines: dify_events(parse_dify_sse(lines)),
    )


# --- one result ---------------------------------------------------------------------------------------------


def collect(events: Iterable[Event]) -> dict[str, Any]:
    """Fold events into one JSON-able object: the answer text with display numbers, and `done`'s fields; on an error,
    `status` is "error" with `error` {code, message} and no partial answer."""
    text: list[str] = []
    for event in events:
        if isinstance(event, Text):
            text.append(event.text)
        elif isinstance(event, Cite):
            text.append("".join(f"[{n}]" for n in event.numbers))
        elif isinstance(event, Replace):
            text = [event.text]
        elif isinstance(event, Error):
            return {"status": "error", "error": {"code": event.code, "message": event.message}}
        elif isinstance(event, Done):
            return {
                "status": event.status,
                "answer": "".join(text),
                "citations": event.citations,
                "invalid_ids": event.invalid_ids,
                "conversation": event.conversation,
                "message_id": event.message_id,
                **event.extra,
            }
    return {"status": "error", "error": {"code": "incomplete", "message": INCOMPLETE}}
