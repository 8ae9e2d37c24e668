"""`--answer clean`: each Answer node showing the LLM's text shows the validate node's clean answer and its list
instead (`clean_answers`). `--sources-in-answer`: each Answer node showing the LLM's text (`{{#<llm>.text#}}`) then
lists the cited sources, as our chatflows' Answer node does (`chatflows.source_list`); in a workflow each End node
after the LLM outputs that list as `references`. An Answer showing two retrofitted LLMs' texts is refused (two chunk
lists, one numbering)."""

from citations.answer_layout import CLEAN_ANSWER, CLEAN_LIST, SOURCE_LIST, clean_template, source_list
from gcite.authoring.retrofit.nodes import end_outputs
from gcite.authoring.retrofit.plan import Plan, template_of
from gcite.authoring.retrofit.reading import RetrofitRefusal

END_SOURCE_LIST = "references"  # the End output name for it in a workflow (Dify: variable names of 30 at most)


def answers_showing(plan: Plan, llm_id: str) -> list[str]:
    """The Answer nodes whose template shows the LLM's own text (`{{#<llm>.text#}}`)."""
    g, shown = plan.graph, template_of([llm_id, "text"])
    return [n["id"] for n in g.nodes if g.type_of(n["id"]) == "answer" and shown in str(n["data"].get("answer") or "")]


def check_answers(plan: Plan, llms: list[str]) -> None:
    """Check, before anything changes: an Answer showing the text of two retrofitted LLMs would list two sources
    under one marker: each LLM's merge node numbers its own chunks from 1.

    Reads the Answer nodes' templates. Writes nothing; refuses such an Answer."""
    g = plan.graph
    shown: dict[str, list[str]] = {}
    for llm_id in llms:
        for answer in answers_showing(plan, llm_id):
            shown.setdefault(answer, []).append(llm_id)
    for answer, of in shown.items():
        if len(of) > 1:
            raise RetrofitRefusal(
                f"--sources-in-answer: Answer {g.title(answer)} shows the text of LLMs "
                f"{' and '.join(g.title(x) for x in of)}, whose [C:N] markers number different "
                f"chunk lists, so one source list cannot serve both; split the Answer node or "
                f"leave the option out"
            )


def list_sources(plan: Plan, llm_id: str, validate: str) -> None:
    """Pass: each Answer node showing the LLM's text then lists the cited sources, wired as in our own chatflows
    (`citations.answer_layout.source_list`); in a workflow, each End node after the LLM outputs the list.

    Reads the Answer nodes' templates (or, in a workflow, the End nodes after the LLM). Writes the source list at the
    end of each Answer that does not list it yet and the edge validate → Answer (or the End outputs and edges); a note
    where no Answer shows the LLM's text, or one inside an iteration or loop does."""
    g = plan.graph
    if plan.mode == "workflow":
        end_outputs(plan, llm_id, validate, SOURCE_LIST, "string", END_SOURCE_LIST)
        return
    answers = answers_showing(plan, llm_id)
    appended = source_list(validate)
    if not answers:
        plan.notes.append(
            f"--sources-in-answer: no Answer node shows {template_of([llm_id, 'text'])} (the text "
            f"of LLM {g.title(llm_id)} reaches the answer through other nodes): no source list "
            f"added; append {appended.strip()} to the Answer by hand where it fits"
        )
        return
    for answer in answers:
        node = g.by_id[answer]
        template = str(node["data"]["answer"])
        if f"{{{{#{validate}.references" in template:  # listed already (by an earlier run, or by hand)
            continue
        if node.get("parentId"):
            plan.notes.append(
                f"--sources-in-answer: Answer {g.title(answer)} is inside an iteration or loop: no source list added"
            )
            continue
        show(
            plan,
            answer,
            template.rstrip() + appended,
            validate,
            f"answer extended: Answer {g.title(answer)} lists the cited sources after its text "
            f"({validate}.{SOURCE_LIST})",
        )


def show(plan: Plan, answer: str, template: str, validate: str, line: str) -> None:
    """The Answer node `answer` shows `template`, which reads the validate node: reported (`line`), and wired."""
    g = plan.graph
    g.by_id[answer]["data"]["answer"] = template
    plan.change(line)
    if not g.has_edge(validate, answer):
        g.add_edge(validate, answer)
        plan.change(f"edge added: {validate} → {g.title(answer)}")


def clean_answers(plan: Plan, llm_id: str, validate: str) -> None:
    """Pass (`--answer clean`): each Answer node showing the LLM's text shows, in its place, the validate node's
    answer with clean numbers (1..K by first citation) and the list of the cited sources
    (`citations.answer_layout.clean_template`), as `build-dsl --answer clean` does: nothing shows while the LLM
    writes.

    Reads the Answer nodes' templates. Writes each template and the edge validate → Answer; a note where no Answer
    shows the LLM's text, or one inside an iteration or loop does."""
    g = plan.graph
    shown, clean = template_of([llm_id, "text"]), clean_template(validate)
    answers = answers_showing(plan, llm_id)
    if not answers and not any(clean in str(n["data"].get("answer") or "") for n in g.nodes):
        plan.notes.append(
            f"--answer clean: no Answer node shows {shown} (the text of LLM {g.title(llm_id)} reaches the answer "
            f"through other nodes): show {clean} where it fits"
        )
    for answer in answers:
        node = g.by_id[answer]
        if node.get("parentId"):
            plan.notes.append(f"--answer clean: Answer {g.title(answer)} is inside an iteration or loop: left as it is")
            continue
        show(
            plan,
            answer,
            str(node["data"]["answer"]).replace(shown, clean),
            validate,
            f"answer rewired: Answer {g.title(answer)} shows {validate}.{CLEAN_ANSWER} and {validate}.{CLEAN_LIST} "
            f"(the answer with clean numbers, then the cited sources, once the LLM has written) instead of {shown}",
        )
