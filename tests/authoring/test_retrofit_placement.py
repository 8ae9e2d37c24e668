"""Placement (issue 33 item 5): the occupied-positions index finds the spot the scan over every node found, so new
nodes never overlap a node; and the work per path does not grow with the graph (`make bench`: bench/retrofit.py)."""

import copy
import time

from bench.retrofit import IDENTIFIER, synthetic
from gcite.authoring.retrofit import Options, run
from gcite.authoring.retrofit.graph import DEFAULT_SIZE, GAP, Graph
from gcite.authoring.retrofit.plan import Plan


def brute_force_spot(graph: Graph, x: float, y: float) -> tuple[int, int]:
    """The placement before the index: every node checked at every candidate."""
    width, height = DEFAULT_SIZE
    boxes = [graph.box(n) for n in graph.nodes]
    for step in range(0, 60):
        candidate_y = y + (step // 2 + step % 2) * (height + GAP) * (1 if step % 2 else -1) if step else y
        if not any(
            cx - GAP < x + width
            and x < cx + cw + GAP
            and cy - GAP < candidate_y + height
            and candidate_y < cy + ch + GAP
            for cx, cy, cw, ch in boxes
        ):
            return round(x), round(candidate_y)
    return round(x), round(max(b[1] + b[3] for b in boxes) + GAP)


def test_the_index_finds_the_spot_the_scan_found():
    graph = Graph(synthetic(301))
    for x, y in [(300, 0), (600, 130 * 50), (450, 65), (900, -500), (1200, 13_000), (0, 0), (612.5, 1234.5)]:
        assert graph.free_spot(x, y) == brute_force_spot(graph, x, y)
        node = {"id": f"n{x}-{y}", "data": {}, "position": dict(zip("xy", graph.free_spot(x, y)))}
        graph.add_node(node)  # the index follows added nodes
        assert graph.free_spot(x, y) == brute_force_spot(graph, x, y)


def test_added_nodes_overlap_no_node():
    plan = Plan(synthetic(601), Options(identifier=IDENTIFIER))
    run(plan)
    boxes = {n["id"]: plan.graph.box(n) for n in plan.graph.nodes}
    added = [i for i in boxes if i.startswith("gcite_")]
    assert len(added) == 2 * 200
    cells: dict = {}
    for node_id, (x, y, w, h) in boxes.items():
        cells.setdefault((int(x // 400), int(y // 200)), []).append((node_id, x, y, w, h))
    for node_id in added:
        x, y, w, h = boxes[node_id]
        for i in range(int(x // 400) - 1, int(x // 400) + 2):
            for j in range(int(y // 200) - 1, int(y // 200) + 2):
                for other, ox, oy, ow, oh in cells.get((i, j), []):
                    if other != node_id:
                        assert not (ox < x + w and x < ox + ow and oy < y + h and y < oy + oh), (node_id, other)


def per_node(nodes: int) -> float:
    document = synthetic(nodes)
    best = float("inf")
    for _ in range(3):
        copied = copy.deepcopy(document)
        started = time.perf_counter()
        run(Plan(copied, Options(identifier=IDENTIFIER)))
        best = min(best, time.perf_counter() - started)
    return best / nodes


def test_the_work_per_node_does_not_grow_with_the_graph():
    # a loose bound (shared machines): before the index it was 8x from 200 to 2,000 nodes
    assert per_node(1_600) / per_node(200) < 3
