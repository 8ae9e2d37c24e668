"""The G-Cite stream protocol: Dify's chatflow event stream in, the events a front end may see out.

This is the one translation from Dify's event stream (the Service API's `data:` objects, or the dicts a plugin's
backwards app invocation yields: the same shapes, `ping` excepted) into the G-Cite protocol. The chat endpoint
(`endpoints/chat.py`), `gcite serve` and `gcite.client` all use it; outside the plugin it is imported as
`gcite.protocol`. It ships in the plugin package, so it uses the standard library and the validator node only.

The protocol (SSE; each event is `event: <name>` + `data: <one JSON object>`):

- `ready`    `{}`, at once;
- `sources`  `{"sources": [S, ...]}` before the first `text`: the chunk list the answer may cite. S has exactly the
             keys of `SOURCE_KEYS`, all strings; `url` is http(s) or ""; `snippet` is the chunk's text cut at the
             snippet length;
- `text`     `{"text": ...}` answer text, never a marker or part of one;
- `cite`     `{"numbers": [...], "ids": [...], "new": [...]}` a citation at this point of the text;
- `replace`  `{"text": ...}` Dify's `message_replace`: drop what was shown for this answer, show this text;
- `done`     `{"status", "citations": [C, ...], "invalid_ids", "conversation", "message_id"}` (+ the validator's
             support flags when it provides them: per citation `support`, `weak`, and why a weak one is weak,
             `reasons` [{"kind", …}] and `reason` (one line)); C = {"number", "id", "count"} + the keys of S;
- `error`    `{"code", "message"}` ends the stream; the message is safe to show, details stay in the log.

Nothing else of Dify's stream passes: no node's inputs or outputs, except the chunk list's whitelisted fields and
the LLM's answer text. The shipped chatflow's Answer node appends the validator's reference list (raw markers)
after the LLM's text; that list is not passed on as text (its content is in `sources` and `done`), see
`AnswerText` and `citations.answer_layout`, where the template, the list and this rule are named once. The support
flags in `done` are the validate node's own (its `node_finished`), when the chatflow has one that covers every
citation; else they are computed here.

A chatflow whose answer is written by the `cited_answer` tool is read the same way, never by parsing its HTML: its
readers send the chatflow's `citation_style` input `markers` (`citations.answer_layout.machine_inputs`), so the
tool streams canonical `[C:id]` markers of known chunks (each whole) and no list; the citation stream here numbers
them as the tool did, and `done` takes the rest from the tool's `node_finished` outputs: its support flags, its
`status` (`model_error` when the model failed after text was shown) and the unknown ids it dropped (`invalid_ids`).
"""

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from citations.answer_layout import CITED_MEMORY, SOURCE_LIST
from citations.stream import CitationStream

EVENTS = ("ready", "sources", "text", "cite", "replace", "done", "error")
SOURCE_KEYS = (
    "id",
    "source_type",
    "document_title",
    "display_subtitle",
    "site_name",
    "published_date",
    "url",
    "snippet",
)
CITATION_KEYS = ("number", "id", "count") + SOURCE_KEYS
SUPPORT_CITATION_KEYS = ("support", "weak", "reasons", "reason")  # per citation, when the validator provides them
SUPPORT_DONE_KEYS = ("uncited_sentences", "citation_recall_proxy", "citation_precision_proxy")
DONE_KEYS = ("status", "citations", "invalid_ids", "conversation", "message_id")
SOURCE_TYPES = ("rag", "web")
DEFAULT_SNIPPET_LENGTH = 300
MAX_SNIPPET_LENGTH = 5000
OPEN_COMMENT = ": open\n\n"  # sent before `ready`: the daemon sends the HTTP head only with the first body piece
LLM_NODE_TYPES = ("llm",)

