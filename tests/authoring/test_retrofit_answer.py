"""`retrofit --answer` (issue 32 item 5): `cited` puts the plugin's `cited_answer` tool in a retrofitted LLM node's
place, carrying its model, completion parameters and system prompt, and the Answer shows the tool's two stream
variables; an LLM using what the tool cannot carry stays an LLM node, with a note naming it; `clean` shows the
validate node's clean answer and list. Both: a second run changes nothing, the diff stays small, and the report says
what happens to Dify's native citation panel."""

import difflib
from pathlib import Path

import pytest
import yaml

from citations.answer_layout import cited_template, clean_template
from gcite.authoring.retrofit import Options, RetrofitRefusal, retrofit
from tests.support.yamltext import safe_load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "retrofit"
APP = FIXTURES / "svcvit-image-knowledge-base.zh.yml"
LLM, START, RETRIEVAL = "1743994891832", "1743994826325", "1743994832383"
CITE, MERGE, VALIDATE = f"gcite_cite_{LLM}", f"gcite_merge_{LLM}", f"gcite_validate_{LLM}"
IDENTIFIER = "gcite/gcite:0.0.0@" + "0" * 64
SYSTEM = "你是一个AI聊天助手，请参考<info></info>中的内容，回答用户的问题。注意保留图片信息。"


def options(**kwargs) -> Options:
    return Options(identifier=IDENTIFIER, **kwargs)


def nodes_of(document: dict) -> dict[str, dict]:
    return {n["id"]: n for n in document["workflow"]["graph"]["nodes"]}


def edges_of(document: dict) -> set[tuple[str, str]]:
    return {(e["source"], e["target"]) for e in document["workflow"]["graph"]["edges"]}


def app(edit=None, path: Path = APP) -> str:
    """The fixture, with `edit(document, llm_data)` applied (its LLM node's data)."""
    if edit is None:
        return path.read_text(encoding="utf-8")
    document = safe_load(path.read_text(encoding="utf-8"))
    edit(document, nodes_of(document)[LLM]["data"])
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False)


def with_params(document, llm):
    llm["model"]["completion_params"] = {"temperature": 0.3, "max_tokens": 512, "top_p": 0.9}


# --- cited: what the tool carries ---------------------------------------------------------------------------------


def test_cited_answer_takes_the_llms_place_with_its_model_params_and_system_prompt():
    result = retrofit(app(with_params), options(answer="cited"))
    nodes = nodes_of(result.document)
    assert LLM not in nodes and VALIDATE not in nodes  # the tool validates: no validate node
    data = nodes[CITE]["data"]
    assert (data["type"], data["tool_name"], data["provider_id"]) == ("tool", "cited_answer", "gcite/gcite/gcite")
    assert data["tool_configurations"]["model"] == {
        "provider": "langgenius/volcengine_maas/volcengine_maas",
        "model": "deepseek-v3-241226",
        "model_type": "llm",
        "mode": "chat",
        "completion_params": {"temperature": 0.3, "max_tokens": 512, "top_p": 0.9},
    }
    parameters = data["tool_parameters"]
    # the builder's system prompt, without {{#context#}} (the tool gives the chunks) and without our rules
    instructions = parameters["instructions"]["value"]
    assert instructions.startswith(SYSTEM) and "{{#context#}}" not in instructions and "[C:" not in instructions
    assert parameters["query"] == {"type": "mixed", "value": "{{#sys.query#}}"}
    assert parameters["context"] == {"type": "variable", "value": [MERGE, "formatted_chunks"]}
    assert parameters["chunk_metadata"] == {"type": "variable", "value": [MERGE, "chunk_metadata"]}
    assert "history" not in parameters  # no --memory
    assert parameters["style"] == {"type": "mixed", "value": "{{#" + START + ".citation_style#}}"}
    assert (
        data["tool_node_version"] == "2" and data["tool_configurations"]["insufficient_phrases"]["type"] == "constant"
    )
    start_inputs = nodes[START]["data"]["variables"]
    assert [(v["variable"], v["hide"]) for v in start_inputs] == [("citation_style", True)]
    assert nodes[CITE]["position"] == {"x": 638, "y": 252.5}  # the LLM's place
    assert nodes["answer"]["data"]["answer"] == cited_template(CITE)
    assert {(RETRIEVAL, MERGE), (MERGE, CITE), (CITE, "answer")} <= edges_of(result.document)
    assert not {e for e in edges_of(result.document) if LLM in e}
    assert any(d["value"]["plugin_unique_identifier"] == IDENTIFIER for d in result.document["dependencies"][2:])
    lines = "\n".join(result.changes)
    assert f'node removed: LLM "LLM" ({LLM}) — {CITE} writes its answer' in lines
    assert "langgenius/volcengine_maas/volcengine_maas/deepseek-v3-241226" in lines
    assert "max_tokens, temperature, top_p" in lines


