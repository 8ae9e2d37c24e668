"""The validator's support check: how well the `weak` flag separates good citations from bad ones, and its cost.

Three sets, each scored exactly as the node scores an answer (`main`: the sentence cites chunk 1 with `[C:1]`):
- our own labelled pairs, tests/data/support_pairs.json (how it is built: its "construction" field);
- held-out samples of two public human-labelled sets, rebuilt by bench/data/convert.py from pinned commits
  (bench/data/README.md): WiCE test (English Wikipedia claims against the web page they cite; supported vs partially
  or not supported) and OCNLI dev (Chinese; entailment vs contradiction).
The thresholds the node ships (`Weights.threshold` for English, `Weights.threshold_zh` for Chinese, which
`Weights.zh_scale` maps onto the first) were chosen on the development splits (WiCE dev, OCNLI train.10k, the own
pairs): `dev_thresholds` is the rule, `python -m bench.support --dev DIR` runs it on the rows that
`python -m bench.data.convert --full DIR` writes (docs/support-check.md).
"""

import argparse
import json
import random
import re
import statistics
import time
from pathlib import Path

from bench.common import print_table, verdict
from bench.data.convert import cited
from citations.stream import CitationStream
from citations.support.weights import DEFAULT_WEIGHTS, Weights, replace

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "support_pairs.json"
SAMPLES = {
    "WiCE test (en)": ROOT / "bench" / "data" / "wice.test.sample.jsonl",
    "OCNLI dev (zh)": ROOT / "bench" / "data" / "ocnli.dev.sample.jsonl",
}
GRID = [round(0.05 * i, 2) for i in range(1, 20)]
NUMBER = re.compile(r"\d+")
# issue 24's targets at the shipped threshold: (minimum AUROC, minimum precision, minimum recall, maximum share of
# supported pairs flagged)
TARGETS = {"wice": (0.85, 0.85, 0.75, None), "ocnli": (0.70, None, None, 0.35), "own": (None, 0.9, 0.85, None)}


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
            return sentence[: match.start()] + str(value) + sentence[match.end() :]
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
                pairs.append(
                    {**base, "sentence": changed, "kind": "number_changed", "chunk": chunk["text"], "supported": False}
                )
    return pairs


def public_rows(path: Path) -> list[dict]:
    """The two-class rows of a converted public set (OCNLI's neutral rows left out)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row for row in rows if row["supported"] is not None]


def node_support(answer: str, chunk: str, weights: Weights = DEFAULT_WEIGHTS) -> float:
    """The support the node gives the citation of chunk 1 in `answer` (1.0 when there is nothing to check): what
    the node's `main` runs (the stream, then its result; `main` only caps the lists), with `weights`."""
    stream = CitationStream([{"id": "1", "content": chunk}], weights=weights)
    stream.feed(answer)
    citation = stream.result()["citations"][0]
    return 1.0 if citation["support"] is None else citation["support"]


def scored(pairs: list[dict], weights: Weights = DEFAULT_WEIGHTS) -> list[tuple[float, bool]]:
    """(support score, supported?) for each own pair, scored as the node scores a sentence citing one chunk."""
    return [(node_support(cited(p["sentence"]), p["chunk"], weights), p["supported"]) for p in pairs]


def scored_rows(rows: list[dict], weights: Weights = DEFAULT_WEIGHTS) -> list[tuple[float, bool]]:
    return [(node_support(row["answer"], row["chunk"], weights), row["supported"]) for row in rows]


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


def auroc(scores: list[tuple[float, bool]]) -> float:
    """The probability that a supported pair scores above an unsupported one (ties count half)."""
    ordered = sorted(scores, key=lambda pair: pair[0])
    rank_sum, i = 0.0, 0
    while i < len(ordered):
        j = i
        while j < len(ordered) and ordered[j][0] == ordered[i][0]:
            j += 1
        rank_sum += (i + j + 1) / 2 * sum(1 for _, s in ordered[i:j] if s)
        i = j
    positive = sum(1 for _, s in scores if s)
    negative = len(scores) - positive
    if not positive or not negative:
        return float("nan")
    return (rank_sum - positive * (positive + 1) / 2) / (positive * negative)


