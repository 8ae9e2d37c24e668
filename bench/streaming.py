"""Citation streaming: our incremental stream against the stream at commit 20e5c42 (before hardening) in the same
run, and against re-parsing the accumulated text at every delta."""

from bench.common import BASELINE, baseline_module, best_time, paired_times, print_table, verdict
from citations.stream import CitationStream
from citations.validate import main

DELTA = 4
CHUNKS = [
    {
        "id": str(i),
        "document_title": f"Doc {i}",
        "source_type": "rag",
        "url": f"https://e.com/{i}",
        "display_subtitle": "",
    }
    for i in range(1, 31)
]
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
    return [answer[i : i + DELTA] for i in range(0, len(answer), DELTA)]


SIZES = (3_500, 14_000, 28_000, 56_000)
TARGET_RATIO, TARGET_DOUBLING = 1.05, 2.1


def stream_all(parts: list[str], stream_class=CitationStream) -> str:
    stream = stream_class(CHUNKS)
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
    old = baseline_module("nodes/validate_citations.py")
    answers = {size: answer_of(size) for size in SIZES}
    parts = {size: deltas(text) for size, text in answers.items()}
    for size in SIZES:
        assert stream_all(parts[size]) == main(answers[size], CHUNKS)["answer"]
    works = {}
    for size in SIZES:
        works[size] = lambda size=size: stream_all(parts[size])
        if not isinstance(old, str):
            works[(size, BASELINE)] = lambda size=size: stream_all(parts[size], old.CitationStream)
    # The 14,000 and 28,000-character answers (the targets) interleaved in one series, the others in another: the
    # fastest of many rounds is the least disturbed by other load.
    targets = (14_000, 28_000)
    best = paired_times({k: w for k, w in works.items() if (k if isinstance(k, int) else k[0]) in targets}, rounds=40)
    best.update(paired_times({k: w for k, w in works.items() if k not in best}, rounds=20))
    # Re-parsing is quadratic: timed once, on the shortest answer, against the stream on the same answer.
    assert reparse_all(parts[SIZES[0]]) == stream_all(parts[SIZES[0]])
    t_reparse = best_time(lambda: reparse_all(parts[SIZES[0]]), repeat=1)
    t_stream, t_stream_2x = best[14_000], best[28_000]
    speedup, doubling = t_reparse / best[SIZES[0]], t_stream_2x / t_stream
    rows = []
    for size in SIZES:
        row = [
            "CitationStream (incremental)",
            f"{size:,}",
            len(parts[size]),
            f"{best[size] * 1e3:.2f}",
            f"{best[size] / len(parts[size]) * 1e6:.2f}",
        ]
        row += (
            ["-", "-"]
            if isinstance(old, str)
            else [f"{best[(size, BASELINE)] * 1e3:.2f}", f"{best[size] / best[(size, BASELINE)]:.2f}"]
        )
        rows.append(tuple(row))
    rows.append(
        (
            "re-parse accumulated text",
            f"{SIZES[0]:,}",
            len(parts[SIZES[0]]),
            f"{t_reparse * 1e3:.1f}",
            f"{t_reparse / len(parts[SIZES[0]]) * 1e6:.1f}",
            "-",
            "-",
        )
    )
    print_table(
        f"Citation streaming: answers in {DELTA}-character deltas",
        ("method", "answer chars", "deltas", "ms", "µs per delta", f"ms {BASELINE}", "ratio"),
        rows,
    )
    checks = [
        verdict(f"speed-up over re-parsing, {SIZES[0]:,} chars (x)", speedup, ">= 20", speedup >= 20),
        verdict("time for 28,000 chars / 14,000 (x)", doubling, f"<= {TARGET_DOUBLING}", doubling <= TARGET_DOUBLING),
    ]
    if isinstance(old, str):
        print(f"  no ratio against {BASELINE}: {old}")
    else:
        ratio = best[14_000] / best[(14_000, BASELINE)]
        checks.append(
            verdict(f"stream, 14,000 chars: now / {BASELINE} (x)", ratio, f"<= {TARGET_RATIO}", ratio <= TARGET_RATIO)
        )
    print_table("Streaming targets", ("ratio", "measured", "target", "result"), checks)
    return all(r[-1] == "met" for r in checks)