def test_the_llms_user_message_is_the_question_and_memory_gives_the_history():
    result = retrofit(app(path=FIXTURES / "own-0.2.0-branch-aggregator.zh.yml"), options(answer="cited", memory=True))
    cite = next(n for n in result.document["workflow"]["graph"]["nodes"] if n["id"].startswith("gcite_cite_"))
    parameters = cite["data"]["tool_parameters"]
    assert parameters["query"]["value"] == "{{#sys.query#}}"  # its user message, as written
    assert parameters["history"] == {"type": "mixed", "value": "{{#conversation.history_text#}}"}
    assert parameters["instructions"]["value"].startswith("你是物业服务中心的值班助理，语气亲切，回答简短。")
    remember = next(n for n in result.document["workflow"]["graph"]["nodes"] if n["id"].startswith("gcite_remember_"))
    answer = next(v for v in remember["data"]["variables"] if v["variable"] == "answer")
    assert answer["value_selector"] == [cite["id"], "answer_without_markers"]
    assert (cite["id"], remember["id"]) in edges_of(result.document)


def test_an_llm_without_a_system_prompt_gives_the_tool_no_instructions():
    def user_only(document, llm):
        llm["prompt_template"] = [{"role": "user", "text": "{{#context#}}\n简短回答：{{#sys.query#}}"}]

    result = retrofit(app(user_only), options(answer="cited"))
    parameters = nodes_of(result.document)[CITE]["data"]["tool_parameters"]
    assert "instructions" not in parameters  # the user message is the question, not instructions as well
    assert parameters["query"] == {"type": "mixed", "value": "简短回答：{{#sys.query#}}"}
    assert any("and no instructions (it has no system prompt of its own)" in line for line in result.changes)


def test_a_system_prompt_that_contradicts_citing_is_warned_about_when_the_tool_carries_it():
    def no_citing(document, llm):
        llm["prompt_template"][0]["text"] = SYSTEM + "\nDo not cite sources or add references.\n{{#context#}}"

    result = retrofit(app(no_citing), options(answer="cited"))
    assert LLM not in nodes_of(result.document)  # replaced: the sentence goes on as the tool's instructions
    warned = [w for w in result.warnings if w.startswith(f'LLM "LLM" ({LLM}): its prompt says')]
    assert len(warned) == 1 and "'Do not cite sources or add references.'" in warned[0], result.warnings


def test_other_nodes_reading_the_llms_text_read_the_answer_without_markers():
    def reads_text(document, llm):
        graph = document["workflow"]["graph"]
        graph["nodes"].append(
            {
                "id": "summary",
                "type": "custom",
                "position": {"x": 900, "y": 500},
                "data": {
                    "type": "template-transform",
                    "title": "Summary",
                    "template": "{{ text }} ({{ tokens }})",
                    "variables": [
                        {"variable": "text", "value_selector": [LLM, "text"], "value_type": "string"},
                        {"variable": "tokens", "value_selector": [LLM, "usage"], "value_type": "object"},
                    ],
                    "odd": [LLM, ["not", "a", "name"]],  # a list that only looks like a selector: left alone
                },
            }
        )
        graph["edges"].append({"id": "e-summary", "source": LLM, "target": "summary", "sourceHandle": "source"})

    result = retrofit(app(reads_text), options(answer="cited"))
    summary = nodes_of(result.document)["summary"]["data"]
    assert [v["value_selector"] for v in summary["variables"]] == [
        [CITE, "answer_without_markers"],
        [CITE, "usage"],
    ]
    assert summary["odd"] == [LLM, ["not", "a", "name"]]
    assert (CITE, "summary") in edges_of(result.document)
    assert any(line.startswith('selector rewired: "Summary" (summary) reads') for line in result.changes)


