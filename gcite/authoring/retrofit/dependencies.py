"""The G-Cite plugin as the app's dependency, so that Dify installs it with the app."""

from typing import Any

from gcite.authoring.retrofit.plan import GCITE_PLUGIN, Plan


def declare_dependency(plan: Plan) -> None:
    """Pass, last: the G-Cite plugin package in the app's `dependencies` when a node uses one of its tools.

    Reads the graph's tool nodes and the `dependencies` list. Writes the package's entry (added when absent, with a
    note when the file listed none and Dify derived them) and, with `--package` (an explicit identifier), the
    identifier on our tool nodes and on our entry where an earlier run named another build."""
    tools = [
        n
        for n in plan.graph.nodes
        if n["data"].get("type") == "tool" and str(n["data"].get("provider_id", "")).startswith("gcite/")
    ]
    if not tools:
        return
    refresh = plan.options.identifier is not None  # --package given: an earlier run's nodes name that build
    for node in tools if refresh else ():
        if node["data"].get("plugin_unique_identifier") != plan.identifier:
            node["data"]["plugin_unique_identifier"] = plan.identifier
            plan.change(f"plugin identifier updated: {plan.graph.title(node['id'])} now names {plan.identifier}")
    dependencies = plan.document.get("dependencies")
    if dependencies is None:
        dependencies = plan.document["dependencies"] = []
    ours = [
        d
        for d in dependencies
        if str(((d or {}).get("value") or {}).get("plugin_unique_identifier") or "").startswith(GCITE_PLUGIN)
    ]
    for dependency in ours if refresh else ():
        if dependency["value"]["plugin_unique_identifier"] != plan.identifier:
            dependency["value"]["plugin_unique_identifier"] = plan.identifier
            plan.change(f"dependency updated: the G-Cite plugin package is now {plan.identifier}")
    if ours:
        return
    if not dependencies:
        providers = sorted({p for p in (provider_of(n) for n in plan.graph.nodes) if p})
        if providers:
            plan.notes.append(
                "the file listed no plugin dependencies, so Dify derived them from the graph; "
                "with G-Cite listed it no longer does: install "
                + ", ".join(providers)
                + " in Dify yourself if they are not installed"
            )
    dependencies.append(
        {
            "current_identifier": None,
            "type": "package",
            "value": {"plugin_unique_identifier": plan.identifier, "version": None},
        }
    )
    plan.change(f"dependency added: {plan.identifier.split('@')[0]} (the G-Cite plugin package)")


def provider_of(node: dict[str, Any]) -> str | None:
    """The plugin an LLM node's model provider comes from (`langgenius/openai` for `openai`), or None."""
    model = node["data"].get("model") or {}
    provider = str(model.get("provider") or "")
    parts = provider.split("/")
    return "/".join(parts[:2]) if len(parts) == 3 else (f"langgenius/{provider}" if provider else None)
