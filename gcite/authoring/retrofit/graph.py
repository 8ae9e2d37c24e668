"""The app's graph as retrofit edits it: nodes by id, edges, what lies downstream, and the canvas (a new node goes
beside what it joins, on a free spot). No pass of its own: every pass reads and writes the graph through this."""

import unicodedata
from typing import Any

from gcite.authoring.retrofit.reading import RetrofitRefusal

DEFAULT_SIZE = (244, 90)
GAP = 40
CONTAINERS = {"iteration": ("isInIteration", "iteration_id"), "loop": ("isInLoop", "loop_id")}
CHILD_Z_INDEX = 1002  # Dify's canvas: ITERATION_CHILDREN_Z_INDEX / LOOP_CHILDREN_Z_INDEX


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

    # the edges, with an index of (source, target) pairs kept by add_edge, remove_edge and move_source; a removal
    # is applied to the list when the list is next read (`edges`), so a run of removals costs O(edges) once
    @property
    def edges(self) -> list[dict[str, Any]]:
        if getattr(self, "_removed", None):
            removed = self._removed
            self.graph["edges"] = [e for e in self.graph["edges"] if (e.get("source"), e.get("target")) not in removed]
            self._removed = set()
        return self.graph["edges"]

    def flush(self) -> None:
        """The edges removed by the passes leave the document's list (before it is written)."""
        self.graph["edges"] = self.edges

    def _index_pairs(self) -> dict[tuple[Any, Any], int]:
        if getattr(self, "_pairs", None) is None:
            self._pairs: dict[tuple[Any, Any], int] = {}
            for e in self.edges:
                key = (e.get("source"), e.get("target"))
                self._pairs[key] = self._pairs.get(key, 0) + 1
        return self._pairs

    def has_edge(self, source: str, target: str) -> bool:
        return (source, target) in self._index_pairs()

    def container_of(self, node_id: str) -> str | None:
        """The iteration or loop node `node_id` is inside (its `parentId`), or None at the top level."""
        parent = (self.by_id.get(node_id) or {}).get("parentId")
        return str(parent) if parent is not None and self.type_of(str(parent)) in CONTAINERS else None

    def add_edge(self, source: str, target: str, handle: str = "source") -> None:
        edges = self.edges if (source, target) in (getattr(self, "_removed", None) or ()) else self.graph["edges"]
        edge = {
            "id": f"{source}-{handle}-{target}-target",
            "source": source,
            "sourceHandle": handle,
            "target": target,
            "targetHandle": "target",
            "type": "custom",
            "zIndex": 0,
            "data": {
                "sourceType": self.type_of(source),
                "targetType": self.type_of(target),
                "isInIteration": False,
                "isInLoop": False,
            },
        }
        container = self.container_of(source)
        if container is not None and container == self.container_of(target):
            flag, key = CONTAINERS[self.type_of(container)]
            edge["data"].update({flag: True, key: container})
            edge["zIndex"] = CHILD_Z_INDEX
        edges.append(edge)
        pairs = self._index_pairs()
        pairs[(source, target)] = pairs.get((source, target), 0) + 1

    def remove_edge(self, source: str, target: str) -> None:
        if self._index_pairs().pop((source, target), None) is not None:
            if getattr(self, "_removed", None) is None:
                self._removed: set[tuple[Any, Any]] = set()
            self._removed.add((source, target))

    def move_source(self, edge: dict[str, Any], source: str) -> None:
        """The edge leaves `source` now (its id and sourceType follow)."""
        self._move(edge, "source", source)

    def move_target(self, edge: dict[str, Any], target: str) -> None:
        """The edge ends at `target` now, from the same source and source handle (its id and targetType follow)."""
        self._move(edge, "target", target)

    def _move(self, edge: dict[str, Any], end: str, node_id: str) -> None:
        """The edge's `end` ("source" or "target") is `node_id` now: its id, its data's sourceType or targetType and
        the index of node pairs follow."""
        pairs = self._index_pairs()
        old = (edge.get("source"), edge.get("target"))
        pairs[old] -= 1
        if not pairs[old]:
            del pairs[old]
        edge[end] = node_id
        edge["id"] = f"{edge['source']}-{edge.get('sourceHandle') or 'source'}-{edge['target']}-target"
        edge.setdefault("data", {})[f"{end}Type"] = self.type_of(node_id)
        new = (edge["source"], edge["target"])
        pairs[new] = pairs.get(new, 0) + 1

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
            raise RetrofitRefusal(
                f"cannot rewire safely: the graph has {len(starts)} Start nodes, not one; "
                f"export the app again from Dify and retrofit that file"
            )
        return starts[0]

    # the canvas: a new node goes beside what it joins, on a free spot
    def box(self, node: dict[str, Any]) -> tuple[float, float, float, float]:
        position = node.get("positionAbsolute") or node.get("position") or {}
        x, y = float(position.get("x") or 0), float(position.get("y") or 0)
        return x, y, float(node.get("width") or DEFAULT_SIZE[0]), float(node.get("height") or DEFAULT_SIZE[1])

    CELL = (320.0, 160.0)  # the occupied-positions index: boxes by the grid cells they overlap

    def _index(self) -> dict[tuple[int, int], list[tuple[float, float, float, float]]]:
        """The canvas index, built once (O(nodes)) and kept up to date by `add_node`: a candidate spot is checked
        against the boxes of the few cells it overlaps, not against every node."""
        if getattr(self, "_cells", None) is None:
            self._cells: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}
            self._bottom = float("-inf")
            for n in self.nodes:
                self._insert(self.box(n))
        return self._cells

    def _cells_of(self, x: float, y: float, w: float, h: float) -> list[tuple[int, int]]:
        cw, ch = self.CELL
        return [
            (i, j)
            for i in range(int((x - GAP) // cw), int((x + w + GAP) // cw) + 1)
            for j in range(int((y - GAP) // ch), int((y + h + GAP) // ch) + 1)
        ]

    def _insert(self, box: tuple[float, float, float, float]) -> None:
        cells = self._cells
        if box[2] * box[3] > 100 * self.CELL[0] * self.CELL[1]:  # a huge box (a container): one check each
            cells.setdefault(("big",), []).append(box)  # type: ignore[index]
        else:
            for cell in self._cells_of(*box):
                cells.setdefault(cell, []).append(box)
        self._bottom = max(self._bottom, box[1] + box[3])

    def free_spot(self, x: float, y: float) -> tuple[int, int]:
        width, height = DEFAULT_SIZE
        cells = self._index()
        for step in range(0, 60):
            candidate_y = y + (step // 2 + step % 2) * (height + GAP) * (1 if step % 2 else -1) if step else y
            near = [
                b for cell in [*self._cells_of(x, candidate_y, width, height), ("big",)] for b in cells.get(cell, ())
            ]  # type: ignore[arg-type]
            if not any(
                cx - GAP < x + width
                and x < cx + cw + GAP
                and cy - GAP < candidate_y + height
                and candidate_y < cy + ch + GAP
                for cx, cy, cw, ch in near
            ):
                return round(x), round(candidate_y)
        return round(x), round((self._bottom if self.nodes else y) + GAP)

    def position_near(self, *anchors: str, dx: float = 0, dy: float = 0) -> tuple[int, int]:
        points = [self.box(self.by_id[a]) for a in anchors if a in self.by_id]
        x = sum(p[0] for p in points) / len(points) + dx
        y = sum(p[1] for p in points) / len(points) + dy
        return self.free_spot(x, y)

    def put_inside(self, node: dict[str, Any], container: str) -> None:
        """`node` (placed at an absolute spot) becomes a child of the iteration or loop `container`, with the fields
        Dify writes on a node inside one: `parentId`, `data.isInIteration`/`iteration_id` (or `isInLoop`/
        `loop_id`), `zIndex`, its position relative to the container; the container grows to hold it."""
        parent = self.by_id[container]
        flag, key = CONTAINERS[self.type_of(container)]
        px, py, pw, ph = self.box(parent)
        x, y = node["position"]["x"], node["position"]["y"]
        node["parentId"] = container
        node["data"].update({"isInIteration": False, "isInLoop": False})
        node["data"].update({flag: True, key: container})
        node["zIndex"] = CHILD_Z_INDEX
        node["positionAbsolute"] = {"x": x, "y": y}
        node["position"] = {"x": round(x - px), "y": round(y - py)}
        width = max(pw, x - px + DEFAULT_SIZE[0] + GAP)
        height = max(ph, y - py + DEFAULT_SIZE[1] + GAP)
        if (width, height) != (pw, ph):
            for holder in (parent, parent["data"]):
                if "width" in holder or holder is parent:
                    holder["width"] = round(width)
                if "height" in holder or holder is parent:
                    holder["height"] = round(height)

    def remove_node(self, node_id: str) -> None:
        """The node leaves the graph (its edges are the caller's to move or remove first)."""
        node = self.by_id.pop(node_id)
        self.nodes.remove(node)

    def add_node(self, node: dict[str, Any]) -> None:
        self.nodes.append(node)
        self.by_id[node["id"]] = node
        if getattr(self, "_cells", None) is not None:
            self._insert(self.box(node))


def printable(text: str) -> str:
    """`text` with every control, format (bidi, zero-width) and line or paragraph separator character escaped
    (`\\u202e`), so a name from the DSL cannot hide, reorder or forge a line on the builder's terminal."""
    return "".join(
        f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs") else c for c in str(text)
    )