def branches(document, llm):
    """An IF/ELSE between the retrieval and the LLM whose `true` and `false` branches both go to the LLM."""
    graph = document["workflow"]["graph"]
    graph["nodes"].append(
        {
            "id": "branch",
            "type": "custom",
            "position": {"x": 500, "y": 500},
            "data": {"type": "if-else", "title": "Branch", "cases": [{"case_id": "true", "conditions": []}]},
        }
    )
    graph["edges"] = [e for e in graph["edges"] if (e["source"], e["target"]) != (RETRIEVAL, LLM)]
    graph["edges"].append({"id": "e-branch", "source": RETRIEVAL, "sourceHandle": "source", "target": "branch"})
    for handle in ("true", "false"):
        graph["edges"].append({"id": f"e-{handle}", "source": "branch", "sourceHandle": handle, "target": LLM})


def handles_into(document: dict, node_id: str) -> set[tuple[str, str]]:
    return {(e["source"], e["sourceHandle"]) for e in document["workflow"]["graph"]["edges"] if e["target"] == node_id}


def test_every_branch_into_the_llm_reaches_the_tool():
    result = retrofit(app(branches), options(answer="cited"))
    assert handles_into(result.document, CITE) == {("branch", "true"), ("branch", "false"), (MERGE, "source")}
    assert not handles_into(result.document, LLM)
    assert retrofit(result.text, options(answer="cited")).changes == []
    kept = retrofit(app(branches), options())  # --answer llm-node: both branches still reach the LLM
    assert {("branch", "true"), ("branch", "false")} <= handles_into(kept.document, LLM)


# --- cited: what it cannot carry keeps the LLM node ----------------------------------------------------------------


def vision(document, llm):
    llm["vision"] = {"enabled": True, "configs": {"detail": "high", "variable_selector": ["sys", "files"]}}


def structured(document, llm):
    llm["structured_output_enabled"] = True
    llm["structured_output"] = {"schema": {"type": "object", "properties": {"answer": {"type": "string"}}}}


def window(document, llm):
    llm["memory"] = {"window": {"enabled": True, "size": 10}, "query_prompt_template": "{{#sys.query#}}"}


def few_shot(document, llm):
    llm["prompt_template"] += [
        {"role": "user", "text": "例子：怎么报修？"},
        {"role": "assistant", "text": "请在小程序提交报修单。"},
        {"role": "user", "text": "{{#sys.query#}}"},
    ]


def completion(document, llm):
    llm["model"]["mode"] = "completion"
    llm["prompt_template"] = {"text": llm["prompt_template"][0]["text"]}


def error_branch(document, llm):
    llm["error_strategy"] = "fail-branch"


def reasoning(document, llm):
    answer = nodes_of(document)["answer"]["data"]
    answer["answer"] = "{{#" + LLM + ".reasoning_content#}}\n{{#" + LLM + ".text#}}"


def no_model(document, llm):
    del llm["model"]


