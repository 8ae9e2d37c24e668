"""The app's graph as retrofit edits it: nodes by id, edges, what lies downstream, and the canvas (a new node goes
beside what it joins, on a free spot). No pass of its own: every pass reads and writes the graph through this."""

import unicodedata
from typing import Any

from gcite.authoring.retrofit.reading import RetrofitRefusal

DEFAULT_SIZE = (244, 90)
GAP = 40


class Graph:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.workflow = document["workflow"]
        self.graph = self.workflow["graph"]
        self.graph.setdefault("edges", [])
        self.nodes: list[dict[str, Any]] = self.graph["nodes"]
        self.by_id = {n["id"]: n for n in self.nodes}

    def type_of(self, node_id: str) -> str:
        return str(self.by_id[node_id]["data"].get("type", "")) if node_id in self.by_id else ""

    def title(self, node_id: str) -> str:
        title = str(self.by_id[node_id]["data"].get("title") or self.type_of(node_id)).strip()
        return f'"{printable(title)}" ({printable(node_id)})'
    @property
    def edges(self) -> list[dict[str, Any]]:
        return self.graph["edges"]

    def has_edge(self, source: str, target: str) -> bool:
        return any(e.get("source") == source and e.get("target") == target for e in self.edges)

    def add_edge(self, source: str, target: str, handle: str = "source") -> None:
        self.edges.append({
            "id": f"{source}-{handle}-{target}-target", "source": source, "sourceHandle": handle, "target": target,
            "targetHandle": "target", "type": "custom", "zIndex": 0,
            "data": {"sourceType": self.type_of(source), "targetType": self.type_of(target), "isInIteration": False,
                     "isInLoop": False}})

    def remove_edge(self, source: str, target: str) -> None:
        self.graph["edges"] = [e for e in self.edges if not (e.get("source") == source and e.get("target") == target)]

    def children(self, node_id: str) -> list[str]:
        return [e["target"] for e in self.edges if e.get("source") == node_id]

    def downstream(self, node_id: str) -> set[str]:
        seen: set[str] = set()
        todo = self.children(node_id)
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo += self.children(current)
        return seen

    def start_id(self) -> str:
        starts = [n["id"] for n in self.nodes if n["data"].get("type") == "start" and not n.get("parentId")]
        if len(starts) != 1:
            raise RetrofitRefusal(f"cannot rewire safely: the graph has {len(starts)} Start nodes, not one")
        return starts[0]

    # the canvas: a new node goes beside what it joins, on a free spot
    def box(self, node: dict[str, Any]) -> tuple[float, float, float, float]:
        position = node.get("positionAbsolute") or node.get("position") or {}
        x, y = float(position.get("x") or 0), float(position.get("y") or 0)
        return x, y, float(node.get("width") or DEFAULT_SIZE[0]), float(node.get("height") or DEFAULT_SIZE[1])

    def free_spot(self, x: float, y: float) -> tuple[int, int]:
        width, height = DEFAULT_SIZE
        boxes = [self.box(n) for n in self.nodes]
        for step in range(0, 60):
            candidate_y = y + (step // 2 + step % 2) * (height + GAP) * (1 if step % 2 else -1) if step else y
            if not any(cx - GAP < x + width and x < cx + cw + GAP and cy - GAP < candidate_y + height
                       and candidate_y < cy + ch + GAP for cx, cy, cw, ch in boxes):
                return round(x), round(candidate_y)
        return round(x), round(max(b[1] + b[3] for b in boxes) + GAP)

    def position_near(self, *anchors: str, dx: float = 0, dy: float = 0) -> tuple[int, int]:
        points = [self.box(self.by_id[a]) for a in anchors if a in self.by_id]
        x = sum(p[0] for p in points) / len(points) + dx
        y = sum(p[1] for p in points) / len(points) + dy
        return self.free_spot(x, y)

    def add_node(self, node: dict[str, Any]) -> None:
        self.nodes.append(node)
        self.by_id[node["id"]] = node


def printable(text: str) -> str:
    """`text` with every control, format (bidi, zero-width) and line or paragraph separator character escaped
    (`\\u202e`), so a name from the DSL cannot hide, reorder or forge a line on the builder's terminal."""
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs") else c
                   for c in str(text))