# error codes (`error` events and the endpoint's JSON errors share them)
APP_ERROR = "app_error"  # the chatflow reported an error, or its chunk list is malformed
APP_UNAVAILABLE = "app_unavailable"  # the app invocation itself failed (daemon, permission, timeout)
INCOMPLETE = "incomplete"  # the app's stream ended without message_end
INTERNAL_ERROR = "internal_error"  # anything else that went wrong while answering
MESSAGES = {
    APP_ERROR: "The assistant could not answer this question. 助手无法回答这个问题。",
    APP_UNAVAILABLE: "The assistant is not available right now. 助手暂时不可用。",
    INCOMPLETE: "The answer was cut off before it was complete. 回答在完成前中断了。",
    INTERNAL_ERROR: "Something went wrong while answering. 回答时出现了错误。",
}

Event = tuple[str, dict[str, Any]]


class ProtocolError(Exception):
    """A failure to report as an `error` event: `code` is one of the codes above; the text is for the log only."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code


# --- wire format ----------------------------------------------------------------------------------------------


def gcite_sse(event: str, data: Mapping[str, Any]) -> str:
    """One event on the wire: `event: <name>\\ndata: <JSON on one line>\\n\\n`."""
    if event not in EVENTS:
        raise ValueError(f"event: {event!r} is not a G-Cite protocol event")
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n"


def sse_blocks(text: str | Iterable[str]) -> Iterator[tuple[str | None, str]]:
    """(event name or None, data text) of each event in SSE text (or its lines); comments skipped."""
    lines = text.splitlines() if isinstance(text, str) else (line.rstrip("\r\n") for line in text)
    name, data = None, []
    for line in lines:
        if line == "":
            if data:
                yield name, "\n".join(data)
            name, data = None, []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield name, "\n".join(data)


def parse_gcite_sse(text: str | Iterable[str]) -> Iterator[Event]:
    """(name, data) of each named event in SSE text (or its lines), data decoded as JSON; nameless events skipped."""
    for name, data in sse_blocks(text):
        if name is not None:
            yield name, json.loads(data)


def error_event(code: str) -> Event:
    return "error", {"code": code, "message": MESSAGES.get(code, MESSAGES[INTERNAL_ERROR])}


# --- sources ----------------------------------------------------------------------------------------------------


def safe_url(value: Any) -> str:
    """`value` when it is an absolute http(s) URL with a host and no whitespace or control character, else ""."""
    if not isinstance(value, str):
        return ""
    url = value.strip()
    if not url or any(ord(ch) < 33 or ord(ch) == 127 for ch in url):
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return ""
    return url


def _text(value: Any) -> str:
    if value is None or isinstance(value, (dict, list)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def source_of(chunk: Mapping[str, Any], snippet_length: int = DEFAULT_SNIPPET_LENGTH) -> dict[str, str]:
    """The whitelisted view of one chunk: exactly `SOURCE_KEYS`, all strings."""
    return {
        "id": _text(chunk.get("id")).strip(),
        "source_type": _text(chunk.get("source_type")),
        "document_title": _text(chunk.get("document_title")),
        "display_subtitle": _text(chunk.get("display_subtitle")),
        "site_name": _text(chunk.get("site_name")),
        "published_date": _text(chunk.get("published_date")),
        "url": safe_url(chunk.get("url")),
        "snippet": _text(chunk.get("content"))[:snippet_length],
    }


def chunk_items(value: Any) -> list[dict[str, Any]]:
    """The chunk list (a list, or JSON text of one) as a list of objects; anything else raises ProtocolError."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ProtocolError(APP_ERROR, "chunk_metadata: not valid JSON") from None
    if not isinstance(value, list):
        raise ProtocolError(APP_ERROR, f"chunk_metadata: expected a list, got {type(value).__name__}")
    for position, chunk in enumerate(value):
        if not isinstance(chunk, Mapping):
            raise ProtocolError(APP_ERROR, f"chunk_metadata[{position}]: expected an object")
    return [dict(chunk) for chunk in value]


def sources_of(value: Any, snippet_length: int = DEFAULT_SNIPPET_LENGTH) -> list[dict[str, str]]:
    """The chunk list as sources, in its order; a malformed list raises ProtocolError(app_error)."""
    return sources_of_items(chunk_items(value), snippet_length)


