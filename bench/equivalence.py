"""Old against new: each Code node as it was at a commit against the node generated now, on the same inputs.

`python -m bench.equivalence [--base COMMIT] [--cases N]` runs, for every node, the fuzz corpus and N inputs made
from it by mutation (deterministic: seeded) through `main` of nodes/<node>.py at COMMIT and of the generated node
(gcite/authoring/bundle.py), and compares the outcomes: the outputs as JSON, or the error's class and the field
its message names. Run it with the project's interpreter (.venv: the fuzz targets it reads import the project's
packages) and git; `tests/authoring/test_bundle.py` runs the bundled nodes under Python 3.10, as Dify's sandbox does.
A refactoring that must not change behaviour shows `0 differ`.
"""

import argparse
import json
import random
import subprocess
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fuzz.targets import FILTER_ARGS, MERGE_ARGS, MISSING, fields  # noqa: E402
from gcite.authoring.bundle import bundle  # noqa: E402

CORPUS = ROOT / "tests" / "fuzz_corpus"
# node -> (its arguments, in the order the fuzz inputs give them; the fuzz corpus folders that feed it)
NODES = {
    "merge_chunks": (MERGE_ARGS, ("merge_main", "merge_web")),
    "filter_chunks": (FILTER_ARGS, ("filter_main", "filter_acl", "filter_condition")),
    "acl_prefilter": (("user_roles", "role_slots"), ("acl_prefilter_main",)),
    "remember_turn": (("history", "query", "answer", "max_turns"), ("remember_turn_main",)),
    "web_search_request": (("query", "count"), ("web_search_request_main",)),
    "validate_citations": (
        ("answer", "chunk_metadata", "insufficient_phrases", "max_list_items", "question"),
        ("validate_main", "stream"),
    ),
}


def load(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, name, "exec"), module.__dict__)  # noqa: S102 - a node's source from git, as Dify runs it
    return module


def old_source(node: str, commit: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:nodes/{node}.py"], capture_output=True, text=True, check=True
    )
    return done.stdout


def mutate(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    """One input near `data`: bytes flipped, inserted, deleted, or a splice with another input."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        if choice < 0.3 and out:
            out[rng.randrange(len(out))] = rng.randrange(256)
        elif choice < 0.55:
            at = rng.randrange(len(out) + 1)
            out[at:at] = rng.choice(
                [
                    b"[C:",
                    b"]",
                    b"\x00",
                    b'"',
                    b"{",
                    b"[",
                    b"1",
                    "【Ｃ：".encode(),
                    b"`",
                    b"\n",
                    b"-",
                    b",",
                    bytes([rng.randrange(256)]),
                ]
            )
        elif choice < 0.75 and out:
            at = rng.randrange(len(out))
            del out[at : at + rng.randint(1, 8)]
        else:
            other = rng.choice(pool)
            cut, cut2 = rng.randint(0, len(out)), rng.randint(0, len(other))
            out = out[:cut] + other[cut2:]
    if out:
        out[0] = data[0] if data and rng.random() < 0.7 else rng.randrange(256)
    return bytes(out)


def outcome(main, names, data: bytes):
    kwargs = {n: v for n, v in zip(names, fields(data, len(names))) if v is not MISSING}
    try:
        return ["ok", json.loads(json.dumps(main(**kwargs), sort_keys=True, allow_nan=True))]
    except Exception as error:  # noqa: BLE001 - the outcome, error or not, is what is compared
        text = str(error)
        return ["error", type(error).__name__, text.split(":", 1)[0][:60]]


def compare(node: str, commit: str, cases: int, seed: int = 1) -> tuple[int, int, list]:
    names, folders = NODES[node]
    old = load(f"old_{node}", old_source(node, commit))
    new = load(f"new_{node}", bundle(node))
    pool = [p.read_bytes() for folder in folders for p in sorted((CORPUS / folder).glob("*"))]
    rng = random.Random(seed)
    inputs = list(pool) + [mutate(rng.choice(pool), rng, pool) for _ in range(cases)]
    differ = []
    for data in inputs:
        a, b = outcome(old.main, names, data), outcome(new.main, names, data)
        if a != b:
            differ.append(
                (data[:200], a if len(str(a)) < 300 else str(a)[:300], b if len(str(b)) < 300 else str(b)[:300])
            )
    return len(inputs), len(differ), differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="HEAD", help="the commit whose nodes/*.py are the old nodes")
    parser.add_argument("--cases", type=int, default=10_000, help="mutated inputs per node (default 10000)")
    parser.add_argument("--node", action="append", choices=sorted(NODES), help="only these nodes")
    args = parser.parse_args()
    failed = 0
    print(f"Python {sys.version.split()[0]}, old nodes at {args.base}")
    for node in args.node or NODES:
        total, differ, examples = compare(node, args.base, args.cases)
        failed += differ
        print(f"{node:20} {total:6} inputs  {differ} differ")
        for example in examples[:3]:
            print("   ", example)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
