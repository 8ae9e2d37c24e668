"""Pass 1, reading the file: the DSL text → the app document, or a one-line refusal (`RetrofitRefusal`).

Reads: the text as given (a Dify app DSL in YAML, or the export API's `{"data": "<yaml>"}` form). Writes: nothing;
returns the document and whether it came wrapped. Every node field a later pass reads is checked here for the shape
Dify writes it in, so the passes after it can take those shapes for granted.
"""

from typing import Any

from gcite.safeyaml import DslReadError, read_dsl

APP_MODES = ("advanced-chat", "workflow")


EXPORT_AGAIN = "export the app again from Dify (Studio → app menu → Export DSL) and retrofit that file"


class RetrofitRefusal(ValueError):
    """The file is not a Dify app DSL, has nothing to retrofit, or has a shape that cannot be rewired safely."""


def parse(text: str) -> tuple[dict[str, Any], bool]:
    """The DSL document, and whether it came in the export API's `{"data": "<yaml>"}` form (read as JSON: an emoji
    escaped as a surrogate pair is the one character it stands for). Bounded (gcite/safeyaml.py): what cannot be
    read is one line with its position."""
    document, _yaml_text, wrapped = read_text(text)
    try:
        return check_document(document), wrapped
    except RetrofitRefusal as refusal:
        raise RetrofitRefusal(reading_refusal(refusal)) from None


def reading_refusal(refusal: RetrofitRefusal) -> str:
    """A refusal of `check_document`, with the next step."""
    return str(refusal) if str(refusal).startswith("app mode") else f"{refusal}; {EXPORT_AGAIN}"


def read_text(text: str) -> tuple[Any, str, bool]:
    """(document, its YAML text, wrapped), or a one-line refusal naming the position and the next step."""
    try:
        return read_dsl(text)
    except DslReadError as error:
        raise RetrofitRefusal(f"not a Dify app DSL: {error}; {EXPORT_AGAIN}") from None


def check_document(document: Any) -> dict[str, Any]:
    """The checks on the document's shape (every field a later pass reads, in the shape Dify writes it)."""
    if not isinstance(document, dict):
        raise RetrofitRefusal("not a Dify app DSL: the file is not a YAML mapping")
    kind = document.get("kind")
    if kind not in (None, "", "app"):
        raise RetrofitRefusal(f"not a Dify app DSL: kind is {kind!r}, not 'app'")
    version = document.get("version")
    if version is not None and not isinstance(version, str):
        # Dify's import: "Invalid version type, expected str"
        raise RetrofitRefusal(f"not a Dify app DSL: version must be a string, got {version!r}")
    app = document.get("app")
    if not isinstance(app, dict):
        raise RetrofitRefusal("not a Dify app DSL: it has no app section")
    mode = app.get("mode")
    if mode not in APP_MODES:
        raise RetrofitRefusal(
            f"app mode {mode!r} has no workflow graph to rewire: retrofit takes chatflows "
            f"(advanced-chat) and workflows; in Dify, create the app as a chatflow (or switch a "
            f"basic chatbot to workflow orchestration from its menu), export it and retrofit that "
            f"file"
        )
    graph = (document.get("workflow") or {}).get("graph") if isinstance(document.get("workflow"), dict) else None
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise RetrofitRefusal("not a Dify app DSL: it has no workflow.graph.nodes")
    for n, item in enumerate(graph["nodes"]):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not isinstance(item.get("data"), dict):
            raise RetrofitRefusal(f"not a Dify app DSL: workflow.graph.nodes[{n}] has no id or data")
    if not isinstance(graph.get("edges") or [], list):
        raise RetrofitRefusal("not a Dify app DSL: workflow.graph.edges is not a list")
    for n, edge in enumerate(graph.get("edges") or []):
        if (
            not isinstance(edge, dict)
            or not isinstance(edge.get("source"), str)
            or not isinstance(edge.get("target"), str)
        ):
            raise RetrofitRefusal(
                f"not a Dify app DSL: workflow.graph.edges[{n}] is not an edge (a mapping with source and target ids)"
            )
    dependencies = document.get("dependencies")
    if dependencies is not None and not (
        isinstance(dependencies, list) and all(isinstance(d, dict) for d in dependencies)
    ):
        raise RetrofitRefusal("not a Dify app DSL: dependencies is not a list of mappings")
    shapes = {
        "llm": (("context", dict, "a mapping"), ("prompt_template", (list, dict), "a list")),
        "end": (("outputs", list, "a list"),),
        "start": (("variables", list, "a list"),),
    }
    for item in graph["nodes"]:  # the node fields retrofit reads, in the shapes Dify writes them
        data = item["data"]
        for field, kind, shape in shapes.get(str(data.get("type")), ()):
            if data.get(field) is not None and not isinstance(data[field], kind):
                raise RetrofitRefusal(f"not a Dify app DSL: node {item['id']}'s {field} is not {shape}")
    return document
