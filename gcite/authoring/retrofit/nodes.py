"""The nodes around one LLM: the merge node (with the web search beside the retrieval, `--web gcite`) before it,
its context rewired to the merge node, the validate node after it; in a workflow, each End node after the LLM
outputs the validate node's citations. Each node is placed beside what it joins (`Graph.position_near`) and wired
as it is added, so the report reads node by node."""

import json
import re

from gcite.authoring import chatflows as dsl_build
from gcite.authoring.retrofit.graph import DEFAULT_SIZE, GAP
from gcite.authoring.retrofit.plan import Plan, Target, query_selector, template_of
from gcite.authoring.retrofit.prompt import insufficient_phrases, lang_of

# the start of the validate node's main, as the formatter writes it (on one line, or broken after "(")
VALIDATE_MAIN = re.compile(r"def main\(\s*answer, chunk_metadata=None, insufficient_phrases=INSUFFICIENT_DEFAULT")


def add_merge(plan: Plan, target: Target, v: dsl_build.Variant, rag: list[str], upstream: str) -> str:
    """Pass: the merge node that numbers the path's chunks (and the web results), unless an earlier run added it.

    Reads the options (`nodes`, `web`), the retrieval selector `rag` and the node it comes from (`upstream`: the
    retrieval, aggregator or filter node). Writes the merge node (our `merge_chunks` tool or its Code node), the
    web search node first with `--web gcite` (`add_web_search`), and the edges into the merge node. Returns its id."""
    g, o = plan.graph, plan.options
    node_id = plan.id_of("merge", target.llm)
    if node_id in g.by_id:
        return node_id
    web = add_web_search(plan, target, v) if o.web == "gcite" else None
    x, y = g.position_near(upstream, target.llm, dy=DEFAULT_SIZE[1] + 2 * GAP)
    if o.nodes == "plugin":
        inputs = {"rag_chunks": dsl_build.variable(*rag)}
        if web:
            inputs["web_chunks"] = dsl_build.variable(web, "json")
        node = dsl_build.gcite_tool(
            node_id,
            x,
            y,
            v.text["merge"],
            "merge_chunks",
            plan.identifier,
            inputs,
            {"max_web_results": dsl_build.SEARCH_TOP_K, "max_chunks": 30},
        )
    else:
        variables = {"rag_chunks": rag, **({"web_chunks": [web, "json"]} if web else {})}
        node = dsl_build.code_node(node_id, x, y, v.text["merge"], "merge_chunks", variables, dsl_build.MERGE_OUTPUTS)
    inside = g.container_of(target.llm)
    plan.add_node(
        node,
        f"numbers the chunks of {'.'.join(rag)}"
        + (" and the web results" if web else "")
        + (f", inside {g.title(inside)}" if inside else ""),
        inside=inside,
    )
    if g.container_of(upstream) == inside:
        g.add_edge(upstream, node_id)
        plan.change(f"edge added: {g.title(upstream)} → {node_id}")
    else:  # a retrieval outside the container: the merge node runs where the LLM's turn in the container starts
        for source, handle in dict.fromkeys(
            (str(e["source"]), str(e.get("sourceHandle") or "source")) for e in g.edges if e.get("target") == target.llm
        ):
            if g.container_of(source) == inside and source != node_id:
                g.add_edge(source, node_id, handle)
                plan.change(
                    f"edge added: {g.title(source)} → {node_id} (inside {g.title(inside)}; it reads "
                    f"{'.'.join(rag)} from outside)"
                )
    if web:
        g.add_edge(web, node_id)
        plan.change(f"edge added: {web} → {node_id}")
    return node_id


def add_web_search(plan: Plan, target: Target, v: dsl_build.Variant) -> str:
    """Pass (`--web gcite`, from `add_merge`): our `web_search` tool searching the web for the path's question.

    Reads the path's question (`query_selector`) and the edges into its retrievals. Writes the node and its incoming
    edges: those of the retrievals, branch handles included (else an edge from where the question comes from).
    Returns its id."""
    g = plan.graph
    node_id = plan.id_of("web", target.llm)
    if node_id in g.by_id:
        return node_id
    query = query_selector(g, target)
    node = dsl_build.web_search_node(dsl_build.Variant(lang=v.lang), plan.identifier)
    x, y = g.position_near(target.retrievals[0], dy=DEFAULT_SIZE[1] + 2 * GAP)
    node.update(dsl_build.node(node_id, x, y, {}), data=node["data"])
    node["data"]["tool_parameters"]["query"] = dsl_build.mixed(template_of(query))
    plan.add_node(node, f"searches the web for {'.'.join(query)}")
    # the search runs when the LLM's retrievals do: on their incoming edges, branch handles included, so on
    # whichever of their branches is taken (wired from Start instead, it would run on every branch and wake the
    # merge node of a skipped one; from one retrieval's edges only, it would miss the other branches)
    incoming = list(
        dict.fromkeys(
            (str(e["source"]), str(e.get("sourceHandle") or "source"))
            for e in g.edges
            if e.get("target") in target.retrievals and e.get("source") in g.by_id
        )
    )
    if not incoming:  # retrievals nothing leads to: after what the query comes from
        incoming = [(g.start_id() if query[0] == "sys" else query[0], "source")]
    for source, handle in incoming:
        g.add_edge(source, node_id, handle)
        branch = "" if handle == "source" else f" (branch {handle})"
        plan.change(f"edge added: {g.title(source)} → {node_id}{branch}")
    return node_id


