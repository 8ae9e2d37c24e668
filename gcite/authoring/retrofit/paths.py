"""Finding the retrieval → LLM paths to rewire, and checking them before anything changes.

A path is an LLM node whose context comes from Knowledge Retrieval node(s): directly, or through a variable
aggregator of retrieval results (`Target`). An LLM whose context is a G-Cite merge node was retrofitted by an
earlier run; every other LLM is left as it is, with a note saying why.
"""

import re
from typing import Any

from gcite.authoring.retrofit.access import our_conditions
from gcite.authoring.retrofit.graph import Graph
from gcite.authoring.retrofit.plan import KINDS, Plan, Target, is_ours, query_selector
from gcite.authoring.retrofit.prompt import CONTEXT, prompt_messages
from gcite.authoring.retrofit.reading import RetrofitRefusal

AGGREGATORS = ("variable-aggregator", "variable-assigner")  # "variable-assigner" is the aggregator's old type name


def check_options(plan: Plan) -> None:
    """Check, first: what the options ask of the app is possible. Reads the options and the app's mode; refuses
    --memory on a workflow (it has no conversation variables) and --answer cited or clean on a workflow (it has no
    Answer node)."""
    if plan.options.memory and plan.mode != "advanced-chat":
        raise RetrofitRefusal(
            "--memory: a workflow-mode app has no conversation variables to remember turns in; "
            "retrofit without --memory"
        )
    if plan.options.answer != "llm-node" and plan.mode != "advanced-chat":
        raise RetrofitRefusal(
            f"--answer {plan.options.answer}: a workflow-mode app has no Answer node to show it in (its End "
            f"nodes get the cited sources as `citations`); retrofit without --answer"
        )


def find_paths(plan: Plan) -> None:
    """Pass: the paths to rewire.

    Reads every LLM node's context. Writes `plan.targets` (the paths), `plan.done` (the LLMs retrofitted before),
    `plan.cited` (the cited_answer nodes an earlier run put in place of an LLM) and a note naming the LLMs left as
    they are and why; refuses an app with no path and nothing retrofitted before."""
    g = plan.graph
    plan.cited = [n["id"] for n in g.nodes if is_ours(g, n["id"], "cite")]
    llms = [n["id"] for n in g.nodes if n["data"].get("type") == "llm"]
    looked: list[str] = []
    for llm_id in llms:
        target, why = context_source(g, llm_id, plan.options.enable_context)
        if target is not None:
            plan.targets.append(target)
        elif why == "already retrofitted":
            plan.done.append(llm_id)
        else:
            looked.append(f"{g.title(llm_id)}: {why}")
    if not plan.targets and not plan.done and not plan.cited:
        names = "; ".join(looked) if looked else "none (the app has no LLM node)"
        raise RetrofitRefusal(
            f"no Knowledge Retrieval → LLM context path; LLM nodes looked at: {names}; in Dify, "
            f"set an LLM's context to a Knowledge Retrieval node's result, export the app and "
            f"retrofit that file"
        )
    if looked:
        plan.notes.append("left as they are (their context is not retrieval results): " + "; ".join(looked))


def context_source(graph: Graph, llm_id: str, enable_context: bool = False) -> tuple[Target | None, str]:
    """The retrieval behind an LLM's context, or None and why not."""
    data = graph.by_id[llm_id]["data"]
    context = data.get("context") or {}
    selector = context.get("variable_selector") or []
    if not context.get("enabled") or not selector:
        return switched_off(graph, llm_id, enable_context)
    source = str(selector[0])
    if source not in graph.by_id:
        return None, f"context reads {'.'.join(map(str, selector))}, which no node outputs"
    kind = graph.type_of(source)
    if selector[1:] == ["formatted_chunks"] and is_ours(graph, source, "merge"):
        return None, "already retrofitted"
    if kind == "knowledge-retrieval":
        return Target(llm_id, source, list(selector), [source]), ""
    if kind in FORMATTERS:
        return through_formatter(graph, llm_id, source, list(selector))
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
                f"(not Knowledge Retrieval results); in Dify, set the LLM's context to the retrieval "
                f"result (or aggregate retrieval results only), export the app and retrofit that "
                f"file"
            )
        return None, f"context is {'.'.join(map(str, selector))} (an aggregator of no retrieval result)"
    return None, f"context is {'.'.join(map(str, selector))} (a {kind or 'missing'} node)"


