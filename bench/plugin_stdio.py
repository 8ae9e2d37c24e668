"""The packaged plugin over stdio: round trips one at a time, and 200 requests in flight on one connection."""

import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from bench.common import ROOT, print_table
from gcite.local.plugin_process import PluginProcess
from gcite.release.package import build

IN_FLIGHT = 200
SEQUENTIAL = 200


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def parameters(i: int) -> dict:
    return {"answer": f"answer {i} [C:{i % 7 + 1}]", "chunk_metadata": None}


def run() -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        package = build(ROOT, Path(tmp) / "dist")
        plugin_dir = Path(tmp) / "plugin"
        with zipfile.ZipFile(package.path) as archive:
            archive.extractall(plugin_dir)
        with PluginProcess(plugin_dir, sys.executable) as plugin:
            plugin.wait([plugin.invoke_tool("gcite", "validate_citations", parameters(0))])  # warm up
            one_by_one = []
            for i in range(SEQUENTIAL):
                session = plugin.wait([plugin.invoke_tool("gcite", "validate_citations", parameters(i))])[0]
                one_by_one.append(session.ended_at - session.sent_at)
            start = time.perf_counter()
            ids = [plugin.invoke_tool("gcite", "validate_citations", parameters(i)) for i in range(IN_FLIGHT)]
            sessions = plugin.wait(ids, timeout=120)
            wall = time.perf_counter() - start
            assert all(s.ends == 1 and s.error is None for s in sessions)
    in_flight = [s.ended_at - s.sent_at for s in sessions]
    ms = 1000
    print_table(
        f"Packaged plugin over stdio (validate_citations, {package.size / 1024:.1f} KB package)",
        ("load", "requests", "req/s", "p50 ms", "p99 ms"),
        [
            (
                "one at a time",
                SEQUENTIAL,
                f"{SEQUENTIAL / sum(one_by_one):.0f}",
                f"{statistics.median(one_by_one) * ms:.2f}",
                f"{percentile(one_by_one, 99) * ms:.2f}",
            ),
            (
                f"{IN_FLIGHT} in flight, one connection",
                IN_FLIGHT,
                f"{IN_FLIGHT / wall:.0f}",
                f"{statistics.median(in_flight) * ms:.2f}",
                f"{percentile(in_flight, 99) * ms:.2f}",
            ),
        ],
    )
    return True