def sources_of_items(items: list[dict[str, Any]], snippet_length: int = DEFAULT_SNIPPET_LENGTH) -> list[dict[str, str]]:
    """`sources_of` over a list `chunk_items` already read (the chunk list is parsed once per answer)."""
    sources, seen = [], set()
    for position, chunk in enumerate(items):
        source = source_of(chunk, snippet_length)
        if re.fullmatch("[0-9]{1,9}", source["id"]):
            source["id"] = str(int(source["id"]))  # as the validator numbers it: "01" is chunk 1
        else:
            raise ProtocolError(APP_ERROR, f"chunk_metadata[{position}]: id {source['id']!r} is not a number")
        if source["id"] in seen:
            raise ProtocolError(APP_ERROR, f"chunk_metadata[{position}]: id {source['id']!r} is not a new number")
        if source["source_type"] not in SOURCE_TYPES:
            raise ProtocolError(
                APP_ERROR,
                f"chunk_metadata[{position}]: source_type {source['source_type']!r} "
                f"is not one of {', '.join(SOURCE_TYPES)}",
            )
        seen.add(source["id"])
        sources.append(source)
    return sources


# --- which `message` deltas are the answer ----------------------------------------------------------------------


def has_node(event: Mapping[str, Any]) -> bool:
    """Does a `message` event say which node's variable it shows (`from_variable_selector`)?"""
    selector = event.get("from_variable_selector")
    return isinstance(selector, (list, tuple)) and bool(selector) and isinstance(selector[0], str)


class AnswerText:
    """Decides which `message` deltas are answer text, and which are what the Answer node appends after it.

    An Answer node may show more than the LLM's text: the shipped chatflows append the validator's reference list
    (`{{#llm.text#}}` + blank line + `{{#validate.references_by_marker_markdown#}}`), with raw `[C:N]` markers,
    for clients of the raw stream. Rule: text up to and including the LLM's is answer text; what follows the LLM's
    text is the appended part and is dropped. The LLM's text is known to be over when
    - (with `from_variable_selector`, which Dify sends with every `message`) text from an LLM node has been shown
      and a delta comes from any other node (an LLM node is known from its `node_started`, `node_type` "llm"), or
    - (with or without it) an LLM node finishes whose output `text` is what has been shown so far, or its start
      (the literal text after it in the template may come before the LLM's `node_finished`). An LLM whose output
      is not the shown text (a query rewriter, say) is not the answer's and changes nothing.
    Deltas from an LLM node are always answer text. Without `from_variable_selector`, whitespace between the LLM's
    text and the appended part may pass as text (it shows as nothing).
    """

    def __init__(self) -> None:
        self.llm_nodes: set[str] = set()
        self.llm_text_started = False
        self.over = False
        self._shown: list[str] = []
        self._held: list[str] = []

    def node_event(self, kind: str, data: Mapping[str, Any]) -> None:
        if data.get("node_type") not in LLM_NODE_TYPES or not isinstance(data.get("node_id"), str):
            return
        self.llm_nodes.add(data["node_id"])
        outputs = data.get("outputs")
        if kind == "node_finished" and isinstance(outputs, Mapping) and isinstance(outputs.get("text"), str):
            if "".join(self._shown).startswith(outputs["text"]):
                self.over = True

    def take(self, event: Mapping[str, Any]) -> str:
        """The answer text this `message` event adds now ("" for none). Whitespace from a node that is not an LLM
        (the template's blank line before an appended list) is held back until more answer text follows."""
        delta = event["answer"]
        has_selector = has_node(event)
        from_llm = has_selector and event["from_variable_selector"][0] in self.llm_nodes
        if from_llm:
            self.llm_text_started = True
        elif self.over or (self.llm_text_started and has_selector):
            return ""
        self._shown.append(delta)
        if has_selector and not from_llm and not delta.strip():
            self._held.append(delta)
            return ""
        text = "".join(self._held) + delta
        self._held = []
        return text


# --- the translation --------------------------------------------------------------------------------------------