FORMATTERS = ("template-transform", "code")
# what a template may do with the retrieval result and still only format it: loop over every chunk, print fields
PICKS = re.compile(
    r"\[|\|\s*(?:first|last|slice|batch|selectattr|rejectattr|random|sort|unique)\b"
    r"|\bloop\.(?:index|first|last)|\{%-?\s*if\b|\{%-?\s*break\b"
)


def through_formatter(graph: Graph, llm_id: str, node_id: str, selector: list[str]) -> tuple[Target | None, str]:
    """An LLM whose context is a Template or Code node's output: a path when that node only formats or joins one
    retrieval result (its one input; a template looping over every chunk, picking none), so the merge node can take
    the retrieval result itself; a refusal saying what to change in Dify when it does more; else not a path."""
    data = graph.by_id[node_id]["data"]
    inputs = [list(v.get("value_selector") or []) for v in data.get("variables") or [] if isinstance(v, dict)]
    retrievals = [s for s in inputs if s[:1] and graph.type_of(str(s[0])) == "knowledge-retrieval"]
    if not retrievals:
        return None, (
            f"context is {'.'.join(map(str, selector))} (a {graph.type_of(node_id)} node of no retrieval result)"
        )
    retrieval = retrievals[0]
    kind = "Template" if data.get("type") == "template-transform" else "Code"
    fix = (
        f"in Dify, set the context of LLM {graph.title(llm_id)} to {'.'.join(map(str, retrieval))} (the retrieval "
        f"result itself) and move what {kind} node {graph.title(node_id)} adds into the LLM's prompt, then export "
        f"the app and retrofit that file"
    )
    others = [".".join(map(str, s)) for s in inputs if s != retrieval]
    if others:
        raise RetrofitRefusal(
            f"cannot rewire safely: the context of LLM {graph.title(llm_id)} comes through {kind} "
            f"node {graph.title(node_id)}, which also uses {', '.join(others)}; {fix}"
        )
    if kind == "Template":
        name = next(
            str(v.get("variable")) for v in data["variables"] if list(v.get("value_selector") or []) == retrieval
        )
        template = str(data.get("template") or "")
        picks = [m.group(0) for m in PICKS.finditer(template)]
        if picks or name not in template:
            raise RetrofitRefusal(
                f"cannot rewire safely: the context of LLM {graph.title(llm_id)} comes through "
                f"Template node {graph.title(node_id)}, which picks among the chunks "
                f"({', '.join(dict.fromkeys(picks)) or 'does not show them'}), not only formats "
                f"them; {fix}"
            )
    elif len(data.get("outputs") or {}) != 1:
        raise RetrofitRefusal(
            f"cannot rewire safely: the context of LLM {graph.title(llm_id)} comes through Code node "
            f"{graph.title(node_id)}, which has {len(data.get('outputs') or {})} outputs, not one "
            f"joined text; {fix}"
        )
    source = str(retrieval[0])
    return Target(llm_id, source, [source, "result"], [source], formatter=node_id), ""


def switched_off(graph: Graph, llm_id: str, enable_context: bool) -> tuple[Target | None, str]:
    """An LLM whose context is switched off: a path when its prompt uses {{#context#}} (empty in Dify then) and one
    retrieval is the nearest upstream, with --enable-context; else not a path, and why (naming the flag)."""
    uses = any(CONTEXT in str(m.get("text") or "") for m in prompt_messages(graph.by_id[llm_id]["data"]))
    if not uses:
        return None, "context disabled"
    nearest = nearest_retrievals(graph, llm_id)
    if len(nearest) != 1:
        found = ", ".join(graph.title(r) for r in nearest) or "none"
        return None, (
            f"context disabled while its prompt uses {CONTEXT}, and the nearest Knowledge Retrieval "
            f"upstream is not one node ({found}): set its context in Dify"
        )
    if not enable_context:
        return None, (
            f"context disabled while its prompt uses {CONTEXT} (empty in Dify): --enable-context wires "
            f"it to {graph.title(nearest[0])}'s result"
        )
    return Target(llm_id, nearest[0], [nearest[0], "result"], [nearest[0]], enable=True), ""


