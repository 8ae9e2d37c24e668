"""Finding the retrieval → LLM paths to rewire, and checking them before anything changes.

A path is an LLM node whose context comes from Knowledge Retrieval node(s): directly, or through a variable
aggregator of retrieval results (`Target`). An LLM whose context is a G-Cite merge node was retrofitted by an
earlier run; every other LLM is left as it is, with a note saying why.
"""

from typing import Any

from gcite.authoring.retrofit.access import our_conditions
from gcite.authoring.retrofit.graph import Graph
from gcite.authoring.retrofit.plan import KINDS, Plan, Target, is_ours, query_selector
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
    if selector[1:] == ["formatted_chunks"] and is_ours(graph, source, "merge"):
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
            raise RetrofitRefusal(f"cannot rewire safely: the context of LLM {graph.title(llm_id)} comes from "
                                  f"aggregator {graph.title(source)}, which also aggregates {', '.join(others)} "
                                  f"(not Knowledge Retrieval results)")
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
    check_ids(plan)


# what a web search may send to the third-party provider: the user's question, never the app's settings
QUESTION_SYSTEM_VARIABLES = ("query",)


def check_web_query(plan: Plan, target: Target) -> None:
    """Check (`--web gcite`): the web search would send the path's question to a third-party search provider, so
    that question must be the user's: refused when the retrieval's query is an environment variable (a secret,
    perhaps), a system variable other than sys.query (user id, app id, files…) or a conversation variable."""
    g = plan.graph
    query = query_selector(g, target)
    retrieval = g.title(target.retrievals[0])
    where = ".".join(query)
    why = None
    if query[0] == "env":
        why = f"the environment variable {where} (a setting of the app, secret ones included)"
    elif query[0] == "sys" and query[1:] != list(QUESTION_SYSTEM_VARIABLES):
        why = f"the system variable {where}, not the user's question"
    elif query[0] == "conversation":
        why = f"the conversation variable {where}, not the user's question"
    if why:
        raise RetrofitRefusal(f"--web gcite: the web search would send the query of retrieval {retrieval}, {why}, "
                              f"to a third-party search provider; set that retrieval's query to the user's question "
                              f"(sys.query, or the Start input holding it) in Dify, or retrofit without --web gcite")


def check_ids(plan: Plan) -> None:
    """Check, before anything changes: every id this run may add is free or already the node G-Cite adds there
    (by what that node is, `is_ours`), and no two added nodes share an id. Reads every id in the file; writes
    nothing; refuses an id taken by a node G-Cite did not add, naming it and the next step."""
    g = plan.graph
    owners = [t.llm for t in plan.targets] + plan.done
    wanted = {(kind, llm) for llm in owners for kind in KINDS if kind != "acl_roles"}
    if plan.options.acl:
        wanted.add(("acl_roles", g.start_id()))
    seen: dict[str, tuple[str, str]] = {}
    for kind, owner in sorted(wanted):
        node_id = plan.id_of(kind, owner)
        if node_id in seen:  # by construction this does not happen; checked all the same
            raise RetrofitRefusal(f"cannot rewire safely: the {kind} node of {g.title(owner)} and the "
                                  f"{seen[node_id][0]} node of {g.title(seen[node_id][1])} would share the id "
                                  f"{node_id}; report this with the file to the G-Cite team")
        seen[node_id] = (kind, owner)
        if node_id in g.by_id and not is_ours(g, node_id, kind):
            raise RetrofitRefusal(f"cannot rewire safely: node id {node_id} is taken by a node G-Cite did not add "
                                  f"({g.title(node_id)}); delete it in Dify and add it again (a new node gets a "
                                  f"new id), export the app and retrofit that file")


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
            raise RetrofitRefusal(f"cannot rewire safely: --acl would replace the {mode} metadata filter of "
                                  f"retrieval {g.title(r)}")
    if plan.options.web == "gcite":
        check_web_query(plan, target)
    for message in prompt_messages(llm["data"]):
        if message.get("edition_type") == "jinja2":
            raise RetrofitRefusal(f"cannot rewire safely: LLM {g.title(target.llm)} has a Jinja2 prompt; "
                                  f"add the rules by hand (docs/retrofit.md)")
    if not prompt_messages(llm["data"]):
        raise RetrofitRefusal(f"cannot rewire safely: LLM {g.title(target.llm)} has no prompt_template")
