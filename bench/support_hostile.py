"""The support check on hostile input (issue 34, item 2): its cost must stay linear in the answer plus the cited
chunks. Each case builds (answer with [C:n] markers, chunks) at a size; the suite runs every case at doubling sizes
and compares its time per 1,000 characters of input (answer + cited chunks) with the typical case's
(`bench.support.long_case`). Target: the slowest hostile case at most 2× the typical case per 1,000 characters."""

import time
from collections.abc import Callable

from bench.common import print_table, verdict
from citations import validate as validate_citations

Case = Callable[[int], tuple[str, list[dict]]]
TARGET_RATIO = 2.0
SIZES = (1, 2, 4)  # the doubling: each case at its base size times these


def chunk(n: int, content: str) -> dict:
    return {"id": str(n), "document_title": f"Doc {n}", "source_type": "rag", "content": content}


def typical(scale: int) -> tuple[str, list[dict]]:
    """`bench.support.long_case`: an ordinary answer of 14,000 characters (× scale) citing 30 short chunks."""
    from bench.support import long_case

    return long_case(14_000 * scale)


def long_chunks(scale: int) -> tuple[str, list[dict]]:
    """A 1,319-character answer (× scale) of short sentences citing 30 chunks of 12,000 characters, each one
    sentence of 不好看 repeated and one 好看 without a negation at its end: the negation rule read the chunk again
    for each of its 4,000 negations (quadratic), and every sentence's passage is the whole chunk."""
    chunks = [chunk(n, "不好看" * 3_998 + "    好看") for n in range(1, 31)]
    sentences, n = [], 0
    while sum(map(len, sentences)) < 1_319 * scale:
        sentences.append(f"真好看[C:{n % 30 + 1}]。")
        n += 1
    return "".join(sentences), chunks


def chinese_numerals(scale: int) -> tuple[str, list[dict]]:
    """30 chunks of 6,000 Chinese numerals (× scale) with no measure word after them, and an answer citing each."""
    chunks = [chunk(n, "一二三四五六七八九十百千" * (500 * scale)) for n in range(1, 31)]
    return "".join(f"会议室有三十个座位[C:{n}]。" for n in range(1, 31)), chunks


def table_rule(scale: int) -> tuple[str, list[dict]]:
    """A 12,000-character answer (× scale) that is one table line of dashes that is no rule after all."""
    return "| " + "-" * (12_000 * scale) + " x [C:1]", [chunk(1, "a table")]


def long_words(scale: int) -> tuple[str, list[dict]]:
    """Sentences and chunks of one long Latin word each: the number-before and roles patterns' starts."""
    word = "a" * (6_000 * scale)
    return f"{word} than {word} beat {word} [C:1].", [chunk(1, f"{word} than {word} defeated {word} 7")]


def many_missing(scale: int) -> tuple[str, list[dict]]:
    """One sentence of 8,000 distinct words (× scale) the chunk lacks: the missing items' list."""
    words = " ".join(f"Word{n:05d}x" for n in range(800 * scale))
    return f"{words} [C:1].", [chunk(1, "nothing of it")]


def many_parts(scale: int) -> tuple[str, list[dict]]:
    """One sentence of 2,000 clauses (× scale), each a different word, against a chunk holding half of them: the
    weakest-part rule reads every clause for every unit."""
    clauses = ", ".join(f"clause{n:05d}x holds" for n in range(2_000 * scale))
    return f"{clauses} [C:1].", [chunk(1, " ".join(f"clause{n:05d}x" for n in range(0, 2_000 * scale, 2)))]


def open_brackets(scale: int) -> tuple[str, list[dict]]:
    """A line of 4,000 full stops (× scale) inside an open bracket: none ends a sentence."""
    return "(" + "It is. Not the end " * (4_000 * scale) + "[C:1].", [chunk(1, "It is.")]


def many_chunks_per_sentence(scale: int) -> tuple[str, list[dict]]:
    """Sentences citing all 30 chunks of 4,000 characters (× scale) that share their words and negations."""
    text = "会议室不能预约。会议室可以预约, rooms are not booked than before. "
    chunks = [chunk(n, text * 100 * scale) for n in range(1, 31)]
    marks = "".join(f"[C:{n}]" for n in range(1, 31))
    return "".join(f"会议室都能预约，rooms are booked {n} times{marks}。" for n in range(40 * scale)), chunks


def many_chunk_sentences(scale: int) -> tuple[str, list[dict]]:
    """500 sentences (× scale) with a negation, each citing one of 30 chunks of 400 short sentences: the passage
    search reads every chunk sentence for every citing sentence."""
    words = "meeting room booking floor staff visitor badge parking lunch policy desk printer".split()
    line = [" ".join(words[(n * 7 + k * 5) % len(words)] for k in range(12)).capitalize() for n in range(97)]
    chunks = [
        chunk(n, " ".join(f"{line[(n + k) % 97]} not allowed {k % 9} days." for k in range(400))) for n in range(1, 31)
    ]
    return "".join(f"{line[n % 97]} is not allowed {n % 9} days [C:{n % 30 + 1}]. " for n in range(500 * scale)), chunks


CASES: dict[str, Case] = {
    f.__name__: f
    for f in (
        long_chunks,
        chinese_numerals,
        table_rule,
        long_words,
        many_missing,
        many_parts,
        open_brackets,
        many_chunks_per_sentence,
        many_chunk_sentences,
    )
}


def size_of(answer: str, chunks: list[dict]) -> int:
    return len(answer) + sum(len(c["content"]) for c in chunks)


def seconds(case: Case, scale: int, repeat: int = 3) -> tuple[float, int, dict]:
    """(best time of `repeat` validations, input size in characters, the last outputs)."""
    answer, chunks = case(scale)
    best, outputs = float("inf"), {}
    for _ in range(repeat):
        started = time.perf_counter()
        outputs = validate_citations.main(answer, chunks)
        best = min(best, time.perf_counter() - started)
    return best, size_of(answer, chunks), outputs


def per_thousand(case: Case, scale: int, repeat: int = 3) -> float:
    best, size, _ = seconds(case, scale, repeat)
    return best / size * 1000


def run() -> bool:
    base = min(per_thousand(typical, scale) for scale in (1, 2))
    rows, worst = [], ("", 0.0)
    for name, case in CASES.items():
        for scale in SIZES:
            best, size, _ = seconds(case, scale, 1 if scale > 1 else 3)
            ratio = best / size * 1000 / base
            rows.append((name, f"{size:,}", f"{best:.3f}", f"{ratio:.2f}"))
            worst = max(worst, (f"{name} ×{scale}", ratio), key=lambda w: w[1])
    print_table(
        f"Support check on hostile input: time per 1,000 input characters vs the typical case "
        f"({base * 1000:.3f} ms per 1,000)",
        ("case", "input chars", "seconds", "× typical"),
        rows,
    )
    print_table(
        "Support check cost target (issue 34, item 2)",
        ("figure", "measured", "target", "result"),
        [
            verdict(
                f"slowest hostile / typical per 1,000 chars ({worst[0]}) (x)",
                worst[1],
                f"<= {TARGET_RATIO}",
                worst[1] <= TARGET_RATIO,
            )
        ],
    )
    return worst[1] <= TARGET_RATIO


if __name__ == "__main__":
    import sys

    sys.exit(0 if run() else 1)