@pytest.mark.parametrize(
    "edit,memory,named",
    [
        (no_model, False, "model (its data names no provider and name to carry)"),
        (vision, False, "vision"),
        (structured, False, "structured output"),
        (window, False, "built-in memory (10 turns; --memory gives cited_answer G-Cite's memory of 3 turns)"),
        (window, True, "built-in memory of 10 turns, more than G-Cite's memory keeps (3 turns)"),
        (few_shot, False, "prompt of 2 user and 1 assistant messages"),
        (completion, False, "completion-mode prompt"),
        (error_branch, False, "error handling (fail-branch)"),
        (reasoning, False, "output reasoning_content read by other nodes"),
    ],
    ids=[
        "no-model",
        "vision",
        "structured-output",
        "memory-window",
        "window-beyond-ours",
        "few-shot",
        "completion",
        "fail-branch",
        "reasoning-output",
    ],
)
def test_what_the_tool_cannot_carry_keeps_the_llm_node_and_says_so(edit, memory, named):
    result = retrofit(app(edit), options(answer="cited", memory=memory))
    nodes = nodes_of(result.document)
    assert LLM in nodes and CITE not in nodes and VALIDATE in nodes  # the default layout
    assert nodes[LLM]["data"]["context"]["variable_selector"] == [MERGE, "formatted_chunks"]
    kept = [n for n in result.notes if n.startswith(f'--answer cited: LLM "LLM" ({LLM}) stays an LLM node')]
    assert len(kept) == 1 and named in kept[0], result.notes
    assert not any("citation_style" in line for line in result.changes)
    again = retrofit(result.text, options(answer="cited", memory=memory))
    assert again.changes == [] and kept[0] in again.notes  # said again, nothing changed


def test_an_llm_inside_an_iteration_stays_an_llm_node():
    path = FIXTURES / "shapes" / "own-0.6.0-iteration-sections.zh.yml"
    result = retrofit(path.read_text(encoding="utf-8"), options(answer="cited"))
    assert not [n for n in nodes_of(result.document) if n.startswith("gcite_cite_")]
    assert any("stays an LLM node" in n and "place inside" in n for n in result.notes)


def test_a_jinja2_prompt_is_still_refused_naming_the_next_step():
    def jinja(document, llm):
        llm["prompt_template"][0]["edition_type"] = "jinja2"

    with pytest.raises(RetrofitRefusal, match="has a Jinja2 prompt; switch its prompt to the basic editor"):
        retrofit(app(jinja), options(answer="cited"))


# --- options and re-runs ------------------------------------------------------------------------------------------


def test_cited_needs_the_plugin_and_no_sources_in_answer():
    with pytest.raises(ValueError, match=r"answer: cited needs --nodes plugin .*--nodes code --answer clean"):
        Options(nodes="code", answer="cited")
    with pytest.raises(ValueError, match="leave out --sources-in-answer"):
        Options(answer="clean", sources_in_answer=True)
    with pytest.raises(ValueError, match="answer: 'quoted' is not one of cited, llm-node, clean"):
        Options(answer="quoted")


@pytest.mark.parametrize("answer", ["cited", "clean"])
def test_a_workflow_is_refused(answer):
    with pytest.raises(RetrofitRefusal, match=f"--answer {answer}: a workflow-mode app has no Answer node"):
        retrofit(app(path=FIXTURES / "dify-text-summarization-workflow.en.yml"), options(answer=answer))


@pytest.mark.parametrize("memory", [False, True])
@pytest.mark.parametrize("answer", ["cited", "clean"])
def test_a_second_run_changes_nothing(answer, memory):
    first = retrofit(app(with_params), options(answer=answer, memory=memory))
    second = retrofit(first.text, options(answer=answer, memory=memory))
    assert first.changes and second.changes == [] and second.text == first.text


def test_memory_on_a_cited_file_made_without_it_is_refused():
    first = retrofit(app(), options(answer="cited"))
    with pytest.raises(RetrofitRefusal, match="--memory: .* on a first run only"):
        retrofit(first.text, options(answer="cited", memory=True))


def test_acl_on_a_cited_file_made_without_it_is_refused():
    # written without access control, the app would show every chunk to everyone: refused, as for an LLM node
    first = retrofit(app(), options(answer="cited"))
    with pytest.raises(RetrofitRefusal, match=f"--acl: .*{CITE}.* without access control, .* on a first run only"):
        retrofit(first.text, options(answer="cited", acl="roles"))
    with_acl = retrofit(app(), options(answer="cited", acl="roles"))
    assert f"gcite_filter_{LLM}" in nodes_of(with_acl.document)
    assert retrofit(with_acl.text, options(answer="cited", acl="roles")).changes == []  # made with it: accepted


