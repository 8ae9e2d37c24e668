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


BASELINE = "20e5c42"  # the nodes before hardening: `make bench` measures each node against its version there


def baseline_module(path: str, commit: str = BASELINE):
    """The module at `path` (e.g. "nodes/merge_chunks.py") as it was at `commit`, loaded from git; or the reason
    it cannot be (no git, a shallow clone without that commit …) as a string."""
    import subprocess
    import types

    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:{path}"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"git is not available ({error})"
    if source.returncode != 0:
        return (
            f"the git history holds no {path} at {commit} (a shallow clone? `git fetch --unshallow` brings it): "
            f"{source.stderr.strip()[:120] or 'git show failed'}"
        )
    module = types.ModuleType(f"baseline_{Path(path).stem}")
    module.__file__ = f"{commit}:{path}"
    exec(compile(source.stdout, module.__file__, "exec"), module.__dict__)  # noqa: S102 - an old node from git
    return module


def paired_times(works: dict[str, Callable[[], object]], rounds: int = 15, inner: int = 1) -> dict[str, float]:
    """The best time of each work (seconds per call), the works interleaved round by round so that a burst of load
    on a shared machine hits them alike; each round times `inner` calls in a row. CPU time of this process
    (time.process_time), so that time spent waiting while other programs run is not counted."""
    best = dict.fromkeys(works, float("inf"))
    for _ in range(rounds):
        for name, work in works.items():
            start = time.process_time()
            for _ in range(inner):
                work()
            best[name] = min(best[name], (time.process_time() - start) / inner)
    return best
