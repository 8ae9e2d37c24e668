"""A readable view of a chatflow's Service API stream (`python -m gcite run --pretty`, `make demo`).

Shows, as the events arrive: the numbered chunk list (from the first `node_finished` whose outputs carry a
`chunk_metadata` list, i.e. the merge node, whatever its id), the LLM's answer as it streams with every `[C:N]`
marker turned into display numbers by `CitationStream` (never half a marker), then only the sources the answer
cited, renumbered 1, 2, 3, and the run's status.
"""

from typing import Any, TextIO

from nodes.validate_citations import CitationStream

TABLE_COLUMNS = ("id", "source_type", "score", "document_title", "display_subtitle")


def width(text: str) -> int:
    return sum(2 if ord(ch) > 0x2E7F else 1 for ch in text)  # CJK characters take two columns


def table(rows: list[dict[str, Any]], columns: tuple[str, ...] = TABLE_COLUMNS) -> str:
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([width(c)] + [width(r[i]) for r in cells]) for i, c in enumerate(columns)]

    def line(values) -> str:
        return " | ".join(v + " " * (w - width(v)) for v, w in zip(values, widths)).rstrip()

    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells])


class PrettyPrinter:
    """Feed it the runner's (or Dify's) stream events one by one; call `finish()` at the end."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.chunks: list[dict[str, Any]] | None = None
        self.chunk_node = ""
        self.chunk_list_before_answer: bool | None = None
        self.stream: CitationStream | None = None
        self.llm_done = False  # after the LLM node, the Answer node streams its raw-marker source list: not shown
        self.sources: list[dict[str, Any]] = []
        self.validator: dict[str, Any] | None = None
        self.workflow_status = ""
        self.errors: list[str] = []
        self.held = ""

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        data = event.get("data") or {}
        outputs = data.get("outputs") or {}
        if kind == "node_finished":
            if self.chunks is None and isinstance(outputs.get("chunk_metadata"), list):
                self.chunks, self.chunk_node = outputs["chunk_metadata"], data.get("node_id", "")
                self.write(f"-- node_finished({self.chunk_node}): {len(self.chunks)} numbered chunks, "
                           f"before the first token --\n{table(self.chunks)}\n")
            if data.get("node_type") == "llm":
                self.llm_done = True
            if isinstance(outputs.get("status"), str) and isinstance(outputs.get("citations"), list):
                self.validator = outputs
            if data.get("status") == "failed" and data.get("error"):
                self.errors.append(f"node {data.get('title') or data.get('node_id')}: {data['error']}")
        elif kind == "message" and event.get("answer") and not self.llm_done:
            if self.stream is None:
                self.chunk_list_before_answer = self.chunks is not None
                self.stream = CitationStream(self.chunks)
                self.write("\n-- answer, as it streams (markers shown as display numbers by CitationStream) --\n")
            self.show(self.stream.feed(event["answer"]))
        elif kind == "message_replace":
            self.stream = CitationStream(self.chunks)
            self.sources, self.held = [], ""
            self.write("\n-- the answer was replaced --\n")
            self.show(self.stream.feed(event.get("answer", "")))
        elif kind == "workflow_finished":
            self.workflow_status = data.get("status", "")
            if data.get("error"):
                self.errors.append(f"workflow: {data['error']}")
        elif kind == "error":
            self.errors.append(f"{event.get('code', 'error')}: {event.get('message', '')}")

    def show(self, text: str) -> None:
        text = self.held + text  # trailing line breaks wait for more text (the Answer node's separator never shows)
        body = text.rstrip("\n")
        self.held = text[len(body):]
        if body:
            self.write(body)
        if self.stream is not None:
            self.sources += self.stream.new_citations()

    def finish(self) -> dict[str, Any]:
        """Prints the cited sources and the status; returns {"status", "sources", "errors"}."""
        if self.stream is not None:
            self.show(self.stream.finish())
        self.write("\n\n-- cited sources (only those the answer used, renumbered) --\n")
        for source in self.sources:
            url = source.get("url") or ""
            url = url if url.lower().startswith(("http://", "https://")) else ""  # internal storage URLs stay hidden
            self.write(f"[{source['index']}] {source['document_title']} · {source['display_subtitle']} "
                       f"({source['source_type']}, chunk {source['id']}){' ' + url if url else ''}\n")
        if not self.sources:
            self.write("(none)\n")
        status = (self.validator or {}).get("status") or (self.stream.result()["status"] if self.stream else "")
        shown: set[str] = set()
        for error in self.errors:  # a node's failure is also the workflow's and the stream's: say it once
            detail = error.split(": ", 1)[-1]
            if detail not in shown:
                shown.add(detail)
                self.write(f"error: {error}\n")
        self.write(f"status: {status or 'no answer'}; chunk list before answer: {self.chunk_list_before_answer}"
                   f"{'; workflow ' + self.workflow_status if self.workflow_status else ''}\n")
        return {"status": status, "sources": self.sources, "errors": self.errors}