class Translator:
    """One answer: feed it Dify's events in order, send what it returns.

    `ready()` first, then `feed(event)` per Dify event, then `end()` when Dify's stream ends (an `error` if it ended
    without `message_end`), or `fail(code)` when the stream cannot go on. After `done` or `error` it returns nothing
    more (`finished`). Raises ProtocolError(app_error) for a malformed chunk list; `translate` turns that into `error`.

    Options: `source_node` — take the chunk list only from this node's `node_finished` (default: the first
    `node_finished` whose outputs carry a `chunk_metadata` list); `snippet_length` — characters of chunk text per
    source; `conversation_handle` — maps Dify's conversation_id to the handle sent in `done` (default: the id
    itself); `insufficient_phrases` — passed to the validator (default: its own).
    """

    def __init__(
        self,
        *,
        source_node: str | None = None,
        snippet_length: int = DEFAULT_SNIPPET_LENGTH,
        conversation_handle: Callable[[str], str] | None = None,
        insufficient_phrases: str | list[str] | None = None,
    ) -> None:
        if (
            isinstance(snippet_length, bool)
            or not isinstance(snippet_length, int)
            or not (0 <= snippet_length <= MAX_SNIPPET_LENGTH)
        ):
            raise ValueError(f"snippet_length: expected a whole number 0..{MAX_SNIPPET_LENGTH}, got {snippet_length!r}")
        self.source_node = source_node or None
        self.snippet_length = snippet_length
        self.conversation_handle = conversation_handle or (lambda conversation_id: conversation_id)
        self.phrases = insufficient_phrases
        self.sources: list[dict[str, str]] | None = None
        self.chunks: list[dict[str, Any]] = []
        self.answer = AnswerText()
        self.early: list[str] = []  # answer text shown before the chunk list and before the LLM's (see `feed`)
        self.stream: CitationStream | None = None
        self.held_cite: dict[str, list[Any]] | None = None  # the citation shown once text follows (see `_pieces`)
        self.replaced = False
        self.validated: Mapping[str, Any] | None = None  # the validate node's outputs (its support check's results)
        self.cited: Mapping[str, Any] | None = None  # a cited_answer node's outputs (it wrote the answer)
        self.conversation_id = ""
        self.message_id = ""
        self.finished = False

    # public

    def ready(self) -> list[Event]:
        return [("ready", {})]

    def feed(self, event: Mapping[str, Any]) -> list[Event]:
        if self.finished or not isinstance(event, Mapping):
            return []
        kind = event.get("event")
        if isinstance(event.get("conversation_id"), str) and event["conversation_id"]:
            self.conversation_id = event["conversation_id"]
        if isinstance(event.get("message_id"), str) and event["message_id"]:
            self.message_id = event["message_id"]
        data = event.get("data") if isinstance(event.get("data"), Mapping) else {}
        if kind in ("node_started", "node_finished"):
            self.answer.node_event(kind, data)
            if kind == "node_finished":
                self._validate_outputs(data)
                return self._chunk_list(data)
            return []
        if kind == "message":
            if not isinstance(event.get("answer"), str) or not event["answer"] or self.replaced:
                return []
            text = self.answer.take(event)
            if not text:
                return []
            if self.sources is None and not self.answer.llm_text_started and has_node(event):
                # an Answer template's own text before the LLM's ("Answer: {{#llm.text#}}") streams at once, before
                # the retrieval has run: it waits for the chunk list (or the LLM's text, or the end), so that
                # `sources` still comes first and the answer can cite
                self.early.append(text)
                return []
            out = self._sources_first()
            return out + self._pieces(self._citation_stream().feed_pieces(self._early() + text))
        if kind == "message_replace":
            return self._replace(event.get("answer"))
        if kind == "workflow_finished" and data.get("status") in ("failed", "stopped"):
            return self.fail(APP_ERROR)
        if kind == "error":
            return self.fail(APP_ERROR)
        if kind == "message_end":
            if isinstance(event.get("id"), str) and event["id"]:
                self.message_id = event["id"]
            return self._done()
        return []  # ping, workflow events, files, tts, agent logs, unknown events: nothing passes

    def end(self) -> list[Event]:
        """Dify's stream is over: an `error` unless `done` (or an `error`) was already sent."""
        return [] if self.finished else self.fail(INCOMPLETE)

    def fail(self, code: str) -> list[Event]:
        if self.finished:
            return []
        self.finished = True
        return self._cite_held() + [error_event(code)]

    # parts

    def _chunk_list(self, data: Mapping[str, Any]) -> list[Event]:
        if self.sources is not None:
            return []
        outputs = data.get("outputs")
        if not isinstance(outputs, Mapping) or "chunk_metadata" not in outputs:
            return []
        if self.source_node is not None and data.get("node_id") != self.source_node:
            return []
        if self.source_node is None and not isinstance(outputs["chunk_metadata"], list):
            return []
        self.chunks = chunk_items(outputs["chunk_metadata"])
        self.sources = sources_of_items(self.chunks, self.snippet_length)
        out: list[Event] = [("sources", {"sources": [dict(s) for s in self.sources]})]
        early = self._early()
        return out + (self._pieces(self._citation_stream().feed_pieces(early)) if early else [])

    def _validate_outputs(self, data: Mapping[str, Any]) -> None:
        """Keep the outputs of a validate node (it lists the sources, `SOURCE_LIST`, and its citations) or of a
        `cited_answer` node (its citations, status and dropped ids, next to `answer_without_markers`; no list)."""
        outputs = data.get("outputs")
        if not isinstance(outputs, Mapping) or not isinstance(outputs.get("citations"), list):
            return
        if SOURCE_LIST in outputs:
            self.validated = outputs
        elif (
            data.get("node_type") == "tool"
            and isinstance(outputs.get(CITED_MEMORY), str)
            and isinstance(outputs.get("status"), str)
        ):
            self.validated = self.cited = outputs

    def _support_flags(self, citations: list[dict[str, Any]]) -> dict[str, Mapping[str, Any]] | None:
        """The validate node's citations by id, when they cover every one of `citations` and carry the flags."""
        if self.validated is None:
            return None
        by_id = {c.get("id"): c for c in self.validated["citations"] if isinstance(c, Mapping) and c.get("id")}
        if all(c["id"] in by_id and all(key in by_id[c["id"]] for key in SUPPORT_CITATION_KEYS) for c in citations):
            return by_id
        return None

    def _early(self) -> str:
        """The held early text, once."""
        text, self.early = "".join(self.early), []
        return text

    def _sources_first(self) -> list[Event]:
        if self.sources is not None:
            return []
        self.sources = []  # no chunk list came before the answer: nothing may be cited
        return [("sources", {"sources": []})]

    def _citation_stream(self) -> CitationStream:
        if self.stream is None:
            self.stream = self._new_stream()
        return self.stream

    def _new_stream(self) -> CitationStream:
        # the validator sees the chunks the sources came from (its support check reads their text); no list = empty
        chunks = [{**chunk, "id": source["id"]} for chunk, source in zip(self.chunks, self.sources or [])]
        if self.phrases is None:
            return CitationStream(chunks)
        return CitationStream(chunks, self.phrases)

    def _pieces(self, pieces: list[dict[str, Any]]) -> list[Event]:
        """The validator's pieces as events. Markers with no text between them (`[C:1][C:3]`, as the prompt asks
        for several sources) are one `cite`, like `[C:1,3]`: a citation is held until text follows or the answer
        ends (`_cite_held`), so the split into deltas never changes the events."""
        out: list[Event] = []
        for piece in pieces:
            if piece["type"] == "text" and piece["text"]:
                out += self._cite_held()
                out.append(("text", {"text": piece["text"]}))
            elif piece["type"] == "cite":
                held = self.held_cite or {"numbers": [], "ids": [], "new": []}
                pairs = dict(zip(held["numbers"], held["ids"])) | dict(zip(piece["numbers"], piece["ids"]))
                self.held_cite = {
                    "numbers": sorted(pairs),
                    "ids": [pairs[n] for n in sorted(pairs)],
                    "new": sorted({*held["new"], *piece["new"]}),
                }
        return out

    def _cite_held(self) -> list[Event]:
        cite, self.held_cite = self.held_cite, None
        return [("cite", cite)] if cite else []

    def _replace(self, answer: Any) -> list[Event]:
        out = self._sources_first()
        self.early = []  # the replacement is the whole answer
        self.held_cite = None
        self.replaced = True
        self.stream = self._new_stream()
        pieces = self.stream.feed_pieces(answer if isinstance(answer, str) else "") + self.stream.finish_pieces()
        return out + [("replace", {"text": "".join(p["text"] for p in pieces if p["type"] == "text")})]

    def _done(self) -> list[Event]:
        out = self._sources_first()
        stream = self._citation_stream()
        early = self._early()
        out += self._pieces((stream.feed_pieces(early) if early else []) + stream.finish_pieces())
        out += self._cite_held()
        result = stream.result(support=False)
        flags = self._support_flags(result["citations"])
        if flags is None:  # no validate node covers them: the check runs here
            result = stream.result()
        else:
            result.update({key: self.validated[key] for key in SUPPORT_DONE_KEYS if key in self.validated})
        by_id = {source["id"]: source for source in self.sources or []}
        citations = []
        for citation in result["citations"]:
            cited = {
                "number": citation["index"],
                "id": citation["id"],
                "count": citation["count"],
                **by_id[citation["id"]],
            }
            checked = citation if flags is None else flags[citation["id"]]
            for key in SUPPORT_CITATION_KEYS:
                if key in checked:
                    cited[key] = checked[key]
            citations.append(cited)
        status, invalid_ids = result["status"], list(result["invalid_ids"])
        if self.cited is not None:  # the tool dropped the unknown ids before they streamed, and knows a model failure
            dropped = self.cited.get("invalid_ids")
            invalid_ids = list(
                dict.fromkeys(
                    invalid_ids + [str(i) for i in dropped if isinstance(i, (str, int))]
                    if isinstance(dropped, list)
                    else invalid_ids
                )
            )
            if self.cited["status"] == "model_error":
                status = "model_error"
        done = {
            "status": status,
            "citations": citations,
            "invalid_ids": invalid_ids,
            "conversation": self.conversation_handle(self.conversation_id) if self.conversation_id else "",
            "message_id": self.message_id,
        }
        for key in SUPPORT_DONE_KEYS:
            if key in result:
                done[key] = result[key]
        self.finished = True
        return out + [("done", done)]


