"""The validator's support check: the `weak` flag's precision and recall on the labelled set, and its cost.

The labelled set is tests/data/support_pairs.json (how it is built: its "construction" field). The threshold the
node uses (`SUPPORT_THRESHOLD`) is the one that maximises the weak flag's F0.5 on this set; the tests check that.
"""

import json
import re
import time
from pathlib import Path

from bench.common import print_table, verdict
from nodes.validate_citations import SUPPORT_THRESHOLD, CitationStream, content_units, support_score

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "support_pairs.json"
GRID = [round(0.05 * i, 2) for i in range(1, 20)]
NUMBER = re.compile(r"\d+")


def load() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def changed_number(sentence: str, chunk: str) -> str | None:
    """`sentence` with its first number that `chunk` contains replaced by the next number `chunk` does not."""
    in_chunk = set(NUMBER.findall(chunk))
    for match in NUMBER.finditer(sentence):
        if match.group() in in_chunk:
            value = int(match.group()) + 1
            while str(value) in in_chunk:
                value += 1
            return sentence[:match.start()] + str(value) + sentence[match.end():]
    return None


def labelled_pairs(data: dict | None = None) -> list[dict]:
    """Every (sentence, chunk, supported) pair: the hand-labelled ones and the derived ones (see the file)."""
    data = data or load()
    chunks = {c["id"]: c for c in data["chunks"]}
    neighbours: dict[str, list[str]] = {}
    for chunk in data["chunks"]:
        neighbours[chunk["id"]] = [c["id"] for c in data["chunks"] if c["topic"] == chunk["topic"] and c is not chunk]
    pairs = []
    for row in data["sentences"]:
        chunk = chunks[row["chunk"]]
        base = {"lang": chunk["lang"], "sentence": row["text"]}
        pairs.append({**base, "kind": row["kind"], "chunk": chunk["text"], "supported": row["supported"]})
        for other in neighbours[chunk["id"]]:
            pairs.append({**base, "kind": "neighbour", "chunk": chunks[other]["text"], "supported": False})
        if row["supported"]:
            changed = changed_number(row["text"], chunk["text"])
            if changed:
                pairs.append({**base, "sentence": changed, "kind": "number_changed", "chunk": chunk["text"],
                              "supported": False})
    return pairs


def scored(pairs: list[dict]) -> list[tuple[float, bool]]:
    """(support score, supported?) for each pair, scored as the node scores a sentence citing one chunk."""
    return [(support_score(content_units(p["sentence"]), content_units(p["chunk"], weights=False)), p["supported"])
            for p in pairs]


BETA = 0.5  # F-beta weighs precision twice as much as recall: a false "weak" on a good citation costs trust


def weak_flag_quality(scores: list[tuple[float, bool]], threshold: float) -> tuple[float, float, float]:
    """Precision, recall and F0.5 of `weak` (score < threshold) as a detector of unsupported pairs."""
    flagged = [supported for score, supported in scores if score < threshold]
    true_positive = sum(not s for s in flagged)
    unsupported = sum(not s for _, s in scores)
    precision = true_positive / len(flagged) if flagged else 1.0
    recall = true_positive / unsupported if unsupported else 1.0
    b2 = BETA * BETA
    f_beta = (1 + b2) * precision * recall / (b2 * precision + recall) if precision + recall else 0.0
    return precision, recall, f_beta


def false_alarms(scores: list[tuple[float, bool]], threshold: float) -> float:
    """The share of supported pairs flagged weak (independent of how many unsupported pairs the set holds)."""
    supported = [score for score, s in scores if s]
    return sum(score < threshold for score in supported) / len(supported) if supported else 0.0


def choose_threshold(scores: list[tuple[float, bool]]) -> float:
    """The grid threshold with the best F0.5 (the lowest on a tie: fewer false alarms)."""
    return max(GRID, key=lambda t: (round(weak_flag_quality(scores, t)[2], 9), -t))


# --- cost on a long answer ---------------------------------------------------------------------------------

TOPICS = ["巡更", "会议室", "访客", "报修", "消防", "门禁", "停车", "电梯", "空调", "保洁"]


def long_case(length: int = 14_000, chunk_count: int = 30) -> tuple[str, list[dict]]:
    """An answer of `length` characters citing 30 chunks of ~400 characters each, in both languages."""
    chunks = []
    for i in range(1, chunk_count + 1):
        topic = TOPICS[i % len(TOPICS)]
        text = (f"{topic}规定第{i}条：{topic}服务时间为每天8:00至{17 + i % 5}:00，费用每次{i * 10}元，"
                f"须提前{i % 3 + 1}天在物业App预约。The {topic} desk on floor {i} handles requests within {i + 2} hours; "
                f"bring your access card and sign the log. ") * 3
        chunks.append({"id": str(i), "document_title": f"Doc {i}", "source_type": "rag", "content": text})
    sentences, n = [], 0
    while sum(map(len, sentences)) < length:
        i = n % chunk_count + 1
        topic = TOPICS[i % len(TOPICS)]
        sentences.append(f"{topic}服务时间为每天8:00至{17 + i % 5}:00，费用每次{i * 10}元[C:{i}]。" if n % 2 == 0 else
                         f"The {topic} desk on floor {i} answers within {i + 2} hours [C:{i}]. ")
        if n % 7 == 3:
            sentences.append("请提前安排时间。\n")
        n += 1
    return "".join(sentences)[:length], chunks


