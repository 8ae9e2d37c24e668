"""`--memory`: the multi-turn memory of our chatflows (the conversation variables, the remember and save nodes
after the validate node; the history section of the prompt is `prompt.rewrite_prompt`'s), and the note on Dify's
built-in memory, whose earlier answers carry their markers into the prompt."""

from gcite.authoring import chatflows as dsl_build
from gcite.authoring.retrofit.graph import DEFAULT_SIZE, GAP
from gcite.authoring.retrofit.plan import Plan, Target, query_selector


def add_memory(plan: Plan, target: Target, v: dsl_build.Variant, validate: str) -> None:
    """Pass: the turn is remembered without its markers.

    Reads the conversation variables and the path's question. Writes the conversation variables our chatflows
    keep (those missing), the remember node after the validate node and the save node after it (unless an earlier
    run added them), with their edges."""
    g = plan.graph
    variables = plan.document["workflow"].setdefault("conversation_variables", [])
    have = {x.get("name") for x in variables}
    for variable in dsl_build.conversation_variables(dsl_build.Variant(plugin=True, lang=v.lang)):
        if variable["name"] in have:
            continue
        variables.append(variable)
        plan.change(f"conversation variable added: {variable['name']} ({variable['value_type']})")
    remember = plan.id_of("remember", target.llm)
    if remember in g.by_id:
        return
    question = query_selector(g, target) if target.retrievals else ["sys", "query"]
    x, y = g.position_near(validate, dy=DEFAULT_SIZE[1] + 2 * GAP)
    node = dsl_build.code_node(
        remember,
        x,
        y,
        v.text["remember"],
        "remember_turn",
        {"history": ["conversation", "history"], "query": question, "answer": [validate, "answer_without_markers"]},
        {"history": "array[object]", "history_text": "string"},
        code=dsl_build.remember_code(v.lang),
    )
    plan.add_node(node, "keeps the turn without its markers")
    g.add_edge(validate, remember)
    plan.change(f"edge added: {validate} → {remember}")
    save = plan.id_of("save_history", target.llm)
    x, y = g.position_near(remember, dx=DEFAULT_SIZE[0] + 2 * GAP)
    generated = next(n for n in dsl_build.common_nodes(v) if n["id"] == "save_history")
    node = dsl_build.node(
        save,
        x,
        y,
        {
            **generated["data"],
            "items": [{**item, "value": [remember, item["value"][1]]} for item in generated["data"]["items"]],
        },
    )
    plan.add_node(node, "saves the history in the conversation variables")
    g.add_edge(remember, save)
    plan.change(f"edge added: {remember} → {save}")


def note_builtin_memory(plan: Plan, llm: str) -> None:
    """Pass: a note when the LLM keeps Dify's built-in memory (a `memory.window`). Reads the LLM; writes a note."""
    g = plan.graph
    if (g.by_id[llm]["data"].get("memory") or {}).get("window") is not None:
        plan.notes.append(
            f"LLM {g.title(llm)} keeps Dify's built-in memory, whose earlier answers carry their "
            f"[C:N] markers into the prompt; "
            + (
                "G-Cite's marker-free memory is added too: turn the built-in one off in Dify"
                if plan.options.memory
                else "--memory gives the marker-free memory of G-Cite's chatflows"
            )
        )
