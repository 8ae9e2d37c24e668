"""`--answer cited`: the G-Cite plugin's `cited_answer` tool takes the place of a retrofitted LLM node, carrying its
model (provider, name, mode, completion parameters) and its system prompt; the Answer nodes that showed the LLM's
text show the tool's two stream variables (`citations.answer_layout.cited_template`: the answer with clean
citations as it is written, then its sources), and every other reference to the LLM's text reads the answer without
its citations. An LLM using what the tool cannot carry (`uncarried`) stays an LLM node, retrofitted as with
`--answer llm-node`, and a note names what kept it.

The node is our chatflows' (`dsl_nodes.cited_answer_tool`); nothing of it is repeated here. Dify's native citation
panel is fed only by an LLM node's context (`panel_note` says so in the report)."""

import re
from typing import Any

from citations.answer_layout import CITED_MEMORY, STYLE_INPUT, cited_template
from citations.memory import DEFAULT_MAX_TURNS
from gcite.authoring import chatflows as dsl_build
from gcite.authoring.dsl_nodes import cited_answer_tool, mixed, variable
from gcite.authoring.retrofit.answers import answers_showing
from gcite.authoring.retrofit.plan import Plan, Target, is_ours, query_selector, template_of
from gcite.authoring.retrofit.prompt import CONTEXT, builder_text, insufficient_phrases, lang_of, prompt_messages
from gcite.authoring.retrofit.reading import RetrofitRefusal

# what the tool outputs in place of what the LLM node did: its text (markers gone, no citations) and its usage
CARRIED_OUTPUTS = {"text": CITED_MEMORY, "usage": "usage"}
HISTORY = "{{#conversation.history_text#}}"  # G-Cite's memory (--memory), as our chatflows give it to the tool


def uncarried(plan: Plan, llm_id: str) -> list[str]:
    """What the LLM node uses that `cited_answer` cannot carry, one phrase each (none: it can take the LLM's
    place). Reads the LLM node, the options (`memory`) and every reference to the LLM's outputs."""
    g, data = plan.graph, plan.graph.by_id[llm_id]["data"]
    why = []
    inside = g.container_of(llm_id)
    if inside is not None:
        why.append(f"place inside {g.title(inside)} (an Answer there cannot show a tool's stream)")
    model = data.get("model")
    if not isinstance(model, dict) or not all(isinstance(model.get(k), str) and model[k] for k in ("provider", "name")):
        why.append("model (its data names no provider and name to carry)")
    if (data.get("vision") or {}).get("enabled"):
        why.append("vision (the images it reads)")
    if data.get("structured_output_enabled"):
        why.append("structured output")
    messages = prompt_messages(data)
    if any(m.get("edition_type") == "jinja2" for m in messages):
        why.append("Jinja2 prompt")
    if isinstance(data.get("prompt_template"), dict) or (data.get("model") or {}).get("mode") == "completion":
        why.append("completion-mode prompt")
    users = sum(1 for m in messages if m.get("role") == "user")
    assistants = sum(1 for m in messages if m.get("role") == "assistant")
    if users > 1 or assistants:
        why.append(f"prompt of {users} user and {assistants} assistant messages (the tool asks one question)")
    memory = data.get("memory")
    if memory is not None:
        window = memory.get("window") or {}
        size = window.get("size") if window.get("enabled") else None
        turns = f"{size} turns" if size is not None else "every turn that fits"
        if not plan.options.memory:
            why.append(
                f"built-in memory ({turns}; --memory gives cited_answer G-Cite's memory of {DEFAULT_MAX_TURNS} turns)"
            )
        elif size is None or int(size) > DEFAULT_MAX_TURNS:
            why.append(f"built-in memory of {turns}, more than G-Cite's memory keeps ({DEFAULT_MAX_TURNS} turns)")
    if data.get("error_strategy"):
        why.append(f"error handling ({data['error_strategy']})")
    if (data.get("retry_config") or {}).get("retry_enabled"):
        why.append("retry on failure")
    others = sorted({o for _, o in references(plan, llm_id)} - set(CARRIED_OUTPUTS))
    if others:
        why.append(f"output{'s' if len(others) > 1 else ''} {', '.join(others)} read by other nodes")
    return why