def translate(
    events: Iterable[Mapping[str, Any]],
    translator: Translator | None = None,
    on_problem: Callable[[str, BaseException], None] | None = None,
) -> Iterator[Event]:
    """The whole protocol stream for one answer: `ready`, …, and always a last `done` or `error`.

    `events` is Dify's stream (e.g. the generator of a backwards app invocation): an exception while getting the
    next event becomes `error` app_unavailable; a malformed chunk list `error` app_error; any other exception while
    translating `error` internal_error. `on_problem(code, exception)` is told each of these (for the log); the
    exception's text never goes into the stream. Stops reading (and closes `events`) once the answer is finished.
    """
    translator = translator or Translator()
    yield from translator.ready()
    iterator = iter(events)
    try:
        while not translator.finished:
            try:
                event = next(iterator)
            except StopIteration:
                yield from translator.end()
                return
            except Exception as error:  # noqa: BLE001 - the app invocation failed
                _tell(on_problem, APP_UNAVAILABLE, error)
                yield from translator.fail(APP_UNAVAILABLE)
                return
            try:
                out = translator.feed(event)
            except ProtocolError as error:
                _tell(on_problem, error.code, error)
                out = translator.fail(error.code)
            except Exception as error:  # noqa: BLE001 - never a traceback into the stream
                _tell(on_problem, INTERNAL_ERROR, error)
                out = translator.fail(INTERNAL_ERROR)
            yield from out
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            try:
                close()
            except Exception:  # noqa: BLE001 - closing the upstream is best effort
                pass


def _tell(on_problem: Callable[[str, BaseException], None] | None, code: str, error: BaseException) -> None:
    if on_problem is not None:
        try:
            on_problem(code, error)
        except Exception:  # noqa: BLE001 - logging must not break the stream
            pass
