"""`gcite.client`: read a cited answer as typed events, from either stream a back end may have.

- The **G-Cite protocol** (`POST /gcite/chat` of the plugin's endpoint, or `gcite serve`): SSE with named events
  `ready`, `sources`, `text`, `cite`, `replace`, `done`, `error` — `gcite_events(lines)`, `chat(url, token, query)`.
- The **raw Dify stream** (`POST /v1/chat-messages`, `response_mode=streaming`, for back ends that call the Service
  API themselves): `dify_events(events)` translates it with `gcite.protocol` (the same module the endpoint uses), so
  the chunk list comes from any `node_finished` whose outputs carry `chunk_metadata`, and the answer's `[C:N]`
  markers become `text` and `cite` events.

Both yield the same `Event` objects. A stream that ends without `done` or `error` (a cut connection) ends with
`Error("incomplete", …)`; `ping`, comments and unknown events are skipped. `collect(events)` folds them into one
JSON-able result. The older `CitedAnswer` (below) is a Service API consumer built directly on `CitationStream`.
"""

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Union

from gcite.protocol import DONE_KEYS, EVENTS, sse_blocks
from nodes.validate_citations import CitationStream

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


Event = Union[Ready, Sources, Text, Cite, Replace, Done, Error]
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
        return Cite(list(data.get("numbers") or []), [str(i) for i in data.get("ids") or []],
                    list(data.get("new") or []))
    if name == "replace":
        return Replace(str(data.get("text", "")))
    if name == "done":
        return Done(str(data.get("status", "")), list(data.get("citations") or []),
                    list(data.get("invalid_ids") or []), str(data.get("conversation") or ""),
                    str(data.get("message_id") or ""), {k: v for k, v in data.items() if k not in DONE_KEYS})
    if name == "error":
        return Error(str(data.get("code") or "error"), str(data.get("message") or ""))
    return None


# --- SSE ----------------------------------------------------------------------------------------------------

class UnreadableEvent(ValueError):
    """A Service API event whose `data:` is not JSON, with more of the stream after it."""


class LocalRunError(Exception):
    """The local runner could not run the chatflow (a DSL it cannot run, a role the pre-filter refuses): the cause,
    in one line, for `gcite chat`'s `error:` line."""


def parse_sse(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
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
        for name, data in protocol.translate(events, protocol.Translator(source_node=merge_node),
                                             on_problem=lambda code, error: problems.append(error)):
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
    """Typed events from SSE lines of either stream: a G-Cite event name, or Dify `data:` objects with an `event` key."""
    iterator = iter(lines)
    head: list[str] = []
    for line in iterator:
        head.append(line)
        stripped = line.strip()
        if stripped.startswith("event:") and stripped[6:].strip() in NAMES:
            return gcite_events(_chain(head, iterator))
        if stripped.startswith("data:"):
            return dify_events(parse_sse(_chain(head, iterator)))
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

    from gcite.local.llm import sse_lines

    try:
        yield from sse_lines(response.iter_content(chunk_size=None))
    except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError, RuntimeError):
        return  # a cut connection or bytes that are not UTF-8: the stream ends here, and `_ended` says so


def _post_stream(url: str, body: dict[str, Any], bearer: str, timeout: float,
                 events: Callable[[Iterator[str]], Iterator[Event]]) -> Iterator[Event]:
    """POST `body` with a bearer token and yield `events(lines)` of the streamed answer; an unreachable server or a
    non-200 answer is one `Error` event."""
    import requests

    try:
        response = requests.post(url, json=body, headers={"Authorization": f"Bearer {bearer}"}, stream=True,
                                 timeout=timeout)
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


def service_api(base_url: str, api_key: str, query: str, inputs: dict[str, Any] | None = None,
                conversation_id: str | None = None, user: str = "gcite-client",
                timeout: float = 300) -> Iterator[Event]:
    """Ask a Dify app through the Service API (`POST {base_url}/chat-messages`, raw stream) and yield the events."""
    body = {"query": query, "inputs": inputs or {}, "response_mode": "streaming", "user": user,
            "conversation_id": conversation_id or ""}
    return _post_stream(base_url.rstrip("/") + "/chat-messages", body, api_key, timeout,
                        lambda lines: dify_events(parse_sse(lines)))