def references(plan: Plan, llm_id: str) -> list[tuple[str, str]]:
    """(node id, output name) of every reference to the LLM's outputs in another node's data: a selector
    `[llm, output, …]` or a template `{{#llm.output…#}}`."""
    found = []
    pattern = re.compile(r"\{\{#" + re.escape(llm_id) + r"\.([A-Za-z0-9_]+)")

    def walk(value: Any, node_id: str) -> None:
        if isinstance(value, str):
            found.extend((node_id, m.group(1)) for m in pattern.finditer(value))
        elif isinstance(value, list):
            if len(value) >= 2 and value[0] == llm_id and isinstance(value[1], str):
                found.append((node_id, value[1]))
            for item in value:
                walk(item, node_id)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item, node_id)

    for node in plan.graph.nodes:
        if node["id"] != llm_id:
            walk(node["data"], node["id"])
    return found


def rewired(value: Any, llm_id: str, cite: str) -> Any:
    """`value` with each reference to the LLM's text or usage reading the tool's output in its place."""
    if isinstance(value, str):
        for output, to in CARRIED_OUTPUTS.items():
            value = re.sub(
                r"\{\{#" + re.escape(f"{llm_id}.{output}") + r"(?=[.#])", lambda _, to=to: "{{#" + f"{cite}.{to}", value
            )
        return value
    if isinstance(value, list):
        if len(value) >= 2 and value[0] == llm_id and isinstance(value[1], str) and value[1] in CARRIED_OUTPUTS:
            return [cite, CARRIED_OUTPUTS[value[1]], *value[2:]]
        return [rewired(item, llm_id, cite) for item in value]
    if isinstance(value, dict):
        return {key: rewired(item, llm_id, cite) for key, item in value.items()}
    return value


def style_input(plan: Plan, lang: str) -> list[str]:
    """The hidden Start input the tool's `style` reads, as in our chatflows (empty: the tool's default,
    superscripts; G-Cite's own readers send canonical markers): added once. Its selector."""
    g = plan.graph
    start = g.start_id()
    variables = g.by_id[start]["data"].setdefault("variables", [])
    if not any(x.get("variable") == STYLE_INPUT for x in variables):
        v = dsl_build.Variant(lang=lang, answer="cited")
        variables.append(next(x for x in dsl_build.start_variables(v) if x["variable"] == STYLE_INPUT))
        plan.change(
            f"input added: Start {g.title(start)} gains the hidden {STYLE_INPUT} input (empty: cited_answer's "
            f"superscripts; G-Cite's own clients ask for markers)"
        )
    return [start, STYLE_INPUT]


def question(plan: Plan, target: Target, data: dict[str, Any]) -> str:
    """What the tool is asked: the LLM's one user message, else its memory's query template, else the path's
    question (the retrieval's query); `{{#context#}}` left out (the tool gives the chunks under its own heading)."""
    users = [str(m.get("text") or "") for m in prompt_messages(data) if m.get("role") == "user"]
    text = users[0] if users else str((data.get("memory") or {}).get("query_prompt_template") or "")
    text = text.replace(CONTEXT, "").strip()
    return text or template_of(query_selector(plan.graph, target))