def nearest_retrievals(graph: Graph, node_id: str) -> list[str]:
    """The Knowledge Retrieval nodes nearest upstream of `node_id` (the first level of a walk up the edges that
    has any)."""
    parents: dict[str, list[str]] = {}
    for e in graph.edges:
        parents.setdefault(str(e.get("target")), []).append(str(e.get("source")))
    seen, level = {node_id}, [node_id]
    while level:
        level = [p for n in level for p in parents.get(n, []) if p not in seen]
        seen.update(level)
        found = sorted({n for n in level if graph.type_of(n) == "knowledge-retrieval"})
        if found:
            return found
    return []


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
        raise RetrofitRefusal(
            f"--web gcite: the web search would send the query of retrieval {retrieval}, {why}, "
            f"to a third-party search provider; set that retrieval's query to the user's question "
            f"(sys.query, or the Start input holding it) in Dify, or retrofit without --web gcite"
        )


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
            raise RetrofitRefusal(
                f"cannot rewire safely: the {kind} node of {g.title(owner)} and the "
                f"{seen[node_id][0]} node of {g.title(seen[node_id][1])} would share the id "
                f"{node_id}; report this with the file to the G-Cite team"
            )
        seen[node_id] = (kind, owner)
        if node_id in g.by_id and not is_ours(g, node_id, kind):
            raise RetrofitRefusal(
                f"cannot rewire safely: node id {node_id} is taken by a node G-Cite did not add "
                f"({g.title(node_id)}); delete it in Dify and add it again (a new node gets a "
                f"new id), export the app and retrofit that file"
            )


def check_path(plan: Plan, target: Target) -> None:
    g = plan.graph
    llm = g.by_id[target.llm]
    inside = g.container_of(target.llm)
    if inside is None and (llm.get("parentId") or llm["data"].get("isInIteration") or llm["data"].get("isInLoop")):
        raise RetrofitRefusal(
            f"cannot rewire safely: LLM {g.title(target.llm)} is inside a container that is not "
            f"an iteration or loop of this file; export the app again from Dify and retrofit that "
            f"file"
        )
    if inside is not None:
        for option, on in (
            ("--acl", plan.options.acl),
            ("--web gcite", plan.options.web == "gcite"),
            ("--memory", plan.options.memory),
        ):
            if on:
                raise RetrofitRefusal(
                    f"{option}: LLM {g.title(target.llm)} is inside {g.title(inside)}, where "
                    f"retrofit adds the merge and validate nodes only; retrofit without {option}"
                )
    for r in target.retrievals:
        if g.by_id[r].get("parentId") and g.container_of(r) != inside:
            raise RetrofitRefusal(
                f"cannot rewire safely: retrieval {g.title(r)} is inside another iteration or loop "
                f"than LLM {g.title(target.llm)}, so the merge node cannot read it; move both into "
                f"one container (or the retrieval before it) in Dify"
            )
        mode = g.by_id[r]["data"].get("metadata_filtering_mode") or "disabled"
        if plan.options.acl and mode != "disabled" and not our_conditions(plan, r):
            raise RetrofitRefusal(
                f"cannot rewire safely: --acl would replace the {mode} metadata filter of "
                f"retrieval {g.title(r)}; remove that filter in Dify (retrofit adds the role "
                f"pre-filter), or retrofit without --acl"
            )
    if plan.options.web == "gcite":
        check_web_query(plan, target)
    for message in prompt_messages(llm["data"]):
        if message.get("edition_type") == "jinja2":
            raise RetrofitRefusal(
                f"cannot rewire safely: LLM {g.title(target.llm)} has a Jinja2 prompt; "
                f"switch its prompt to the basic editor in Dify, or add the rules by hand "
                f"(docs/retrofit.md, The manual recipe)"
            )
    if not prompt_messages(llm["data"]):
        raise RetrofitRefusal(
            f"cannot rewire safely: LLM {g.title(target.llm)} has no prompt_template; give it a "
            f"prompt in Dify, export the app and retrofit that file"
        )
