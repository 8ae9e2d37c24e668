"""The G-Cite stream protocol: Dify's event stream → the events a front end may see (`ready`, `sources`, `text`,
`cite`, `replace`, `done`, `error`).

The implementation is `endpoints/chat_protocol.py`: the chat endpoint runs inside the plugin package, and `gcite/`
is not packaged (`.difyignore`), so the one translation lives there and is imported here for everything outside
the plugin (`gcite serve`, `gcite.client`, the tests). See that module for the protocol and the API:

- `Translator(source_node=None, snippet_length=300, conversation_handle=None, insufficient_phrases=None)` with
  `ready()`, `feed(dify_event)`, `end()`, `fail(code)` and `finished`, each returning a list of `(name, data)`;
- `translate(dify_events, translator=None, on_problem=None)`: the whole stream, always ending in `done` or `error`;
- `gcite_sse(name, data)` / `parse_gcite_sse(text)`: the wire format; `OPEN_COMMENT`, the first bytes of a response;
- `source_of`, `sources_of`, `safe_url`; the constants `EVENTS`, `SOURCE_KEYS`, `CITATION_KEYS`, `DONE_KEYS`,
  `SUPPORT_CITATION_KEYS`, `SUPPORT_DONE_KEYS`, the error codes and `MESSAGES`.
"""

from endpoints.chat_protocol import (
    APP_ERROR,
    APP_UNAVAILABLE,
    CITATION_KEYS,
    DEFAULT_SNIPPET_LENGTH,
    DONE_KEYS,
    EVENTS,
    INCOMPLETE,
    INTERNAL_ERROR,
    MAX_SNIPPET_LENGTH,
    MESSAGES,
    OPEN_COMMENT,
    SOURCE_KEYS,
    SOURCE_TYPES,
    SUPPORT_CITATION_KEYS,
    SUPPORT_DONE_KEYS,
    AnswerText,
    Event,
    ProtocolError,
    Translator,
    chunk_items,
    error_event,
    gcite_sse,
    parse_gcite_sse,
    safe_url,
    source_of,
    sources_of,
    sse_blocks,
    translate,
)

__all__ = [
    "APP_ERROR",
    "APP_UNAVAILABLE",
    "CITATION_KEYS",
    "DEFAULT_SNIPPET_LENGTH",
    "DONE_KEYS",
    "EVENTS",
    "INCOMPLETE",
    "INTERNAL_ERROR",
    "MAX_SNIPPET_LENGTH",
    "MESSAGES",
    "OPEN_COMMENT",
    "SOURCE_KEYS",
    "SOURCE_TYPES",
    "SUPPORT_CITATION_KEYS",
    "SUPPORT_DONE_KEYS",
    "AnswerText",
    "Event",
    "ProtocolError",
    "Translator",
    "chunk_items",
    "error_event",
    "parse_gcite_sse",
    "safe_url",
    "source_of",
    "sources_of",
    "gcite_sse",
    "sse_blocks",
    "translate",
]