# --- one result ---------------------------------------------------------------------------------------------

def collect(events: Iterable[Event]) -> dict[str, Any]:
    """Fold events into one JSON-able object: the answer text with display numbers, and `done`'s fields; on an error,
    `status` is "error" with `error` {code, message} and no partial answer."""
    text: list[str] = []
    sources: dict[str, dict[str, str]] = {}
    for event in events:
        if isinstance(event, Sources):
            sources = {s.get("id", ""): s for s in event.sources}
        elif isinstance(event, Text):
            text.append(event.text)
        elif isinstance(event, Cite):
            text.append("".join(f"[{n}]" for n in event.numbers))
        elif isinstance(event, Replace):
            text = [event.text]
        elif isinstance(event, Error):
            return {"status": "error", "error": {"code": event.code, "message": event.message}}
        elif isinstance(event, Done):
            return {"status": event.status, "answer": "".join(text), "citations": event.citations,
                    "invalid_ids": event.invalid_ids, "conversation": event.conversation,
                    "message_id": event.message_id, **event.extra}
    return {"status": "error", "error": {"code": "incomplete", "message": INCOMPLETE}}


SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def render(events: Iterable[Event], out: Any, err: Any, show_conversation: bool = True) -> int:
    """Write a cited answer to a terminal as it streams (citations as superscript numbers), then its sources (and the
    conversation to continue, unless `show_conversation` is false). Returns 0, or 1 after an error (the error goes to
    `err`)."""
    wrote = False
    for event in events:
        if isinstance(event, Text):
            out.write(event.text)
            wrote = True
        elif isinstance(event, Cite):
            out.write("˒".join(str(n).translate(SUPERSCRIPT) for n in event.numbers))
            wrote = True
        elif isinstance(event, Replace):
            out.write(("\n" if wrote else "") + "── the answer was replaced ──\n" + event.text)
            wrote = True
        elif isinstance(event, Error):
            if wrote:
                out.write("\n")
            out.flush()
            err.write(f"error ({event.code}): {event.message}\n")
            return 1
        elif isinstance(event, Done):
            out.write("\n")
            if event.status == "insufficient_evidence":
                out.write("(the sources do not answer this question)\n")
            for c in event.citations:
                kind = "web" if c.get("source_type") == "web" else "knowledge base"
                subtitle = f" · {c['display_subtitle']}" if c.get("display_subtitle") else ""
                url = f"  {c['url']}" if c.get("url") else ""
                weak = "  (weak support)" if c.get("weak") is True else ""
                out.write(f"[{c.get('number')}] {c.get('document_title', '')}{subtitle} ({kind}){url}{weak}\n")
            if event.conversation and show_conversation:
                out.write(f"conversation: {event.conversation}\n")
        out.flush()
    return 0


# --- the older Service API consumer (kept for the chatflow demo and tests) -----------------------------------

@dataclass
class CitedAnswer:
    """Consumes events one by one; `on_text` and `on_source` see the display text and sources as they come."""

    on_text: Callable[[str], None] = lambda text: None
    on_source: Callable[[dict[str, Any]], None] = lambda citation: None
    merge_node: str = MERGE_NODE
    chunk_metadata: list[dict[str, Any]] | None = None
    chunk_list_before_answer: bool | None = None
    text: list[str] = field(default_factory=list)
    error: str | None = None
    _stream: CitationStream | None = None
    _done: bool = False

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        data = event.get("data") or {}
        if kind == "node_finished" and data.get("node_id") == self.merge_node and data.get("outputs"):
            self.chunk_metadata = data["outputs"].get("chunk_metadata")
        elif kind == "message" and event.get("answer"):
            if self._stream is None:
                self.chunk_list_before_answer = self.chunk_metadata is not None
                self._stream = CitationStream(self.chunk_metadata)  # None: unknown list (web-app streams)
            self._show(self._stream.feed(event["answer"]))
        elif kind == "message_replace":
            self._stream = CitationStream(self.chunk_metadata)
            self.text = []
            self._show(self._stream.feed(event.get("answer", "")))
        elif kind == "error":
            self.error = event.get("message")
        elif kind == "message_end":
            self.finish()

    def finish(self) -> None:
        if self._stream is not None and not self._done:
            self._done = True
            self._show(self._stream.finish())

    def _show(self, text: str) -> None:
        if text:
            self.text.append(text)
            self.on_text(text)
        for citation in self._stream.new_citations():
            self.on_source(citation)

    @property
    def result(self) -> dict[str, Any]:
        return self._stream.result() if self._stream is not None else {}


