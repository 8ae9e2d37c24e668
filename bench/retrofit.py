"""Retrofit placement: time per node on a synthetic chatflow of many parallel Knowledge Retrieval → LLM → Answer
paths (issue 33 item 5), at 200 and 2,000 nodes; target: per node at 2,000 at most 1.5× that at 200 (linear)."""

from bench.common import best_time, print_table, verdict
from gcite.authoring.dsl_nodes import node as dsl_node

TARGET = 1.5
SIZES = (200, 2_000)
IDENTIFIER = "gcite/gcite:0.0.0@" + "0" * 64


def synthetic(nodes: int) -> dict:
    """A chatflow of Start and (nodes - 1) // 3 parallel retrieval → LLM → Answer paths, laid out on a grid."""

    def node(node_id, x, y, data):
        return dsl_node(node_id, x, y, {"title": node_id, **data})

    def edge(source, target):
        return {
            "id": f"{source}-source-{target}-target",
            "source": source,
            "sourceHandle": "source",
            "target": target,
            "targetHandle": "target",
            "type": "custom",
            "data": {"sourceType": "", "targetType": "", "isInIteration": False, "isInLoop": False},
        }

    graph_nodes = [node("start", 0, 0, {"type": "start", "variables": []})]
    edges = []
    for n in range((nodes - 1) // 3):
        y = n * 130
        kr, llm, answer = f"kr{n}", f"llm{n}", f"answer{n}"
        graph_nodes += [
            node(
                kr,
                300,
                y,
                {
                    "type": "knowledge-retrieval",
                    "dataset_ids": ["d"],
                    "query_variable_selector": ["sys", "query"],
                    "retrieval_mode": "multiple",
                },
            ),
            node(
                llm,
                600,
                y,
                {
                    "type": "llm",
                    "model": {"provider": "p", "name": "m", "mode": "chat"},
                    "context": {"enabled": True, "variable_selector": [kr, "result"]},
                    "prompt_template": [{"role": "system", "text": "You answer from the context.\n{{#context#}}"}],
                },
            ),
            node(answer, 900, y, {"type": "answer", "answer": "{{#" + llm + ".text#}}", "variables": []}),
        ]
        edges += [edge("start", kr), edge(kr, llm), edge(llm, answer)]
    return {
        "app": {"mode": "advanced-chat", "name": "bench"},
        "kind": "app",
        "version": "0.1.5",
        "workflow": {"graph": {"nodes": graph_nodes, "edges": edges}, "features": {}},
    }


def placement_seconds(nodes: int) -> float:
    """The passes over the graph (placement and wiring), without reading or writing the YAML text."""
    import copy

    from gcite.authoring.retrofit import Options, run
    from gcite.authoring.retrofit.plan import Plan

    document = synthetic(nodes)
    options = Options(identifier=IDENTIFIER)
    return best_time(lambda: run(Plan(copy.deepcopy(document), options)), repeat=3)


def whole_seconds(nodes: int) -> float:
    """`retrofit` on the app's YAML text: reading, the passes and the spliced output."""
    import yaml

    from gcite.authoring.retrofit import Options, retrofit

    text = yaml.safe_dump(synthetic(nodes), allow_unicode=True)
    options = Options(identifier=IDENTIFIER)
    return best_time(lambda: retrofit(text, options), repeat=3)


def run_bench() -> tuple[list[tuple], dict[str, float]]:
    placement = {n: placement_seconds(n) / n for n in SIZES}
    whole = {n: whole_seconds(n) / n for n in SIZES}
    rows = [(f"{n:,}", f"{placement[n] * 1e6:.1f} µs", f"{whole[n] * 1e6:.1f} µs") for n in SIZES]
    return rows, {
        "placement and wiring": placement[SIZES[1]] / placement[SIZES[0]],
        "whole retrofit (read, passes, write)": whole[SIZES[1]] / whole[SIZES[0]],
    }


def run() -> bool:
    rows, ratios = run_bench()
    print_table(
        "retrofit: time per node (parallel retrieval → LLM → Answer paths)",
        ("nodes", "placement and wiring", "whole retrofit"),
        rows,
    )
    print_table(
        "retrofit: target",
        ("measure", "value", "target", "verdict"),
        [
            verdict(f"{name}: per node at {SIZES[1]:,} / at {SIZES[0]:,}", ratio, f"<= {TARGET}", ratio <= TARGET)
            for name, ratio in ratios.items()
        ],
    )
    return all(ratio <= TARGET for ratio in ratios.values())


if __name__ == "__main__":
    import sys

    sys.exit(0 if run() else 1)
