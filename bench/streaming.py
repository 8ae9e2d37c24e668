"""Citation streaming: our incremental stream against re-parsing the accumulated text at every delta."""

from bench.common import best_time, print_table, verdict
from nodes.validate_citations import CitationStream, main

DELTA = 4
CHUNKS = [{"id": str(i), "document_title": f"Doc {i}", "source_type": "rag", "url": f"https://e.com/{i}",
           "display_subtitle": ""} for i in range(1, 31)]
SENTENCES = [
    "巡更人员执行巡检计划时，需先在终端进入巡更功能项并按点位顺序打卡[C:1]。",
    "发现漏水或设备告警时，点击异常上报并拍照，系统会通知值班主管【C：2】。",
    "The meeting room on floor 3 seats 40 people and has a projector [C:3, C:7]. ",
    "Bookings longer than four hours are refused, and a room is released after 15 minutes [C:4-6]. ",
    "配置示例：`[C:1]` 在代码里不是标记；未闭合的括号 [ 也会原样输出。",
    "物业巡检一般分为日常巡检、专项巡检、应急巡检三类[C:12][C:99]。\n",
]


def answer_of(length: int) -> str:
    text, i = [], 0
    while sum(map(len, text)) < length:
        text.append(SENTENCES[i % len(SENTENCES)])
        i += 1
    return "".join(text)[:length]


def deltas(answer: str) -> list[str]:
    return [answer[i:i + DELTA] for i in range(0, len(answer), DELTA)]


def stream_all(parts: list[str]) -> str:
    stream = CitationStream(CHUNKS)
    shown = [stream.feed(p) for p in parts]
    shown.append(stream.finish())
    return "".join(shown)


def reparse_all(parts: list[str]) -> str:
    """What PrivateGPT does: parse the whole accumulated text again at every delta (same parser as ours)."""
    text, shown = "", ""
    for part in parts:
        text += part
        shown = stream_all([text])  # the marker scan only: `main` would add the support check
    return shown


def run() -> bool:
    small, large = answer_of(14_000), answer_of(28_000)
    small_parts, large_parts = deltas(small), deltas(large)
    assert stream_all(small_parts) == reparse_all(small_parts) == main(small, CHUNKS)["answer"]
    t_stream = best_time(lambda: stream_all(small_parts))
    t_stream_2x = best_time(lambda: stream_all(large_parts))
    t_reparse = best_time(lambda: reparse_all(small_parts), repeat=1)
    speedup, doubling = t_reparse / t_stream, t_stream_2x / t_stream
    print_table(f"Citation streaming: {len(small):,}-character answer in {DELTA}-character deltas", (
        "method", "answer chars", "deltas", "seconds", "µs per delta"), [
        ("CitationStream (incremental)", f"{len(small):,}", len(small_parts), f"{t_stream:.4f}",
         f"{t_stream / len(small_parts) * 1e6:.1f}"),
        ("CitationStream (incremental)", f"{len(large):,}", len(large_parts), f"{t_stream_2x:.4f}",
         f"{t_stream_2x / len(large_parts) * 1e6:.1f}"),
        ("re-parse accumulated text", f"{len(small):,}", len(small_parts), f"{t_reparse:.4f}",
         f"{t_reparse / len(small_parts) * 1e6:.1f}"),
    ])
    rows = [verdict("speed-up over re-parsing (x)", speedup, ">= 20", speedup >= 20),
            verdict("time for 2x answer / 1x (x)", doubling, "<= 2.5", doubling <= 2.5)]
    print_table("Streaming targets", ("ratio", "measured", "target", "result"), rows)
    return all(r[-1] == "met" for r in rows)
