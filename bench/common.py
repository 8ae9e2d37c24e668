"""Small helpers shared by the benchmarks: best-of-N timing and a plain table."""

import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def best_time(work: Callable[[], object], repeat: int = 5) -> float:
    """The fastest of `repeat` runs, in seconds (the least disturbed by other load)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def print_table(title: str, header: tuple[str, ...], rows: list[tuple]) -> None:
    cells = [header] + [tuple(str(c) for c in row) for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n== {title} ==")
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def verdict(name: str, value: float, target: str, ok: bool) -> tuple[str, str, str, str]:
    return (name, f"{value:.2f}", target, "met" if ok else "MISSED")
