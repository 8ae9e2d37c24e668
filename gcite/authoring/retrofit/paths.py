"""Finding the retrieval → LLM paths to rewire, and checking them before anything changes.

A path is an LLM node whose context comes from Knowledge Retrieval node(s): directly, or through a variable
aggregator of retrieval results (`Target`). An LLM whose context is a G-Cite merge node was retrofitted by an
earlier run; every other LLM is left as it is, with a note saying why.
"""

from typing import Any

from gcite.authoring.retrofit.access import our_conditions
from gcite.authoring.retrofit.graph import Graph
from gcite.authoring.retrofit.plan import PREFIX, Plan, Target, new_id
from gcite.authoring.retrofit.prompt import prompt_messages
from gcite.authoring.retrofit.reading import RetrofitRefusal

AGGREGATORS = ("variable-aggregator", "variable-assigner")  # "variable-assigner" is the aggregator's old type name


def check_options(plan: Plan) -> None:
    """Check, first: what the options ask of the app is possible. Reads the options and the app's mode; refuses
    --memory on a workflow (it has no conversation variables)."""
    if plan.options.memory and plan.mode != "advanced-chat":
        raise RetrofitRefusal("--memory: a workflow-mode app has no conversation variables to remember turns in")


def find_paths(plan: Plan) -> None:
    """Pass: the paths to rewire.

    Reads every LLM node's context. Writes `plan.targets` (the paths), `plan.done` (the LLMs retrofitted before) and
    a note naming the LLMs left as they are and why; refuses an app with neither paths nor LLMs retrofitted before."""
    g = plan.graph
    llms = [n["id"] for n in g.nodes if n["data"].get("type") == "llm"]
    looked: list[str] = []
    for llm_id in llms:
        target, why = context_source(g, llm_id)
        if target is not None:
            plan.targets.append(target)
        elif why == "already retrofitted":
            plan.done.append(llm_id)
        else:
            looked.append(f"{g.title(llm_id)}: {why}")
    if not plan.targets and not plan.done:
        names = "; ".join(looked) if looked else "none (the app has no LLM node)"
        raise RetrofitRefusal(f"no Knowledge Retrieval → LLM context path; LLM nodes looked at: {names}")
    if looked:
        plan.notes.append("left as they are (their context is not retrieval results): " + "; ".join(looked))


def context_source(graph: Graph, llm_id: str) -> tuple[Target | None, str]:
    """The retrieval behind an LLM's context, or None and why not."""
    data = graph.by_id[llm_id]["data"]
    context = data.get("context") or {}
    selector = context.get("variable_selector") or []
    if not context.get("enabled") or not selector:
        return None, "context disabled"
    source = str(selector[0])
    if source not in graph.by_id:
        return None, f"context reads {'.'.join(map(str, selector))}, which no node outputs"
    kind = graph.type_of(source)
    if source.startswith(PREFIX) and selector[1:] == ["formatted_chunks"]:
        return None, "already retrofitted"
    if kind == "knowledge-retrieval":
        return Target(llm_id, source, list(selector), [source]), ""
    if kind in AGGREGATORS:
        aggregated = aggregator_inputs(graph.by_id[source]["data"], selector)
        retrievals = [s[0] for s in aggregated if s and graph.type_of(str(s[0])) == "knowledge-retrieval"]
        if aggregated and len(retrievals) == len(aggregated):
            return Target(llm_id, source, list(selector), retrievals), ""
        if retrievals:
            others = [".".join(map(str, s)) for s in aggregated if s and s[0] not in retrievals]
            raise RetrofitRefusal(
                f"cannot rewire safely: the context of LLM {graph.title(llm_id)} comes from "
                f"aggregator {graph.title(source)}, which also aggregates {', '.join(others)} "
                f"(not Knowledge Retrieval results)"
            )
        return None, f"context is {'.'.join(map(str, selector))} (an aggregator of no retrieval result)"
    return None, f"context is {'.'.join(map(str, selector))} (a {kind or 'missing'} node)"


def aggregator_inputs(data: dict[str, Any], selector: list[str]) -> list[list[str]]:
    """The selectors an aggregator's output (`output`, or a group's `<group>.output`) is chosen from."""
    settings = data.get("advanced_settings") or {}
    if settings.get("group_enabled"):
        group = selector[1] if len(selector) > 2 else None
        for g in settings.get("groups") or []:
            if g.get("group_name") == group:
                return [list(s) for s in g.get("variables") or []]
        return []
    return [list(s) for s in data.get("variables") or []]


def check_paths(plan: Plan) -> None:
    """Check, before anything changes: every path can be rewired safely.

    Reads each path's LLM and retrievals. Writes nothing; refuses a path inside an iteration or loop, a metadata
    filter --acl would replace, a Jinja2 or missing prompt, and an id retrofit needs that a node not of G-Cite's
    holds."""
    for target in plan.targets:
        check_path(plan, target)


def check_path(plan: Plan, target: Target) -> None:
    g = plan.graph
    llm = g.by_id[target.llm]
    if llm.get("parentId") or llm["data"].get("isInIteration") or llm["data"].get("isInLoop"):
        raise RetrofitRefusal(f"cannot rewire safely: LLM {g.title(target.llm)} is inside an iteration or loop")
    for r in target.retrievals:
        if g.by_id[r].get("parentId"):
            raise RetrofitRefusal(f"cannot rewire safely: retrieval {g.title(r)} is inside an iteration or loop")
        mode = g.by_id[r]["data"].get("metadata_filtering_mode") or "disabled"
        if plan.options.acl and mode != "disabled" and not our_conditions(plan, r):
            raise RetrofitRefusal(
                f"cannot rewire safely: --acl would replace the {mode} metadata filter of retrieval {g.title(r)}"
            )
    for message in prompt_messages(llm["data"]):
        if message.get("edition_type") == "jinja2":
            raise RetrofitRefusal(
                f"cannot rewire safely: LLM {g.title(target.llm)} has a Jinja2 prompt; "
                f"add the rules by hand (docs/retrofit.md)"
            )
    if not prompt_messages(llm["data"]):
        raise RetrofitRefusal(f"cannot rewire safely: LLM {g.title(target.llm)} has no prompt_template")
    for kind in ("merge", "validate", "filter", "web", "remember", "save_history"):
        node_id = new_id(kind, target.llm)
        if node_id in g.by_id and not ours(plan, node_id):
            raise RetrofitRefusal(f"cannot rewire safely: node id {node_id} is taken by a node G-Cite did not add")


def ours(plan: Plan, node_id: str) -> bool:
    """The node is one G-Cite added: its id has our prefix and it is a Code or assigner node or one of our tools."""
    data = plan.graph.by_id[node_id]["data"]
    return node_id.startswith(PREFIX) and (
        data.get("type") in ("code", "assigner") or str(data.get("provider_id", "")).startswith("gcite/")
    )
