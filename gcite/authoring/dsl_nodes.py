"""The pieces of a Dify chatflow DSL that our chatflows and retrofit both write: a node as Dify's editor writes
it, a Code node with its source bundled from the `citations` package (the memory node's labels and the pre-filter's
slot count set per variant), a G-Cite tool node, variable references, and the output schemas of our nodes."""

import uuid
from typing import Any

from citations.answer_layout import CITED_TOOL
from gcite.authoring.bundle import bundle
from gcite.authoring.variants import ID_NAMESPACE, ROLE_SLOTS


def node_code(name: str) -> str:
    """The Code node `name` as nodes/<name>.py holds it: bundled from the package (gcite/authoring/bundle.py)."""
    return bundle(name)


SLOTS_LINE = "DEFAULT_ROLE_SLOTS = {}\n"


TURN_LABELS_LINE = 'TURN_LABELS = ("{}", "{}")  # how `history_text` labels the user\'s and the assistant\'s words\n'
TURN_LABELS = {"zh": ("用户：", "助手："), "en": ("User: ", "Assistant: ")}


def remember_code(lang: str) -> str:
    """nodes/remember_turn.py with `history_text`'s turn labels in the variant's language (unchanged for Chinese)."""
    code = node_code("remember_turn")
    default = TURN_LABELS_LINE.format(*TURN_LABELS["zh"])
    if code.count(default) != 1:
        raise RuntimeError(f"nodes/remember_turn.py must define {default.strip()!r} exactly once")
    return code.replace(default, TURN_LABELS_LINE.format(*TURN_LABELS[lang]))


def prefilter_code(slots: int) -> str:
    """nodes/acl_prefilter.py with its default slot count set to `slots` (unchanged for the default count)."""
    code = node_code("acl_prefilter")
    default = SLOTS_LINE.format(ROLE_SLOTS)
    if code.count(default) != 1:
        raise RuntimeError(f"nodes/acl_prefilter.py must define {default.strip()!r} exactly once")
    return code.replace(default, SLOTS_LINE.format(slots))


def variable_id(kind: str, name: str) -> str:
    """A stable UUID for a conversation or environment variable (Dify stores the id in a UUID column)."""
    return str(uuid.uuid5(ID_NAMESPACE, f"{kind}/{name}"))


def node(node_id: str, x: int, y: int, data: dict[str, Any]) -> dict[str, Any]:
    """A node as Dify's editor writes it."""
    return {
        "id": node_id,
        "type": "custom",
        "position": {"x": x, "y": y},
        "positionAbsolute": {"x": x, "y": y},
        "width": 244,
        "height": 90,
        "selected": False,
        "sourcePosition": "right",
        "targetPosition": "left",
        "data": {"desc": "", "selected": False, **data},
    }


def code_node(
    node_id: str,
    x: int,
    y: int,
    title: str,
    source: str,
    variables: dict[str, list[str]],
    outputs: dict[str, str],
    code: str | None = None,
) -> dict[str, Any]:
    return node(
        node_id,
        x,
        y,
        {
            "type": "code",
            "title": title,
            "code_language": "python3",
            "code": code or node_code(source),
            "variables": [{"variable": name, "value_selector": selector} for name, selector in variables.items()],
            "outputs": {name: {"type": kind, "children": None} for name, kind in outputs.items()},
        },
    )


def gcite_tool(
    node_id: str,
    x: int,
    y: int,
    title: str,
    tool: str,
    identifier: str,
    parameters: dict[str, Any],
    configurations: dict[str, Any],
) -> dict[str, Any]:
    return node(
        node_id,
        x,
        y,
        {
            "type": "tool",
            "title": title,
            "provider_id": "gcite/gcite/gcite",
            "provider_name": "gcite/gcite/gcite",
            "provider_type": "builtin",
            "plugin_unique_identifier": identifier,
            "tool_name": tool,
            "tool_label": title,
            "is_team_authorization": True,
            "tool_configurations": configurations,
            "tool_parameters": parameters,
        },
    )


def model_selector(model: dict[str, Any]) -> dict[str, Any]:
    """An LLM node's `model` ({provider, name, mode, completion_params}) as a tool's model-selector value, the shape
    Dify's editor writes into `tool_configurations`."""
    return {
        "provider": model["provider"],
        "model": model["name"],
        "model_type": "llm",
        "mode": model.get("mode") or "chat",
        "completion_params": dict(model.get("completion_params") or {}),
    }


def cited_answer_tool(
    node_id: str,
    x: int,
    y: int,
    title: str,
    identifier: str,
    parameters: dict[str, Any],
    model: dict[str, Any],
    phrases: str,
) -> dict[str, Any]:
    """A `cited_answer` tool node: the LLM `model` (an LLM node's), its inputs and the refusals it recognises.
    `tool_node_version` "2": Dify 1.16 reads a model selector with the variable pool only then (graphon
    ToolNode._run), else the plugin would get it wrapped as {type, value}."""
    cite = gcite_tool(
        node_id,
        x,
        y,
        title,
        CITED_TOOL,
        identifier,
        parameters,
        {
            "model": model_selector(model),
            # a form value as Dify's editor writes it for a tool node with a version: {type, value} (a bare value is
            # skipped by Dify 1.16's ToolManager._convert_tool_parameters_type when it reads with the variable pool)
            "insufficient_phrases": {"type": "constant", "value": phrases},
        },
    )
    cite["data"]["tool_node_version"] = "2"
    return cite


def variable(*selector: str) -> dict[str, Any]:
    return {"type": "variable", "value": list(selector)}


def mixed(template: str) -> dict[str, Any]:
    return {"type": "mixed", "value": template}


MERGE_OUTPUTS = {
    "formatted_chunks": "string",
    "chunk_count": "number",
    "chunk_metadata": "array[object]",
    "skipped": "array[object]",
}
FILTER_OUTPUTS = {
    "chunks": "array[object]",
    "kept_count": "number",
    "dropped_count": "number",
    "dropped": "array[object]",
    "warnings": "array[string]",
}
VALIDATE_OUTPUTS = {
    "answer": "string",
    "answer_without_markers": "string",
    "citations": "array[object]",
    "id_map": "object",
    "invalid_ids": "array[string]",
    "status": "string",
    "references_markdown": "string",
    "references_by_marker_markdown": "string",
    "uncited_sentences": "array[string]",
    "citation_recall_proxy": "number",
    "citation_precision_proxy": "number",
}
