"""A readable view of a chatflow's Service API stream (`python -m gcite run --pretty`, `make demo`).

Shows, as the events arrive: the numbered chunk list (from the first `node_finished` whose outputs carry a
`chunk_metadata` list, i.e. the merge node, whatever its id), the LLM's answer as it streams with every `[C:N]`
marker turned into display numbers by `gcite.protocol.Translator` (never half a marker), then only the sources the
answer cited, renumbered 1, 2, 3, and the run's status.
"""

from typing import Any, TextIO

from gcite.protocol import ProtocolError, Translator

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
    """Feed it the runner's (or Dify's) stream events one by one; call `finish()` at the end.

    The answer is read by `gcite.protocol.Translator`, the one consumer of Dify's stream (the endpoint and the client
    use it too), so `--pretty` shows what a front end shows; this class only lays it out for a terminal, and reads the
    node events for the chunk table, the validator's status and the errors."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.translator = Translator()
        self.chunks: list[dict[str, Any]] | None = None
        self.chunk_node = ""
        self.chunk_list_before_answer: bool | None = None
        self.answering = False
        self.sources: list[dict[str, Any]] = []
        self.validator: dict[str, Any] | None = None
        self.done: dict[str, Any] | None = None
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
                self.write(
                    f"-- node_finished({self.chunk_node}): {len(self.chunks)} numbered chunks, "
                    f"before the first token --\n{table(self.chunks)}\n"
                )
            if isinstance(outputs.get("status"), str) and isinstance(outputs.get("citations"), list):
                self.validator = outputs
            if data.get("status") == "failed" and data.get("error"):
                self.errors.append(f"node {data.get('title') or data.get('node_id')}: {data['error']}")
        elif kind == "workflow_finished":
            self.workflow_status = data.get("status", "")
            if data.get("error"):
                self.errors.append(f"workflow: {data['error']}")
        elif kind == "error":
            self.errors.append(f"{event.get('code', 'error')}: {event.get('message', '')}")
        try:
            translated = self.translator.feed(event)
        except ProtocolError as error:
            self.errors.append(f"chunk list: {error}")
            translated = self.translator.fail(error.code)
        self.show(translated)

    def show(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        text = ""
        for name, data in events:
            if name in ("text", "cite", "replace") and not self.answering:
                self.answering = True
                self.chunk_list_before_answer = self.chunks is not None
                if name != "replace":
                    self.write("\n-- answer, as it streams (markers shown as display numbers) --\n")
            if name == "text":
                text += data["text"]
            elif name == "cite":
                text += "".join(f"[{n}]" for n in data["numbers"])
                by_id = {s["id"]: s for s in self.translator.sources or []}
                self.sources += [
                    {**by_id[i], "index": n} for n, i in zip(data["numbers"], data["ids"]) if n in data["new"]
                ]
            elif name == "replace":
                self.sources, self.held, text = [], "", ""
                self.write("\n-- the answer was replaced --\n")
                self.write_answer(data["text"])
            elif name == "done":
                self.done = data
        self.write_answer(text)

    def write_answer(self, text: str) -> None:
        text = self.held + text  # trailing line breaks wait for more text (the Answer node's separator never shows)
        body = text.rstrip("\n")
        self.held = text[len(body) :]
        if body:
            self.write(body)

    def finish(self) -> dict[str, Any]:
        """Prints the cited sources and the status; returns {"status", "sources", "errors"}."""
        if self.answering and self.done is None:
            self.show(self.translator.end())
        self.write("\n\n-- cited sources (only those the answer used, renumbered) --\n")
        for source in self.sources:
            url = source.get("url") or ""  # http(s) only (safe_url): internal storage URLs stay hidden
            self.write(
                f"[{source['index']}] {source['document_title']} · {source['display_subtitle']} "
                f"({source['source_type']}, chunk {source['id']}){' ' + url if url else ''}\n"
            )
        if not self.sources:
            self.write("(none)\n")
        status = (self.validator or {}).get("status") or (self.done or {}).get("status", "")
        shown: set[str] = set()
        for error in self.errors:  # a node's failure is also the workflow's and the stream's: say it once
            detail = error.split(": ", 1)[-1]
            if detail not in shown:
                shown.add(detail)
                self.write(f"error: {error}\n")
        self.write(
            f"status: {status or 'no answer'}; chunk list before answer: {self.chunk_list_before_answer}"
            f"{'; workflow ' + self.workflow_status if self.workflow_status else ''}\n"
        )
        return {"status": status, "sources": self.sources, "errors": self.errors}
