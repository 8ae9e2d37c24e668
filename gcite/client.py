"""A Service API stream consumer, as a front end would write it.

Read `POST /v1/chat-messages` (`response_mode=streaming`) events, take the numbered chunk list from the merge node's
`node_finished` event, pass the `message` deltas through `CitationStream` so markers become display numbers 1, 2, 3
without ever showing half a marker, and end with only the sources actually cited.
"""

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from nodes.validate_citations import CitationStream

MERGE_NODE = "merge"


def parse_sse(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Events from raw SSE lines: `data: {json}` lines; `event: ping` and blank lines are skipped."""
    for line in lines:
        line = line.strip()
        if line.startswith("data:"):
            yield json.loads(line[5:].strip())


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