def replace_llm(plan: Plan, target: Target, v: dsl_build.Variant, merge: str, upstream: str) -> str:
    """Pass (`--answer cited`, an LLM `uncarried` found nothing in): `cited_answer` in the LLM node's place.

    Reads the LLM node (model, system prompt, user message, edges) and every reference to its outputs. Writes the
    tool node at the LLM's position (its model, completion parameters and system prompt; the question; the merge
    node's chunks; G-Cite's memory with --memory; the style from a hidden Start input), the LLM's edges moved to it
    (the retrieval's edge replaced by the merge node's), the Answer nodes showing the LLM's text showing the tool's
    stream variables, every other reference to the LLM's text or usage reading the tool's, and removes the LLM node.
    Returns the tool node's id."""
    g, llm = plan.graph, target.llm
    node, cite, title = g.by_id[llm], plan.id_of("cite", llm), plan.graph.title(target.llm)
    data = node["data"]
    lang = lang_of(plan, llm)
    # the system prompt only: a user message is the question, never instructions (none: the tool's own defaults)
    instructions = builder_text(plan, llm, system_only=True).replace(CONTEXT, "").strip()
    parameters = {
        "query": mixed(question(plan, target, data)),
        "context": variable(merge, "formatted_chunks"),
        "chunk_metadata": variable(merge, "chunk_metadata"),
        **({"history": mixed(HISTORY)} if plan.options.memory else {}),
        **({"instructions": mixed(instructions)} if instructions else {}),
        "style": mixed(template_of(style_input(plan, v.lang))),
    }
    position = node.get("position") or {"x": 0, "y": 0}
    tool = cited_answer_tool(
        cite,
        round(position.get("x") or 0),
        round(position.get("y") or 0),
        v.text["cite"],
        plan.identifier,
        parameters,
        data["model"],
        insufficient_phrases(plan, llm, lang),
    )
    tool["position"], tool["positionAbsolute"] = dict(position), dict(node.get("positionAbsolute") or position)
    model = data["model"]
    params = ", ".join(sorted(model.get("completion_params") or {})) or "none"
    plan.add_node(
        tool,
        f"writes the answer in the place of LLM {g.title(llm)}: its model {model['provider']}/{model['name']} "
        f"(completion parameters: {params}) and "
        + (
            "its system prompt as instructions"
            if instructions
            else "no instructions (it has no system prompt of its own)"
        )
        + " (G-Cite's citation rules are the tool's own)"
        + (
            f"; {CONTEXT} left out: the tool gives the numbered chunks itself"
            if CONTEXT in builder_text(plan, llm)
            else ""
        ),
    )
    # each edge into the LLM ends at the tool, from its own source handle (an IF/ELSE's true and false both), but
    # the retrieval's own edge, which the merge node's replaces
    for edge in [e for e in g.edges if e.get("target") == llm]:
        source = str(edge["source"])
        if source == target.source and upstream == target.source:
            g.remove_edge(source, llm)
            plan.change(f"edge removed: {g.title(source)} → {g.title(llm)} (now through {merge})")
        else:
            g.move_target(edge, cite)
            handle = str(edge.get("sourceHandle") or "source")
            plan.change(
                f"edge moved: {g.title(source)} → {g.title(llm)} now ends at {cite}"
                + (f" (from its {handle} branch)" if handle != "source" else "")
            )
    g.add_edge(merge, cite)
    plan.change(f"edge added: {merge} → {cite}")
    for edge in [e for e in g.edges if e.get("source") == llm]:
        g.move_source(edge, cite)
        plan.change(f"edge moved: {g.title(llm)} → {g.title(str(edge['target']))} now leaves {cite}")
    shown, streams = template_of([llm, "text"]), cited_template(cite)
    for answer in answers_showing(plan, llm):
        answer_data = g.by_id[answer]["data"]
        answer_data["answer"] = str(answer_data["answer"]).replace(shown, streams)
        plan.change(
            f"answer rewired: Answer {g.title(answer)} shows {streams} (the answer with clean citations as it is "
            f"written, then its sources) instead of {shown}"
        )
    for other in dict.fromkeys(n for n, _ in references(plan, llm)):
        data_of = g.by_id[other]["data"]
        new = rewired(data_of, llm, cite)
        if new != data_of:
            data_of.clear()
            data_of.update(new)
            plan.change(
                f"selector rewired: {g.title(other)} reads {cite}.{CITED_MEMORY} (the answer without its "
                f"citations) in place of {llm}.text"
            )
    g.remove_node(llm)
    plan.change(f"node removed: LLM {title} — {cite} writes its answer")
    return cite


def kept_note(plan: Plan, llm_id: str, why: list[str]) -> None:
    """A note: `--answer cited` keeps this LLM node (retrofitted as with --answer llm-node), and why."""
    plan.notes.append(
        f"--answer cited: LLM {plan.graph.title(llm_id)} stays an LLM node (retrofitted as with --answer "
        f"llm-node): cited_answer cannot carry its {'; '.join(why)}"
    )