# --- python -m gcite chat -----------------------------------------------------------------------------------

def add_chat_arguments(parser: Any) -> None:
    parser.add_argument("query", nargs="?", help="the question (not with --stdin, which reads a recorded answer)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--url", help="a G-Cite chat endpoint: https://<dify>/e/<hook>/gcite/chat, or gcite serve's")
    source.add_argument("--service-api", metavar="URL", help="a Dify Service API base URL (…/v1): the raw stream")
    source.add_argument("--stdin", action="store_true", help="read a recorded stream (either kind) from standard input")
    parser.add_argument("--token", help="with --url: the caller's token (JWT); the roles come from it")
    parser.add_argument("--user", help="with --url of gcite serve, instead of --token: one of its sample users "
                                       "(see its /local/users)")
    parser.add_argument("--api-key", help="with --service-api: the app's API key (default: $GCITE_DIFY_API_KEY)")
    parser.add_argument("--roles", help="the user_roles input, for --service-api and the local run (default: none)")
    parser.add_argument("--conversation", help="with --url or --service-api: continue a conversation (the handle, or "
                                               "Dify's conversation_id)")
    parser.add_argument("--dsl", metavar="plugin|code|PATH",
                        help="the local run's chatflow: plugin (dsl/gcite_chatflow.yml, default), code "
                             "(dsl/gcite_chatflow_code.yml) or a DSL file")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the live answer")
    parser.add_argument("--verbose", action="store_true",
                        help="local run: also print the workflow engine's log records (graphon, dify_plugin) on stderr")


# which options each way of asking takes (the others are refused, never ignored)
MODE_OPTIONS = {
    "--url": ("--token", "--user", "--conversation"),
    "--service-api": ("--api-key", "--roles", "--conversation"),
    "--stdin": (),
    "local": ("--roles", "--dsl", "--verbose"),
}
MODE_HINTS = {
    "--url": {"--roles": "the roles come from the token", "--api-key": "the endpoint takes a token (--token)",
              "--dsl": "the endpoint's app runs its own chatflow"},
    "--stdin": {"--conversation": "a recorded stream is only read"},
    "local": {"--token": "a local run has no endpoint to send it to (use --roles)",
              "--user": "sample users belong to gcite serve (--url … --user)",
              "--api-key": "a local run calls no Service API",
              "--conversation": "local conversations do not persist across invocations (gcite demo --query … "
                                "--query … runs several turns of one conversation)"},
}
OPTION_ATTRS = {"--token": "token", "--user": "user", "--api-key": "api_key", "--roles": "roles",
                "--conversation": "conversation", "--dsl": "dsl", "--verbose": "verbose"}


def usage_problem(args: Any) -> str | None:
    """What is wrong with this combination of options, in one line; None when nothing is."""
    mode = "--url" if args.url else "--service-api" if args.service_api else "--stdin" if args.stdin else "local"
    where = "a local run (no --url, --service-api or --stdin)" if mode == "local" else mode
    for option, attr in OPTION_ATTRS.items():
        value = getattr(args, attr, None)
        if value not in (None, False) and option not in MODE_OPTIONS[mode]:
            hint = MODE_HINTS.get(mode, {}).get(option)
            return f"{option} does not apply to {where}" + (f": {hint}" if hint else "")
    if mode == "--url" and args.token is not None and args.user is not None:
        return "--user and --token both give the caller: use one"
    if mode == "--stdin":
        if args.query is not None:
            return "--stdin reads a recorded answer: give no question"
        return None
    if args.query is None:
        return "the question is missing (python -m gcite chat \"your question\" …)"
    if not args.query.strip():
        return "the question is empty"
    return None


