"""Small chatflow DSLs for the runner's tests: a Start node, optionally one Code node, an Answer node."""

from typing import Any

import yaml


def edge(source: str, target: str) -> dict[str, Any]:
    return {
        "id": f"{source}-{target}",
        "source": source,
        "sourceHandle": "source",
        "target": target,
        "targetHandle": "target",
        "type": "custom",
        "data": {"sourceType": source, "targetType": target},
    }


def minimal_dsl(
    start_variables: list[dict[str, Any]] | None = None,
    code: str | None = None,
    code_inputs: dict[str, list[str]] | None = None,
    outputs: dict[str, str] | None = None,
    answer: str = "ok",
    conversation_variables: list[dict[str, Any]] | None = None,
    environment_variables: list[dict[str, Any]] | None = None,
) -> str:
    """start → [code →] answer. `outputs` maps a Code-node output to its type (e.g. "array[string]")."""
    nodes: list[dict[str, Any]] = [
        {
            "id": "start",
            "type": "custom",
            "data": {"type": "start", "title": "Start", "variables": start_variables or []},
        }
    ]
    edges = []
    last = "start"
    if code is not None:
        nodes.append(
            {
                "id": "code",
                "type": "custom",
                "data": {
                    "type": "code",
                    "title": "Code",
                    "code_language": "python3",
                    "code": code,
                    "variables": [{"variable": k, "value_selector": v} for k, v in (code_inputs or {}).items()],
                    "outputs": {k: {"type": t, "children": None} for k, t in (outputs or {}).items()},
                },
            }
        )
        edges.append(edge("start", "code"))
        last = "code"
    nodes.append(
        {
            "id": "answer",
            "type": "custom",
            "data": {"type": "answer", "title": "Answer", "answer": answer, "variables": []},
        }
    )
    edges.append(edge(last, "answer"))
    document = {
        "version": "0.1.5",
        "kind": "app",
        "app": {"name": "runner-test", "mode": "advanced-chat", "icon": "🤖", "icon_type": "emoji"},
        "dependencies": [],
        "workflow": {
            "environment_variables": environment_variables or [],
            "conversation_variables": conversation_variables or [],
            "features": {},
            "graph": {"nodes": nodes, "edges": edges},
        },
    }
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


def text_input(name: str, **extra: Any) -> dict[str, Any]:
    return {"variable": name, "label": name, "type": "text-input", "required": False, **extra}
