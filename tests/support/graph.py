"""Reading a DSL graph in tests: which nodes run before a node."""

from collections.abc import Iterable, Mapping
from typing import Any


def upstream_of(edges: Iterable[Mapping[str, Any]], node_id: str) -> set[str]:
    """Every node with a path of edges to `node_id`."""
    parents: dict[str, set[str]] = {}
    for edge in edges:
        parents.setdefault(edge["target"], set()).add(edge["source"])
    seen: set[str] = set()
    todo = list(parents.get(node_id, ()))
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo += parents.get(current, ())
    return seen