def auroc_spread(scores: list[tuple[float, bool]], groups: list[str], resamples: int = 200, seed: int = 24) -> float:
    """How far a sample's AUROC moves by chance: its standard deviation over bootstrap resamples of whole groups
    (a WiCE claim's rows, one per oracle chunk, are drawn together)."""
    rng = random.Random(seed)
    by_group: dict[str, list[tuple[float, bool]]] = {}
    for score, group in zip(scores, groups, strict=True):
        by_group.setdefault(group, []).append(score)
    keys = list(by_group)
    values = []
    for _ in range(resamples):
        value = auroc([row for key in (rng.choice(keys) for _ in keys) for row in by_group[key]])
        if value == value:  # a resample with one class only has no AUROC
            values.append(value)
    return statistics.pstdev(values) if len(values) > 1 else float("nan")


def figures(scores: list[tuple[float, bool]], threshold: float = DEFAULT_WEIGHTS.threshold) -> dict:
    precision, recall, _ = weak_flag_quality(scores, threshold)
    return {
        "pairs": len(scores),
        "auroc": auroc(scores),
        "precision": precision,
        "recall": recall,
        "flagged_supported": false_alarms(scores, threshold),
    }


def meets(name: str, figure: dict) -> bool:
    low_auroc, low_precision, low_recall, high_flagged = TARGETS[name]
    return (
        (low_auroc is None or figure["auroc"] >= low_auroc)
        and (low_precision is None or figure["precision"] >= low_precision)
        and (low_recall is None or figure["recall"] >= low_recall)
        and (high_flagged is None or figure["flagged_supported"] <= high_flagged)
    )


def dev_thresholds(scores: dict[str, list[tuple[float, bool]]]) -> dict[str, float | None]:
    """The rule the shipped thresholds come from, applied per language to the development splits' raw scores
    (`RAW_WEIGHTS`): for English ("wice", "own_en") and for Chinese ("ocnli", "own_zh"), the grid thresholds at
    which that language's precision/recall/flagged targets all hold, and among them the best F0.5 on its public set
    (WiCE, OCNLI); None when no threshold meets them all."""

    def pick(public: str, own: str) -> float | None:
        def holds(t: float) -> bool:
            return all(meets(name.split("_")[0], {**figures(scores[name], t), "auroc": 1.0}) for name in (public, own))

        passing = [t for t in GRID if holds(t)]
        if not passing:
            return None
        return max(passing, key=lambda t: (round(weak_flag_quality(scores[public], t)[2], 9), -t))

    return {"en": pick("wice", "own_en"), "zh": pick("ocnli", "own_zh")}


# the shipped weights with the Chinese scores left raw (zh_scale 1): the scale the
# Chinese threshold is chosen on
RAW_WEIGHTS = replace(DEFAULT_WEIGHTS, zh_scale=1.0)


# --- cost on a long answer ---------------------------------------------------------------------------------

TOPICS = ["巡更", "会议室", "访客", "报修", "消防", "门禁", "停车", "电梯", "空调", "保洁"]


def long_case(length: int = 14_000, chunk_count: int = 30) -> tuple[str, list[dict]]:
    """An answer of `length` characters citing 30 chunks of ~400 characters each, in both languages."""
    chunks = []
    for i in range(1, chunk_count + 1):
        topic = TOPICS[i % len(TOPICS)]
        text = (
            f"{topic}规定第{i}条：{topic}服务时间为每天8:00至{17 + i % 5}:00，费用每次{i * 10}元，"
            f"须提前{i % 3 + 1}天在物业App预约。The {topic} desk on floor {i} handles requests within {i + 2} hours; "
            f"bring your access card and sign the log. "
        ) * 3
        chunks.append({"id": str(i), "document_title": f"Doc {i}", "source_type": "rag", "content": text})
    sentences, n = [], 0
    while sum(map(len, sentences)) < length:
        i = n % chunk_count + 1
        topic = TOPICS[i % len(TOPICS)]
        sentences.append(
            f"{topic}服务时间为每天8:00至{17 + i % 5}:00，费用每次{i * 10}元[C:{i}]。"
            if n % 2 == 0
            else f"The {topic} desk on floor {i} answers within {i + 2} hours [C:{i}]. "
        )
        if n % 7 == 3:
            sentences.append("请提前安排时间。\n")
        n += 1
    return "".join(sentences)[:length], chunks


