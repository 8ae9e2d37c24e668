"""`make demo`: the merge node on the built-in building-assistant sample."""

from typing import TextIO

from gcite.knowledge import load_json, result_items
from nodes import merge_chunks, validate_citations

DEMO_QUERY = "巡更时发现异常怎么上报？"
TABLE_COLUMNS = ("id", "source_type", "score", "document_title", "display_subtitle", "url")
# A fixed answer in the style an LLM writes, with sloppy markers, to show what the validator does with them.
SAMPLE_ANSWER = ("巡检中发现异常时，在终端点击“异常上报”，拍照并选择异常类型，系统会通知值班主管【C：1】。"
                 "巡更系统的异常上报可形成工单闭环[C: 4]，上报前应按点位顺序打卡[C:2, C:1]。"
                 "（另见 [C:17]）")


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


def run(out: TextIO) -> None:
    rag = result_items(load_json("knowledge_base.json"), DEMO_QUERY)
    web = load_json("web_baidu.json")
    merged = merge_chunks.main(rag, web, max_web_results=3)
    out.write(f"Query: {DEMO_QUERY}\n")
    out.write(f"Merged {merged['chunk_count']} chunks ({len(rag)} from the knowledge base, web from Baidu's shape)\n\n")
    out.write("== formatted_chunks (the LLM's context) ==\n")
    out.write(merged["formatted_chunks"] + "\n\n")
    out.write("== chunk_metadata (sent to the client in node_finished) ==\n")
    out.write(table(merged["chunk_metadata"], TABLE_COLUMNS) + "\n")
    if merged["skipped"]:
        out.write("\nskipped: " + ", ".join(f"{s['source']}#{s['index']} {s['reason']}" for s in merged["skipped"]) + "\n")
    checked = validate_citations.main(SAMPLE_ANSWER, merged["chunk_metadata"])
    out.write("\n== validator on a fixed sample answer (not generated) ==\n")
    out.write("raw:      " + SAMPLE_ANSWER + "\n")
    out.write("answer:   " + checked["answer"] + "\n")
    out.write(f"status:   {checked['status']}; id_map {checked['id_map']}; invalid_ids {checked['invalid_ids']}\n")
    out.write("references_markdown:\n" + checked["references_markdown"] + "\n")
