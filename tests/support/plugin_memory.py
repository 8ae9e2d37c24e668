"""The plugin's memory: what manifest.yaml declares, and what a process tree used at its peak (Linux /proc)."""

from pathlib import Path

from gcite import ROOT
from tests.support.yamltext import safe_load


def declared_memory() -> int:
    """`resource.memory` as manifest.yaml declares it, in bytes."""
    manifest = safe_load((ROOT / "manifest.yaml").read_text(encoding="utf-8"))
    return int(manifest["resource"]["memory"])


def process_tree(pid: int) -> list[int]:
    """`pid` and every process under it."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").iterdir():
            try:
                queue += [int(child) for child in (task / "children").read_text().split()]
            except OSError:  # the task ended while we looked
                pass
    return found


def peak_rss(pid: int) -> int:
    """The peak resident memory of `pid` and its children, in bytes (the sum of each one's VmHWM)."""
    total = 0
    for each in process_tree(pid):
        try:
            status = Path(f"/proc/{each}/status").read_text()
        except OSError:
            continue
        total += int(status.split("VmHWM:")[1].split()[0]) * 1024
    return total
