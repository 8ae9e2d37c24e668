"""`make demo`: the G-Cite chatflow on the built-in building-assistant data, run on graphon, shown as a client sees it."""

import sys
from typing import TextIO

from gcite.client import CitedAnswer
from gcite.dsl_build import PLUGIN_DSL
from gcite.llm import EXTRACTIVE_LABEL
from gcite.runner import Conversation, Services, run_chatflow

DEMO_TURNS = ("巡更时发现异常怎么上报？", "会议室怎么预约？")
DEMO_ROLES = "物业经理"
TABLE_COLUMNS = ("id", "source_type", "score", "document_title", "display_subtitle")
SAMPLE_SEARCH_KEY = "tvly-local-sample-key"  # the sample search needs a key to be set, like the real plugin


def table(rows: list[dict], columns: tuple[str, ...]) -> str:
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([_width(c)] + [_width(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = [_row(columns, widths), _row(["-" * w for w in widths], widths)]
    lines += [_row(r, widths) for r in cells]
    return "\n".join(lines)


def _width(text: str) -> int:
    return sum(2 if ord(ch) > 0x2E7F else 1 for ch in text)  # CJK characters take two columns


def _row(cells, widths) -> str:
    return " | ".join(c + " " * (w - _width(c)) for c, w in zip(cells, widths)).rstrip()


def run(out: TextIO = sys.stdout) -> None:
    services = Services(tool_credentials={"langgenius/tavily:": {"tavily_api_key": SAMPLE_SEARCH_KEY}})
    conversation = Conversation()
    out.write(f"Chatflow: {PLUGIN_DSL.name} on graphon (Dify's workflow engine); user_roles = {DEMO_ROLES}\n")
    out.write(f"LLM: {EXTRACTIVE_LABEL}\n")
    try:
        for turn, query in enumerate(DEMO_TURNS, start=1):
            show_turn(turn, query, services, conversation, out)
    finally:
        services.close()


def show_turn(turn: int, query: str, services: Services, conversation: Conversation, out: TextIO) -> None:
    out.write(f"\n===== turn {turn}: {query}\n")
    sources: list[dict] = []
    client = CitedAnswer(on_text=lambda text: (out.write(text), out.flush()), on_source=sources.append)
    for event in run_chatflow(PLUGIN_DSL.read_text(encoding="utf-8"), query, {"user_roles": DEMO_ROLES},
                              services, conversation):
        if event["event"] == "message" and client.chunk_list_before_answer is None:
            out.write("\n-- answer, as it streams (markers shown as display numbers by CitationStream) --\n")
        client.feed(event)
        if event["event"] == "node_finished" and event["data"]["node_id"] == client.merge_node:
            chunks = event["data"]["outputs"]["chunk_metadata"]
            out.write(f"-- node_finished(merge): {len(chunks)} numbered chunks, before the first token --\n")
            out.write(table(chunks, TABLE_COLUMNS) + "\n")
    out.write("\n\n-- cited sources (only those the answer used, renumbered) --\n")
    for source in sources:
        out.write(f"[{source['index']}] {source['document_title']} · {source['display_subtitle']} "
                  f"({source['source_type']}, chunk {source['id']})\n")
    result = client.result
    out.write(f"status: {result.get('status')}; chunk list before answer: {client.chunk_list_before_answer}\n")