def cost(repeat: int = 21) -> tuple[int, float, float]:
    """(answer length, the stream's own time, the support check's time), each the best of `repeat` runs: the
    stream feeds the answer in 4-character deltas through `feed_pieces`; the check is `result()` after `finish`."""
    answer, chunks = long_case()
    parts = [answer[i : i + 4] for i in range(0, len(answer), 4)]
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


def threshold_table(name: str, scores: list[tuple[float, bool]]) -> None:
    rows = []
    for t in GRID:
        p, r, f = weak_flag_quality(scores, t)
        mark = " <- threshold" if abs(t - DEFAULT_WEIGHTS.threshold) < 1e-9 else ""
        rows.append((f"{t:.2f}{mark}", f"{p:.3f}", f"{r:.3f}", f"{f:.3f}", f"{false_alarms(scores, t):.3f}"))
    print_table(
        f"Support check on {name}: weak flag (support < threshold), {len(scores)} pairs "
        f"({sum(not s for _, s in scores)} unsupported)",
        ("threshold", "precision", "recall", "F0.5", "supported flagged"),
        rows,
    )


def figure_rows(name: str, key: str, figure: dict) -> list[tuple[str, str, str, str]]:
    low_auroc, low_precision, low_recall, high_flagged = TARGETS[key]
    out = []
    for label, value, target, ok in (
        ("AUROC", figure["auroc"], low_auroc, low_auroc is None or figure["auroc"] >= low_auroc),
        (
            "weak precision",
            figure["precision"],
            low_precision,
            low_precision is None or figure["precision"] >= low_precision,
        ),
        ("weak recall", figure["recall"], low_recall, low_recall is None or figure["recall"] >= low_recall),
        (
            "supported flagged weak",
            figure["flagged_supported"],
            high_flagged,
            high_flagged is None or figure["flagged_supported"] <= high_flagged,
        ),
    ):
        sign = "<=" if label.startswith("supported") else ">="
        out.append(
            (
                f"{name}: {label}",
                f"{value:.3f}",
                f"{sign} {target}" if target is not None else "report",
                ("met" if ok else "MISSED") if target is not None else "-",
            )
        )
    return out