def rewire_context(plan: Plan, target: Target, merge: str, upstream: str) -> None:
    """Pass: the LLM reads its context from the merge node.

    Reads the path and the merge node's id. Writes the edges (the path's source → LLM removed when nothing came
    between them, merge → LLM added) and the LLM's context selector (`<merge>.formatted_chunks`)."""
    g, llm = plan.graph, target.llm
    context = g.by_id[llm]["data"].setdefault("context", {})
    if target.enable:
        context["enabled"] = True
        plan.change(
            f"context enabled: LLM {g.title(llm)} had its context switched off while its prompt uses "
            f"{{{{#context#}}}} (--enable-context)"
        )
    if target.formatter:
        plan.notes.append(
            f"LLM {g.title(llm)}: {g.title(target.formatter)} formatted "
            f"{'.'.join(target.selector)} for the context; the merge node now numbers that result "
            f"itself, so {g.title(target.formatter)} no longer feeds the context (it still runs; delete "
            f"it in Dify if nothing else reads it)"
        )
    if g.has_edge(target.source, llm) and upstream == target.source:
        g.remove_edge(target.source, llm)
        plan.change(f"edge removed: {g.title(target.source)} → {g.title(llm)} (now through {merge})")
    if not g.has_edge(merge, llm):
        g.add_edge(merge, llm)
        plan.change(f"edge added: {merge} → {g.title(llm)}")
    old = ".".join(map(str, context.get("variable_selector") or [])) or "(none)"
    context["variable_selector"] = [merge, "formatted_chunks"]
    plan.change(f"selector rewired: LLM {g.title(llm)} context {old} → {merge}.formatted_chunks")


def add_validate(plan: Plan, target: Target, v: dsl_build.Variant, merge: str) -> str:
    """Pass: the validate node after the LLM (its text, the merge node's `chunk_metadata`, the question), unless an
    earlier run added it.

    Reads the options (`nodes`), the path's question (or, for an LLM retrofitted before, the one its merge node's
    retrieval asks: `question_of`). Writes the node, the edge LLM → validate, and in a workflow the End nodes'
    `citations` outputs (`end_outputs`). Returns its id."""
    g, o = plan.graph, plan.options
    node_id = plan.id_of("validate", target.llm)
    if node_id in g.by_id:
        return node_id
    question = query_selector(g, target) if target.retrievals else question_of(plan, merge)
    phrases = insufficient_phrases(plan, target.llm, lang_of(plan, target.llm))
    x, y = g.position_near(target.llm, dy=DEFAULT_SIZE[1] + 2 * GAP)
    if o.nodes == "plugin":
        node = dsl_build.gcite_tool(
            node_id,
            x,
            y,
            v.text["validate"],
            "validate_citations",
            plan.identifier,
            {
                "answer": dsl_build.mixed(template_of([target.llm, "text"])),
                "chunk_metadata": dsl_build.variable(merge, "chunk_metadata"),
                "question": dsl_build.mixed(template_of(question)),
            },
            {"insufficient_phrases": phrases},
        )
    else:
        node = dsl_build.code_node(
            node_id,
            x,
            y,
            v.text["validate"],
            "validate_citations",
            {"answer": [target.llm, "text"], "chunk_metadata": [merge, "chunk_metadata"], "question": question},
            dsl_build.VALIDATE_OUTPUTS,
        )
        # a Code node takes no constant: the phrases are the default of its main's parameter
        found = VALIDATE_MAIN.search(node["data"]["code"])
        if found is None:
            raise RuntimeError(f"nodes/validate_citations.py no longer starts main with {VALIDATE_MAIN.pattern!r}")
        code = node["data"]["code"]
        start = found.group().replace("INSUFFICIENT_DEFAULT", json.dumps(phrases, ensure_ascii=False))
        node["data"]["code"] = code[: found.start()] + start + code[found.end() :]
    inside = g.container_of(target.llm)
    plan.add_node(node, f"checks the markers of {g.title(target.llm)}", inside=inside)
    g.add_edge(target.llm, node_id)
    plan.change(f"edge added: {g.title(target.llm)} → {node_id}")
    if inside is not None:
        container_output(plan, target.llm, node_id, inside)
    if plan.mode == "workflow":
        end_outputs(plan, target.llm, node_id)
    return node_id