def test_cited_on_a_file_retrofitted_before_as_an_llm_node_says_to_start_from_the_export():
    first = retrofit(app(), options())
    second = retrofit(first.text, options(answer="cited"))
    assert second.changes == [] and LLM in nodes_of(second.document)
    assert any("cited_answer takes an LLM's place on a first run only" in n for n in second.notes)


@pytest.mark.parametrize("answer", ["cited", "clean"])
def test_the_diff_is_the_llm_node_its_edges_and_the_answer_line(answer):
    text = app()
    result = retrofit(text, options(answer=answer))
    minus = [
        x
        for x in difflib.unified_diff(text.splitlines(), result.text.splitlines(), lineterm="", n=0)
        if x.startswith("-") and not x.startswith("---")
    ]
    before = safe_load(text)
    llm_lines = len(yaml.safe_dump(nodes_of(before)[LLM]).splitlines()) if answer == "cited" else 0
    # cited: the LLM node and its two edges go; both: the Answer template line and (cited) `variables: []` of Start
    assert len(minus) <= llm_lines + 2 * 13 + 2, minus
    assert safe_load(result.text) == result.document
    kept = [line for line in text.splitlines() if LLM not in line]
    assert sum(1 for line in kept if line in result.text) >= len(kept) - len(minus)


# --- clean --------------------------------------------------------------------------------------------------------


def test_clean_shows_the_validate_nodes_clean_answer_and_list():
    result = retrofit(app(), options(answer="clean", nodes="code"))
    nodes = nodes_of(result.document)
    assert nodes["answer"]["data"]["answer"] == clean_template(VALIDATE)
    assert LLM in nodes and nodes[VALIDATE]["data"]["type"] == "code"
    assert (VALIDATE, "answer") in edges_of(result.document)
    assert any(line.startswith('answer rewired: Answer "直接回复" (answer) shows') for line in result.changes)


# --- the native citation panel ------------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", ["llm-node", "cited", "clean"])
def test_the_report_says_the_native_citation_panel_stays_empty(answer):
    result = retrofit(app(), options(answer=answer))
    panel = [n for n in result.notes if n.startswith("Dify's citation panel")]
    assert len(panel) == 1 and "stays empty for the retrofitted answers" in panel[0]
    assert ("cited_answer is no LLM node" in panel[0]) == (answer == "cited")

    def off(document, llm):
        document["workflow"]["features"]["retriever_resource"]["enabled"] = False

    assert not [n for n in retrofit(app(off), options(answer=answer)).notes if "citation panel" in n]


def test_the_panel_note_speaks_of_cited_answer_only_when_one_was_added():
    result = retrofit(app(vision), options(answer="cited"))  # the LLM stays an LLM node: no cited_answer
    panel = [n for n in result.notes if n.startswith("Dify's citation panel")]
    assert len(panel) == 1 and "cited_answer" not in panel[0], panel
    assert "the validate node's citations hold the cited chunks" in panel[0]


@pytest.mark.parametrize(
    "asked,said,why",
    [
        (dict(answer="clean"), "--answer clean: ", "on a first run only"),
        (dict(answer="cited", web="gcite"), "--web gcite: ", "on a first run only"),
        (dict(sources_in_answer=True), "--sources-in-answer: ", "shows the tool's sources already"),
    ],
    ids=["answer-clean", "web-gcite", "sources-in-answer"],
)
def test_what_a_cited_file_cannot_gain_is_said_in_a_note(asked, said, why):
    first = retrofit(app(), options(answer="cited"))
    second = retrofit(first.text, options(**asked))
    assert second.changes == [] and CITE in nodes_of(second.document)
    notes = [n for n in second.notes if n.startswith(said)]
    assert len(notes) == 1 and f"({CITE})" in notes[0] and why in notes[0], second.notes
    on_the_export = retrofit(app(), options(**asked))  # no cited_answer there before: nothing of the kind to say
    assert not [n for n in on_the_export.notes if n.startswith(said) and "in place of an LLM before" in n]
    if "web" in asked:  # made with web search: nothing to say either
        with_web = retrofit(app(), options(answer="cited", web="gcite"))
        assert not [n for n in retrofit(with_web.text, options(**asked)).notes if n.startswith(said)]
