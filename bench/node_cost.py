"""The validator Code node's cost as Dify's sandbox pays it: a fresh Python 3.10 process compiles the node's source,
loads it (runs the module: its imports, regexes and tables) and runs `main` once, on a 3,500-character answer
citing 10 chunks (`bench.support.long_case`). The node generated now (`bundle("validate_citations")`) against the
node at commit 682c20c (the last hand-written one), in the same run: one process per measurement, old and new
alternating (each going first every other round), the best of ROUNDS each (CPU time of the child, so that waiting
while other programs run is not counted)."""

import json
import subprocess
import sys

from bench.common import ROOT, print_table, verdict
from bench.support import long_case
from gcite.authoring.bundle import bundle

NODE = "validate_citations"
OLD = "682c20c"
ROUNDS = 15
TARGET = 0.7
PYTHON = "3.10"

# The child: reads the node's source and the case from stdin, then times each step in its own CPU time.
CHILD = """
import json, sys, time
job = json.loads(sys.stdin.read())
clock = time.process_time
start = clock()
code = compile(job["source"], "node", "exec")
compiled = clock()
namespace = {"__name__": "node"}
exec(code, namespace)
loaded = clock()
result = namespace["main"](job["answer"], job["chunks"])
ran = clock()
print(json.dumps({"compile": compiled - start, "load": loaded - compiled, "run": ran - loaded,
                  "result": result}, sort_keys=True))
"""


def interpreter() -> str | None:
    """Python 3.10 (the sandbox's version) found by scripts/find_python.sh, or None."""
    found = subprocess.run(
        [str(ROOT / "scripts" / "find_python.sh"), PYTHON], capture_output=True, text=True, check=False
    )
    return found.stdout.strip() or None if found.returncode == 0 else None


def old_source(commit: str = OLD) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:nodes/{NODE}.py"], capture_output=True, text=True, check=False
    )
    return done.stdout if done.returncode == 0 else None


def measure(python: str, source: str, answer: str, chunks: list[dict]) -> dict:
    """One fresh process: {"compile", "load", "run": seconds of CPU time, "result": what `main` returned}."""
    job = json.dumps({"source": source, "answer": answer, "chunks": chunks})
    done = subprocess.run(
        [python, "-I", "-c", CHILD], input=job, capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(done.stdout)


def costs(python: str, sources: dict[str, str], rounds: int = ROUNDS) -> dict[str, dict]:
    """Per source: the best of `rounds` fresh processes (the least disturbed by other load) by total, with its
    steps; the sources alternate round by round. Every process must return the same result."""
    answer, chunks = long_case(3_500, 10)
    best: dict[str, dict] = {}
    results = set()
    for round_ in range(rounds):
        order = list(sources.items())
        for name, source in order if round_ % 2 else order[::-1]:  # neither always goes first
            got = measure(python, source, answer, chunks)
            results.add(json.dumps(got.pop("result"), sort_keys=True))
            got["total"] = got["compile"] + got["load"] + got["run"]
            if name not in best or got["total"] < best[name]["total"]:
                best[name] = got
    if len(results) != 1:
        raise AssertionError("the old and the new node return different results on the node-cost case")
    return best


def run() -> bool:
    python = interpreter()
    old = old_source()
    title = "Validator Code node in a fresh Python 3.10 process: compile + load + one run, 3,500 chars, 10 chunks"
    if python is None or old is None:
        why = "no Python 3.10 (scripts/find_python.sh 3.10)" if python is None else f"no {OLD} in the git history"
        print_table(title, ("figure", "measured", "target", "result"), [("node cost", "absent", why, "-")])
        return True
    best = costs(python, {"old": old, "new": bundle(NODE)})
    rows = []
    for step in ("compile", "load", "run", "total"):
        rows.append((f"{step} (ms)", f"{best['new'][step] * 1e3:.1f}", f"{best['old'][step] * 1e3:.1f}"))
    ratio = best["new"]["total"] / best["old"]["total"]
    print_table(
        f"{title} (best of {ROUNDS} processes each, old and new alternating)",
        ("step", "generated node", f"node at {OLD}"),
        rows,
    )
    print_table(
        "Validator node cost target",
        ("figure", "measured", "target", "result"),
        [verdict(f"generated / {OLD} (x)", ratio, f"<= {TARGET}", ratio <= TARGET)],
    )
    return ratio <= TARGET


if __name__ == "__main__":
    sys.exit(0 if run() else 1)