def run() -> bool:
    """Prints the figures; fails (False) when the own-data or the cost target is missed. The public samples'
    targets are printed as met/MISSED but do not fail the run: a sample of a few hundred rows moves a figure by a
    few hundredths (docs/support-check.md gives the full held-out splits' figures)."""
    pairs = labelled_pairs()
    own = scored(pairs)
    threshold_table("our labelled pairs (tests/data/support_pairs.json)", own)
    kinds = sorted({p["kind"] for p in pairs})
    kind_rows = []
    for kind in kinds:
        ks = [score for (score, _), p in zip(own, pairs) if p["kind"] == kind]
        flagged = sum(s < DEFAULT_WEIGHTS.threshold for s in ks)
        kind_rows.append((kind, len(ks), f"{flagged / len(ks):.2f}", f"{sum(ks) / len(ks):.2f}"))
    print_table(
        f"Own pairs by kind at {DEFAULT_WEIGHTS.threshold}",
        ("kind", "pairs", "share flagged weak", "mean support"),
        kind_rows,
    )
    rows = []
    for lang in ("zh", "en"):
        rows += figure_rows(f"own {lang}", "own", figures([s for s, p in zip(own, pairs) if p["lang"] == lang]))
    own_figure = figures(own)
    rows += figure_rows("own (both)", "own", own_figure)
    for (name, path), key in zip(SAMPLES.items(), ("wice", "ocnli")):
        if not path.exists():  # see bench/data/README.md (licences)
            rows.append((f"{name} sample", "absent", "rebuild: python -m bench.data.convert", "-"))
            continue
        sample = public_rows(path)
        scores = scored_rows(sample)
        rows += figure_rows(f"{name} sample, {len(scores)} pairs", key, figures(scores))
        spread = auroc_spread(scores, [row.get("claim_id") or row["id"] for row in sample])
        rows.append((f"{name} sample: AUROC's chance spread (bootstrap SD)", f"{spread:.3f}", "report", "-"))
    length, t_stream, t_check = cost()
    rows += [
        (f"stream, {length:,} chars, 30 chunks (ms)", f"{t_stream * 1e3:.2f}", "report", "-"),
        ("support check in result() (ms)", f"{t_check * 1e3:.2f}", "report", "-"),
        verdict("check time / stream time (x)", t_check / t_stream, "<= 2", t_check / t_stream <= 2),
    ]
    print_table(
        f"Support check targets at threshold = {DEFAULT_WEIGHTS.threshold}",
        ("figure", "measured", "target", "result"),
        rows,
    )
    print(
        "The public samples' met/MISSED do not fail this run: a sample of a few hundred rows moves by chance as "
        "much as its bootstrap SD. The full held-out splits' figures are in docs/support-check.md "
        "(python -m bench.support --held-out DIR measures them)."
    )
    return meets("own", own_figure) and t_check / t_stream <= 2


def run_dev(directory: Path) -> None:
    """The development splits' figures and the thresholds `dev_thresholds` picks from them."""
    pairs = labelled_pairs()

    def development(weights: Weights = DEFAULT_WEIGHTS) -> dict[str, list[tuple[float, bool]]]:
        own = scored(pairs, weights)
        return {
            "wice": scored_rows(public_rows(directory / "wice.dev.jsonl"), weights),
            "ocnli": scored_rows(public_rows(directory / "ocnli.train.10k.jsonl"), weights),
            **{f"own_{lang}": [s for s, p in zip(own, pairs) if p["lang"] == lang] for lang in ("en", "zh")},
        }

    for name, s in development().items():
        threshold_table(f"{name} (development split, as shipped)", s)
        print(f"AUROC {name}: {auroc(s):.3f}")
    rule = dev_thresholds(development(RAW_WEIGHTS))
    print(
        f"\nthresholds by the rule, on raw scores: English {rule['en']} (shipped threshold "
        f"{DEFAULT_WEIGHTS.threshold}), Chinese {rule['zh']} (shipped threshold_zh {DEFAULT_WEIGHTS.threshold_zh})"
    )


def run_held_out(directory: Path) -> None:
    """The full held-out splits' figures at the shipped threshold (for docs/support-check.md)."""
    rows = []
    for name, key, file in (("WiCE test", "wice", "wice.test.jsonl"), ("OCNLI dev", "ocnli", "ocnli.dev.jsonl")):
        scores = scored_rows(public_rows(directory / file))
        rows += figure_rows(f"{name}, {len(scores)} pairs", key, figures(scores))
    print_table(
        f"Held-out splits at threshold = {DEFAULT_WEIGHTS.threshold}", ("figure", "measured", "target", "result"), rows
    )


if __name__ == "__main__":
    import sys

    parser = argparse.ArgumentParser(description="the support check's figures")
    parser.add_argument("--dev", type=Path, help="directory of `bench.data.convert --full`: choose the threshold")
    parser.add_argument("--held-out", type=Path, help="directory of `bench.data.convert --full`: full held-out splits")
    args = parser.parse_args()
    if args.dev:
        run_dev(args.dev)
    elif args.held_out:
        run_held_out(args.held_out)
    else:
        sys.exit(0 if run() else 1)