def question_of(plan: Plan, merge: str) -> list[str]:
    """The question of an LLM retrofitted before: the query of the retrieval its merge node reads, else sys.query."""
    node = plan.graph.by_id[merge]["data"]
    source = (node.get("tool_parameters") or {}).get("rag_chunks", {}).get("value") or next(
        (v["value_selector"] for v in node.get("variables") or [] if v["variable"] == "rag_chunks"), None
    )
    kr = plan.graph.by_id.get(str(source[0])) if source else None
    if kr is not None and kr["data"].get("type") == "knowledge-retrieval":
        return query_selector(plan.graph, Target("", "", [], [kr["id"]]))
    return ["sys", "query"]


def end_outputs(
    plan: Plan,
    llm_id: str,
    validate: str,
    output: str = "citations",
    value_type: str = "array[object]",
    name: str = "citations",
) -> None:
    """Each End node after the LLM outputs the validate node's `output` (as `name`, or `name_2`, … when taken).

    Reads the End nodes downstream of the LLM and their outputs. Writes an output on each that lacks it, and the
    edge validate → End where there is none."""
    g = plan.graph
    for end in sorted(n for n in g.downstream(llm_id) if g.type_of(n) == "end"):
        outputs = g.by_id[end]["data"].setdefault("outputs", [])
        if any(list(o.get("value_selector") or []) == [validate, output] for o in outputs):
            continue
        names = {o.get("variable") for o in outputs}
        name = next(n for n in (f"{name}{'' if k == 1 else f'_{k}'}" for k in range(1, 100)) if n not in names)
        outputs.append({"variable": name, "value_selector": [validate, output], "value_type": value_type})
        plan.change(f"output added: End {g.title(end)} outputs {name} = {validate}.{output}")
        if not g.has_edge(validate, end):
            g.add_edge(validate, end)
            plan.change(f"edge added: {validate} → {g.title(end)}")


def container_output(plan: Plan, llm: str, validate: str, container: str) -> None:
    """An LLM inside an iteration whose output is the LLM's text: each item's output becomes that text followed by
    the sources it cited (each item's merge node numbers its own chunks from 1, so an item's [C:N] markers are read
    against its own list), through a Template node after the validate node; a loop (whose outputs are its loop
    variables) gets a note saying which output to assign.

    Reads the container's `output_selector`. Writes the Template node, its edge and the new output selector."""
    g = plan.graph
    data = g.by_id[container]["data"]
    shown = template_of([validate, "references_by_marker_markdown"])
    if g.type_of(container) != "iteration":
        plan.notes.append(
            f"LLM {g.title(llm)} is inside loop {g.title(container)}: to carry each round's cited "
            f"sources out of the loop, assign {shown} to a loop variable in Dify"
        )
        return
    if list(data.get("output_selector") or []) != [llm, "text"]:
        plan.notes.append(
            f"iteration {g.title(container)} does not output the text of LLM {g.title(llm)}: its "
            f"output is kept; each item's cited sources are {shown}"
        )
        return
    node_id = plan.id_of("section", llm)
    if node_id not in g.by_id:
        x, y = g.position_near(validate, dx=DEFAULT_SIZE[0] + GAP)
        node = dsl_build.node(
            node_id,
            x,
            y,
            {
                "type": "template-transform",
                "title": "G-Cite: text and its sources",
                "template": "{{ text }}\n\n{{ sources }}",
                "variables": [
                    {"variable": "text", "value_selector": [llm, "text"], "value_type": "string"},
                    {
                        "variable": "sources",
                        "value_selector": [validate, "references_by_marker_markdown"],
                        "value_type": "string",
                    },
                ],
            },
        )
        plan.add_node(node, "each item's text with the sources it cited", inside=container)
        g.add_edge(validate, node_id)
        plan.change(f"edge added: {validate} → {node_id}")
    data["output_selector"] = [node_id, "output"]
    plan.change(
        f"output rewired: iteration {g.title(container)} outputs {node_id}.output (each item's text, then "
        f"the sources it cited) instead of {llm}.text"
    )