def complete_cited(plan: Plan, cite: str) -> None:
    """A `cited_answer` node an earlier run put in place of an LLM: what the options ask and it lacks. Reads the
    node's inputs and the nodes before its merge node; refuses --memory or --acl on one added without it (retrofit
    adds memory and access control on a first run only); notes that --answer clean, --web gcite and
    --sources-in-answer change nothing on it (its layout and web search are a first run's too, its sources shown)."""
    g = plan.graph
    parameters = g.by_id[cite]["data"].get("tool_parameters") or {}
    if plan.options.acl and not fed_by(plan, parameters, "filter"):
        # access control asked for and absent: written without it, the app would show every chunk to everyone
        raise RetrofitRefusal(
            f"--acl: {g.title(cite)} was put in place of an LLM before without access control, "
            f"which retrofit adds on a first run only: run it with --answer cited --acl on the app as "
            f"exported before G-Cite (not on its .gcite.yml)"
        )
    if plan.options.memory and "history" not in parameters:
        raise RetrofitRefusal(
            f"--memory: {plan.graph.title(cite)} was put in place of an LLM before without memory, which "
            f"retrofit adds on a first run only: run it with --answer cited --memory on the app as exported "
            f"before G-Cite (not on its .gcite.yml)"
        )
    if plan.options.answer == "clean":
        plan.notes.append(
            f"--answer clean: {g.title(cite)} was put in place of an LLM before (--answer cited) and is kept; the "
            f"layout is chosen on a first run only: run --answer clean on the app as exported before G-Cite"
        )
    if plan.options.sources_in_answer:  # the tool's `sources` are the list: nothing to add, and said so
        plan.notes.append(
            f"--sources-in-answer: {g.title(cite)} was put in place of an LLM before (--answer cited); its Answer "
            f"shows the tool's sources already, so no list is added (that option is for LLM nodes)"
        )
    if plan.options.web == "gcite" and not fed_by(plan, parameters, "web"):
        plan.notes.append(
            f"--web gcite: {g.title(cite)} was put in place of an LLM before without web search, which retrofit "
            f"adds on a first run only: run it with --answer cited --web gcite on the app as exported before G-Cite"
        )


def fed_by(plan: Plan, parameters: dict[str, Any], kind: str) -> bool:
    """The chunks the `cited_answer` node reads (`parameters`: its inputs) come through G-Cite's `kind` node
    (`filter`: --acl, `web`: --web gcite): its merge node (the `context` input's node) is fed by one of ours."""
    g = plan.graph
    selector = (parameters.get("context") or {}).get("value")
    merge = str(selector[0]) if isinstance(selector, list) and selector else ""
    return any(is_ours(g, str(e.get("source")), kind) for e in g.edges if e.get("target") == merge)


def panel_note(plan: Plan) -> None:
    """A note, where the app shows Dify's native citation panel (`features.retriever_resource`): it is fed only by
    an LLM node's context read as retrieval results, so it is empty for every retrofitted answer (the merge node
    gives the context as numbered text; `cited_answer` is no LLM node), and where the cited sources are instead.
    Reads the app's features and the changes so far (a run that changes nothing says nothing)."""
    feature = (plan.document["workflow"].get("features") or {}).get("retriever_resource") or {}
    if not feature.get("enabled") or not plan.changes:  # said when a run changes the app (a re-run: nothing)
        return
    g = plan.graph
    # what this run wrote: --answer cited with every LLM kept as an LLM node is the llm-node layout
    added = any(is_ours(g, n["id"], "cite") and n["id"] not in plan.cited for n in g.nodes)
    layout = "llm-node" if plan.options.answer == "cited" and not added else plan.options.answer
    shown = {
        "cited": "the Sources list cited_answer streams under each answer lists the cited chunks only",
        "clean": "the list under each clean answer names the cited chunks only",
        "llm-node": "the validate node's citations hold the cited chunks (--sources-in-answer lists them under the "
        "answer; --answer cited streams the answer with clean citations and its sources)",
    }[layout]
    plan.notes.append(
        "Dify's citation panel (Citations and Attributions, on in this app) is fed only by an LLM node's context "
        "of retrieval results; G-Cite's merge node gives the context as numbered text"
        + (" and cited_answer is no LLM node" if layout == "cited" else "")
        + f", so the panel stays empty for the retrofitted answers: {shown}"
    )