def cost(repeat: int = 21) -> tuple[int, float, float]:
    """(answer length, the stream's own time, the support check's time), each the best of `repeat` runs: the
    stream feeds the answer in 4-character deltas through `feed_pieces`; the check is `result()` after `finish`."""
    answer, chunks = long_case()
    parts = [answer[i:i + 4] for i in range(0, len(answer), 4)]
    best_stream = best_check = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        stream = CitationStream(chunks)
        for part in parts:
            stream.feed_pieces(part)
        stream.finish_pieces()
        middle = time.perf_counter()
        stream.result()
        end = time.perf_counter()
        best_stream, best_check = min(best_stream, middle - start), min(best_check, end - middle)
    return len(answer), best_stream, best_check


def run() -> bool:
    pairs = labelled_pairs()
    scores = scored(pairs)
    chosen = choose_threshold(scores)
    by_lang = {lang: scored([p for p in pairs if p["lang"] == lang]) for lang in ("zh", "en")}
    counts = {lang: len(s) for lang, s in by_lang.items()}
    rows = []
    for t in GRID:
        p, r, f = weak_flag_quality(scores, t)
        mark = " <- SUPPORT_THRESHOLD" if abs(t - SUPPORT_THRESHOLD) < 1e-9 else ""
        rows.append((f"{t:.2f}{mark}", f"{p:.3f}", f"{r:.3f}", f"{f:.3f}", f"{false_alarms(scores, t):.3f}",
                     *(f"{weak_flag_quality(by_lang[lang], t)[0]:.2f}/{weak_flag_quality(by_lang[lang], t)[1]:.2f}"
                       for lang in ("zh", "en"))))
    unsupported = sum(not s for _, s in scores)
    print_table(f"Support check: weak flag (support < threshold) on {len(pairs)} labelled pairs "
                f"({counts['zh']} zh, {counts['en']} en; {unsupported} unsupported)",
                ("threshold", "precision", "recall", "F0.5", "false alarms", "zh P/R", "en P/R"), rows)
    kinds = sorted({p["kind"] for p in pairs})
    kind_rows = []
    for kind in kinds:
        ks = [score for (score, _), p in zip(scores, pairs) if p["kind"] == kind]
        flagged = sum(s < SUPPORT_THRESHOLD for s in ks)
        kind_rows.append((kind, len(ks), f"{flagged / len(ks):.2f}", f"{sum(ks) / len(ks):.2f}"))
    print_table(f"By kind at {SUPPORT_THRESHOLD}", ("kind", "pairs", "share flagged weak", "mean support"), kind_rows)
    # a held-out estimate: choose on even rows, measure on odd rows (and back)
    held = []
    for a, b in ((0, 1), (1, 0)):
        t = choose_threshold(scores[a::2])
        held.append((t, *weak_flag_quality(scores[b::2], t)[:2]))
    length, t_stream, t_check = cost()
    p, r, _ = weak_flag_quality(scores, SUPPORT_THRESHOLD)
    print_table("Support check targets", ("figure", "measured", "target", "result"), [
        ("threshold chosen by F0.5", f"{chosen:.2f}", f"= {SUPPORT_THRESHOLD}", "met" if chosen == SUPPORT_THRESHOLD else "MISSED"),
        ("weak precision at threshold", f"{p:.3f}", "report", "-"),
        ("weak recall at threshold", f"{r:.3f}", "report", "-"),
        ("supported pairs flagged weak", f"{false_alarms(scores, SUPPORT_THRESHOLD):.3f}", "report", "-"),
        ("held-out P/R (chosen on half)", "; ".join(f"t={t:.2f} {hp:.2f}/{hr:.2f}" for t, hp, hr in held), "report", "-"),
        (f"stream, {length:,} chars, 30 chunks (ms)", f"{t_stream * 1e3:.2f}", "report", "-"),
        (f"support check in result() (ms)", f"{t_check * 1e3:.2f}", "a few", "-"),
        verdict("check time / stream time (x)", t_check / t_stream, "<= 2", t_check / t_stream <= 2),
    ])
    return chosen == SUPPORT_THRESHOLD and t_check / t_stream <= 2


if __name__ == "__main__":
    import sys
    sys.exit(0 if run() else 1)
