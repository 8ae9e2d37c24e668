"""`make fuzz` = `python -m fuzz [--seconds N] [--targets a,b] [--corpus-root DIR]`.

Each target (fuzz/targets.py) is fuzzed for N seconds (default 120, or $FUZZ_SECONDS): with atheris (libFuzzer,
coverage-guided) when it is installed, else with hypothesis (random bytes). The seeds are the files in
tests/fuzz_corpus/<target>/; new interesting inputs go to a scratch directory. A crash, a hang (10 s on one
input), running out of memory (2 GB) or a broken invariant stops that target and writes the input that caused it
into tests/fuzz_corpus/<target>/ (`crash-…`, `timeout-…`, `oom-…`), which `make test` then replays until the bug is
fixed. Exit status 1 when any target found something.
"""

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS_ROOT = ROOT / "tests" / "fuzz_corpus"
DICTIONARY = Path(__file__).resolve().parent / "tokens.dict"


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def have_atheris() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


def run_atheris(target: str, seconds: int, corpus: Path) -> bool:
    corpus.mkdir(parents=True, exist_ok=True)
    before = set(corpus.iterdir())
    with tempfile.TemporaryDirectory(prefix=f"gcite-fuzz-{target}-") as scratch:
        command = [
            sys.executable,
            "-m",
            "fuzz.atheris_target",
            target,
            f"-max_total_time={seconds}",
            "-timeout=10",
            "-rss_limit_mb=2048",
            "-max_len=16384",
            f"-dict={DICTIONARY}",
            f"-artifact_prefix={corpus}/",
            "-print_final_stats=1",
            scratch,
            str(corpus),
        ]
        started = time.monotonic()
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, errors="replace")
    found = sorted(set(corpus.iterdir()) - before)
    written = re.findall(r"Test unit written to (\S+)", done.stderr)  # also an existing reproducer, found again
    found += [Path(p) for p in written if Path(p) not in found]
    stats = [
        line
        for line in done.stderr.splitlines()
        if line.startswith(("stat::number_of_executed_units", "stat::peak_rss_mb"))
    ]
    runs = " ".join(line.split(":")[-1].strip() for line in stats)
    if done.returncode == 0 and not found:
        print(f"  {target}: nothing found in {time.monotonic() - started:.0f} s (runs, peak MB: {runs})")
        return True
    print(f"  {target}: FAILED (exit {done.returncode}); reproducer(s): {[shown(p) for p in found]}")
    print("\n".join("    " + line for line in done.stderr.splitlines()[-40:]))
    return False


def run_hypothesis(target: str, seconds: int, corpus: Path) -> bool:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from fuzz.targets import ALL_TARGETS

    function, last = ALL_TARGETS[target], [b""]

    @settings(max_examples=500, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.binary(max_size=4096))
    def check(data: bytes) -> None:
        last[0] = data
        function(data)

    for path in sorted(corpus.iterdir()) if corpus.is_dir() else []:  # the seeds and earlier reproducers first
        try:
            function(path.read_bytes())
        except Exception as error:  # noqa: BLE001 - any exception is a finding to report
            print(f"  {target}: FAILED on {shown(path)} ({type(error).__name__}: {str(error)[:300]})")
            return False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            check()
        except Exception as error:  # noqa: BLE001 - hypothesis re-raises the (shrunk) failure: `last` holds it
            corpus.mkdir(parents=True, exist_ok=True)
            path = corpus / f"crash-{hashlib.sha1(last[0]).hexdigest()}"
            path.write_bytes(last[0])
            print(f"  {target}: FAILED ({type(error).__name__}: {str(error)[:300]}); reproducer: {shown(path)}")
            return False
    print(f"  {target}: nothing found in {seconds} s (hypothesis)")
    return True


def main() -> int:
    from fuzz.targets import ALL_TARGETS, TARGETS

    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n\n")[1])
    parser.add_argument("--seconds", type=int, default=int(os.environ.get("FUZZ_SECONDS") or 120))
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated; default: all")
    parser.add_argument("--corpus-root", type=Path, default=CORPUS_ROOT)
    parser.add_argument("--engine", choices=("auto", "atheris", "hypothesis"), default="auto")
    args = parser.parse_args()
    names = [t for t in args.targets.split(",") if t]
    unknown = [t for t in names if t not in ALL_TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {unknown}; known: {', '.join(ALL_TARGETS)}")
    engine = args.engine if args.engine != "auto" else ("atheris" if have_atheris() else "hypothesis")
    print(f"fuzzing {len(names)} target(s) with {engine}, {args.seconds} s each")
    run = run_atheris if engine == "atheris" else run_hypothesis
    results = [run(name, args.seconds, args.corpus_root.resolve() / name) for name in names]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