def local_events(query: str, roles: str, dsl: str | None) -> Iterator[Event]:
    """The chatflow run on the local runner (graphon), its raw Dify stream read like a Service API stream. `dsl` is
    the chatflow's text (default: dsl/gcite_chatflow.yml). Web search is answered by the local search server."""
    from gcite.local.dify_rules import DifyRefusal
    from gcite.build.chatflows import PLUGIN_DSL
    from gcite.local.runner import run_chatflow
    from gcite.local.services import local_services

    def run(text: str) -> Iterator[dict[str, Any]]:
        try:
            yield from run_chatflow(text, query, {"user_roles": roles}, services)
        except DifyRefusal as error:
            raise LocalRunError(str(error)) from None
        except Exception as error:  # noqa: BLE001 - a DSL the engine cannot run: its cause in one line
            message = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise LocalRunError(f"{type(error).__name__}: {message}") from None

    with local_services() as services:
        text = dsl if dsl is not None else PLUGIN_DSL.read_text(encoding="utf-8")
        yield from dify_events(run(text))


def sample_user_token(url: str, user: str) -> str:
    """The token `gcite serve` minted for one of its sample users."""
    import requests
    from urllib.parse import urljoin

    users = requests.get(urljoin(url, "/local/users"), timeout=30).json()
    for entry in users:
        if user in (entry.get("id"), entry.get("name")):
            return entry["token"]
    raise ValueError(f"--user: no sample user {user!r}; known: {', '.join(u['id'] for u in users)}")


def local_chatflow(choice: str | None) -> str | None:
    """The text of the local run's chatflow (`plugin`, `code` or a path), checked as `gcite run` checks it; a
    CliError of `gcite.cli.main` when it is not a chatflow."""
    from pathlib import Path

    from gcite.cli.main import load_chatflow
    from gcite.cli.demo import DSL_CHOICES

    if choice is None:
        return None
    return load_chatflow(DSL_CHOICES.get(choice) or Path(choice))


def chat_command(args: Any, stdin: Any, stdout: Any, stderr: Any) -> int:
    import os

    from gcite.cli.main import CliError

    problem = usage_problem(args)
    if problem:
        stderr.write(f"error: {problem}\n")
        return 2
    if args.url:
        token = args.token
        if not token and args.user:
            try:
                token = sample_user_token(args.url, args.user)
            except Exception as error:  # noqa: BLE001 - any failure to get a token is a usage error
                stderr.write(f"error: {error}\n")
                return 2
        if not token:
            stderr.write("error: --url needs --token (or --user with gcite serve)\n")
            return 2
        events = chat(args.url, token, args.query, args.conversation)
    elif args.service_api:
        key = args.api_key or os.environ.get("GCITE_DIFY_API_KEY", "")
        if not key:
            stderr.write("error: --service-api needs --api-key (or $GCITE_DIFY_API_KEY)\n")
            return 2
        events = service_api(args.service_api, key, args.query, {"user_roles": args.roles or ""}, args.conversation)
    elif args.stdin:
        events = sse_events(stdin)
    else:
        try:
            dsl = local_chatflow(args.dsl)
        except CliError as error:
            stderr.write(f"error: {error}\n")
            return 2
        events = local_events(args.query, args.roles or "", dsl)
    try:
        if args.json:
            result = collect(events)
            stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
            return 1 if result["status"] == "error" else 0
        return render(events, stdout, stderr, show_conversation=bool(args.url or args.service_api or args.stdin))
    except LocalRunError as error:
        stdout.flush()
        where = f"{args.dsl}: " if args.dsl and "Error: " in str(error) else ""
        stderr.write(f"error: {where}{error}\n")
        return 2
