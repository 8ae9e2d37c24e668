"""`retrofit` on real exported Dify apps (tests/fixtures/retrofit/, sources in its SOURCES.md): each result keeps the
builder's graph, passes the runner's Dify rules and runs on the runner with the built-in knowledge base — the chunk
list in a node_finished before the first token, [C:N] markers for chunks that exist, the builder's other nodes still
running; a second run changes nothing; what must be refused is refused with its reason."""

import copy
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from gcite.authoring.retrofit import (
    CONTEXT,
    PREFIX,
    RULE_HEADINGS,
    Options,
    RetrofitRefusal,
    citation_rules,
    detect_lang,
    retrofit,
)
from gcite.local.dify_rules import check_variable_ids
from gcite.local.llm import ExtractiveModel, message_text
from gcite.local.runner import parse_chatflow, run_chatflow
from gcite.local.services import start_local_services
from tests.support.graph import upstream_of
from tests.support.plugins import shared_plugins
from tests.support.yamltext import safe_load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "retrofit"
POSITIVE = sorted(FIXTURES.glob("*.yml"))
IDENTIFIER = "gcite/gcite:0.0.0@" + "0" * 64  # a fixed identifier: the package's own is computed in one test below
QUESTION = "巡更时发现异常怎么上报？"
NODE_ID = re.compile(r"[A-Za-z0-9_]{1,50}")
MARKER = re.compile(r"\[C:(\d+)\]")


def load(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def options(**kwargs) -> Options:
    return Options(identifier=IDENTIFIER, **kwargs)


def nodes_of(document: dict) -> dict[str, dict]:
    return {n["id"]: n for n in document["workflow"]["graph"]["nodes"]}


def edges_of(document: dict) -> set[tuple[str, str, str]]:
    return {
        (e["source"], e.get("sourceHandle") or "source", e["target"]) for e in document["workflow"]["graph"]["edges"]
    }


class EchoWhenNoChunks(ExtractiveModel):
    """The built-in stand-in, except that an LLM given no numbered chunks repeats the question (so a classifier
    that reads an upstream LLM's text routes by the question, as a real model's paraphrase would)."""

    def invoke_llm(self, *, prompt_messages, model_parameters, tools=None, stop=None, stream=True):
        system = "\n".join(message_text(m) for m in prompt_messages if m.role.value == "system")
        if "[C:" in system:
            return super().invoke_llm(
                prompt_messages=prompt_messages,
                model_parameters=model_parameters,
                tools=tools,
                stop=stop,
                stream=stream,
            )
        self.prompts.append(list(prompt_messages))
        question = message_text(prompt_messages[-1])
        return self._chunks(prompt_messages, iter([question]))


# the question each fixture is asked (the built-in knowledge base is a Chinese property-management one), and the
# Start inputs its form requires
QUESTIONS = {"svcvit-intent-reply-workflow.zh.yml": "巡更时发现异常，使用帮助里怎么上报？"}


def start_inputs(document: dict, question: str) -> dict:
    start = next(n for n in document["workflow"]["graph"]["nodes"] if n["data"]["type"] == "start")
    inputs = {}
    for variable in start["data"].get("variables") or []:
        if variable.get("required"):
            options_ = variable.get("options") or []
            inputs[variable["variable"]] = (
                "Technical Summary" if "Technical Summary" in options_ else (options_[0] if options_ else question)
            )
    return inputs


@pytest.fixture(scope="module")
def services():
    svc = start_local_services(llm=EchoWhenNoChunks(), shared_plugins=shared_plugins())
    yield svc
    svc.close()


def run(text: str, svc, question: str, inputs: dict | None = None) -> list[dict]:
    document = safe_load(text)
    return list(run_chatflow(text, question, {**start_inputs(document, question), **(inputs or {})}, svc))


def finished(events: list[dict]) -> list[dict]:
    return [e["data"] for e in events if e["event"] == "node_finished"]


# --- every fixture ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", POSITIVE, ids=lambda p: p.name)
def test_retrofit_keeps_the_builders_graph_and_adds_g_cite_beside_it(path):
    before = safe_load(load(path))
    result = retrofit(load(path), options())
    after = result.document
    old, new = nodes_of(before), nodes_of(after)
    added = set(new) - set(old)
    assert set(old) <= set(new) and added and all(n.startswith(PREFIX) and NODE_ID.fullmatch(n) for n in added)
    targets = {
        n
        for n, node in new.items()
        if node["data"].get("type") == "llm"
        and ((node["data"].get("context") or {}).get("variable_selector") or [""])[0].startswith(PREFIX)
    }
    assert targets
    for node_id, node in old.items():
        if node_id in targets:
            changed = {k for k in node["data"] if node["data"][k] != new[node_id]["data"][k]}
            assert changed <= {"context", "prompt_template"}, (node_id, changed)
            assert new[node_id]["data"]["model"] == node["data"]["model"]
        elif new[node_id]["data"].get("type") not in ("end", "start", "knowledge-retrieval"):
            assert new[node_id] == node, node_id  # ids, positions, data: untouched
        assert new[node_id].get("position") == node.get("position")
    # edges: the builder's stay, except a retrieval → LLM edge now going through the merge node
    for source, _handle, target in edges_of(before) - edges_of(after):
        assert target in targets and (source, "source", f"{PREFIX}merge_{target}"[:50]) in edges_of(after)
    for key in ("features", "environment_variables"):
        assert after["workflow"].get(key) == before["workflow"].get(key)
    assert after["app"] == before["app"] and after.get("version") == before.get("version")
    # the canvas: no new node over another node
    boxes = {n: box(node) for n, node in new.items() if not node.get("parentId")}
    for a in added:
        for b, other in boxes.items():
            assert a == b or not overlap(boxes[a], other), (a, b)
    # one line per change
    assert len(result.changes) >= 5 and all("\n" not in line for line in result.changes)


def box(node: dict) -> tuple[float, float, float, float]:
    position = node.get("positionAbsolute") or node.get("position") or {}
    return position.get("x", 0), position.get("y", 0), node.get("width") or 244, node.get("height") or 90


def overlap(a: Sequence[float], b: Sequence[float]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


@pytest.mark.parametrize("path", POSITIVE, ids=lambda p: p.name)
def test_a_second_run_changes_nothing(path):
    first = retrofit(load(path), options())
    second = retrofit(first.text, options())
    assert second.changes == [] and second.text == first.text


@pytest.mark.parametrize("path", POSITIVE, ids=lambda p: p.name)
def test_the_result_passes_the_runners_dify_rules(path):
    result = retrofit(load(path), options())
    document, graph, root = parse_chatflow(result.text)
    check_variable_ids(document["workflow"])
    assert graph["nodes"] and root
    # every G-Cite node and every rewired context reads only what an upstream node outputs
    for node_id, node in nodes_of(document).items():
        if not node_id.startswith(PREFIX) and node["data"].get("type") != "llm":
            continue
        before = upstream_of(document["workflow"]["graph"]["edges"], node_id)
        for ref in references(node["data"]):
            if ref not in ("sys", "conversation", "context"):
                assert ref in before, f"{node_id} reads {ref}, which is not upstream"


def references(data: dict) -> set[str]:
    text = json.dumps(data, ensure_ascii=False)
    found = set(re.findall(r"\{\{#([A-Za-z0-9_]{1,50})\.", text))
    for match in re.finditer(r'"(?:value_selector|variable_selector)": \["([^"]+)"', text):
        found.add(match.group(1))
    for match in re.finditer(r'"type": "variable", "value": \["([^"]+)"', text):
        found.add(match.group(1))
    return found


@pytest.mark.parametrize("path", POSITIVE, ids=lambda p: p.name)
def test_the_retrofitted_app_runs_and_cites_chunks_that_exist(path, services):
    result = retrofit(load(path), options())
    events = run(result.text, services, QUESTIONS.get(path.name, QUESTION))
    kinds = [e["event"] for e in events]
    assert kinds[-1] == "workflow_finished" and "error" not in kinds, kinds[-3:]
    assert events[-1]["data"]["status"] in ("succeeded", "partial-succeeded")
    done = finished(events)
    merges = [d for d in done if d["node_id"].startswith(f"{PREFIX}merge_")]
    assert merges and all(d["status"] == "succeeded" for d in merges)
    chunks = merges[0]["outputs"]["chunk_metadata"]
    assert chunks and {c["source_type"] for c in chunks} == {"rag"}
    validated = next(d for d in done if d["node_id"].startswith(f"{PREFIX}validate_"))
    assert validated["outputs"]["status"] == "cited" and validated["outputs"]["invalid_ids"] == []
    cited = {c["id"] for c in validated["outputs"]["citations"]}
    assert cited and cited <= {c["id"] for c in chunks}
    merge_at = next(
        i
        for i, e in enumerate(events)
        if e["event"] == "node_finished" and e["data"]["node_id"] == merges[0]["node_id"]
    )
    if result.document["app"]["mode"] == "advanced-chat":
        answer = "".join(e["answer"] for e in events if e["event"] == "message")
        llm = merges[0]["node_id"][len(f"{PREFIX}merge_") :]
        first_token = next(
            i for i, e in enumerate(events) if e["event"] == "message" and e["from_variable_selector"][:1] == [llm]
        )
        assert merge_at < first_token  # the chunk list reaches the client before the LLM's first token
        assert set(MARKER.findall(answer)) == cited
    else:  # workflow: the End node outputs the cited sources
        outputs = events[-1]["data"]["outputs"]
        assert [c["id"] for c in outputs["citations"]] == [c["id"] for c in validated["outputs"]["citations"]]
    # the builder's other nodes still ran
    ran = {d["node_id"] for d in done}
    original = nodes_of(safe_load(load(path)))
    for kind in (
        "start",
        "question-classifier",
        "if-else",
        "code",
        "template-transform",
        "variable-aggregator",
        "variable-assigner",
        "parameter-extractor",
        "http-request",
        "assigner",
        "answer",
        "end",
    ):
        of_kind = {n for n, node in original.items() if node["data"].get("type") == kind}
        if of_kind and kind in ("start", "question-classifier", "if-else", "parameter-extractor"):
            assert of_kind <= ran, (kind, of_kind - ran)
    assert {n for n in ran if not n.startswith(PREFIX)} >= {
        n for n, node in original.items() if node["data"].get("type") == "knowledge-retrieval" and n in ran
    }


def test_the_builders_other_nodes_run_as_before():
    """own-0.3.0: the builder's template and Code node still feed the Answer; own-0.3.1: the HTTP node to an outside
    host fails into its default value, as in Dify without network, and the conversation counter still counts."""
    svc = start_local_services(shared_plugins=shared_plugins())
    try:
        text = retrofit(load(FIXTURES / "own-0.3.0-code-after-llm.en.yml"), options()).text
        events = run(text, svc, QUESTION)
        answer = "".join(e["answer"] for e in events if e["event"] == "message")
        assert answer.startswith(f"Question received: {QUESTION}") and re.search(r"\(\d+ words\)$", answer)
        text = retrofit(load(FIXTURES / "own-0.3.1-assigner-http.zh.yml"), options()).text
        events = run(text, svc, QUESTION)
        http = next(d for d in finished(events) if d["node_type"] == "http-request")
        assert http["status"] == "exception" and http["outputs"]["body"] == "（工单系统不可用）"
        assigner = next(d for d in finished(events) if d["node_type"] == "assigner")
        assert assigner["status"] == "succeeded"
        assert events[-1]["data"]["status"] == "partial-succeeded"
    finally:
        svc.close()


def test_another_plugins_tool_fails_as_in_dify_and_takes_its_fail_branch():
    svc = start_local_services(shared_plugins=shared_plugins())
    try:
        text = retrofit(load(FIXTURES / "own-0.5.0-classifier-other-plugin.zh.yml"), options()).text
        events = run(text, svc, "明天天气新闻怎么样？")
        done = finished(events)
        tool = next(d for d in done if d["node_type"] == "tool" and not d["node_id"].startswith(PREFIX))
        assert tool["status"] == "exception"
        assert tool["error"] == "plugin provider langgenius/google/google not found"
        assert "".join(e["answer"] for e in events if e["event"] == "message") == "暂时无法联网搜索。"
        assert not any(d["node_id"].startswith(PREFIX) for d in done)  # the retrieval branch was not taken
    finally:
        svc.close()


# --- options ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", POSITIVE, ids=lambda p: p.name)
def test_code_nodes_need_no_plugin_and_run(path, services):
    name = path.name
    result = retrofit(load(FIXTURES / name), options(nodes="code"))
    added = [n for n in nodes_of(result.document) if n.startswith(PREFIX)]
    assert {nodes_of(result.document)[n]["data"]["type"] for n in added} == {"code"}
    assert result.document.get("dependencies") == safe_load(load(FIXTURES / name)).get("dependencies")
    events = run(result.text, services, QUESTIONS.get(name, QUESTION))
    validated = next(d for d in finished(events) if d["node_id"].startswith(f"{PREFIX}validate_"))
    assert validated["outputs"]["status"] == "cited"
    assert retrofit(result.text, options(nodes="code")).changes == []


def test_plugin_tools_add_the_plugin_dependency_once():
    result = retrofit(load(FIXTURES / "svcvit-image-knowledge-base.zh.yml"), Options())
    ours = [d for d in result.document["dependencies"] if d["type"] == "package"]
    assert len(ours) == 1 and ours[0]["value"]["plugin_unique_identifier"].startswith("gcite/gcite:")
    tools = [n["data"] for n in result.document["workflow"]["graph"]["nodes"] if n["data"].get("type") == "tool"]
    assert {t["plugin_unique_identifier"] for t in tools} == {ours[0]["value"]["plugin_unique_identifier"]}
    # a file whose list was empty: Dify derived its dependencies from the graph; now it will not, and it says so
    empty = retrofit(load(FIXTURES / "svcvit-thinking-assistant.zh.yml"), options())
    assert any("langgenius/yi" in note for note in empty.notes)


def test_the_rules_are_added_in_the_prompts_language_keeping_the_builders_prompt():
    zh = retrofit(load(FIXTURES / "svcvit-image-knowledge-base.zh.yml"), options()).document
    llm = nodes_of(zh)["1743994891832"]["data"]
    system = llm["prompt_template"][0]["text"]
    original = nodes_of(safe_load(load(FIXTURES / "svcvit-image-knowledge-base.zh.yml")))["1743994891832"]
    assert system.startswith(original["data"]["prompt_template"][0]["text"].rstrip())
    assert citation_rules("zh") in system and system.count(RULE_HEADINGS["zh"]) == 1 and system.count(CONTEXT) == 1
    # the builder's context may stand above the added rules: they do not say the chunks are below
    assert "下方" not in citation_rules("zh") and "below" not in citation_rules("en")
    en = retrofit(load(FIXTURES / "dify-qc-knowledge-chatbot.en.yml"), options()).document
    assert all(
        citation_rules("en") in nodes_of(en)[n]["data"]["prompt_template"][0]["text"]
        for n in ("1711528802931", "1711528815414")
    )
    forced = retrofit(load(FIXTURES / "dify-qc-knowledge-chatbot.en.yml"), options(lang="zh")).document
    assert RULE_HEADINGS["zh"] in nodes_of(forced)["1711528802931"]["data"]["prompt_template"][0]["text"]
    # a prompt without {{#context#}} gains the chunks section; one with it inline gets it on a line of its own
    thinking = retrofit(load(FIXTURES / "svcvit-thinking-assistant.zh.yml"), options()).document
    text = nodes_of(thinking)["llm"]["data"]["prompt_template"][0]["text"]
    assert "\n{{#context#}}\n" in text and text.count(CONTEXT) == 1
    assert detect_lang(["You are a helpful assistant. 你好"]) == "en" and detect_lang(["你是一个助手 AI"]) == "zh"


@pytest.mark.parametrize(
    "name,kind",
    [
        ("own-0.2.0-branch-aggregator.zh.yml", "plugin"),
        ("own-0.4.0-workflow-extractor.en.yml", "code"),
        ("dify-qc-knowledge-chatbot.en.yml", "code"),
    ],
)
def test_acl_adds_the_pre_filter_and_the_filter_node_and_hides_restricted_chunks(name, kind):
    svc = start_local_services(shared_plugins=shared_plugins())
    try:
        result = retrofit(load(FIXTURES / name), options(acl="access_roles", slots=2, nodes=kind))
        nodes = nodes_of(result.document)
        start = next(n for n in nodes.values() if n["data"]["type"] == "start")
        assert any(v["variable"] == "user_roles" and v["hide"] for v in start["data"]["variables"])
        retrievals = [n["data"] for n in nodes.values() if n["data"]["type"] == "knowledge-retrieval"]
        assert all(
            r["metadata_filtering_mode"] == "manual" and r["metadata_filtering_conditions"]["conditions"]
            for r in retrievals
        )
        assert retrofit(result.text, options(acl="access_roles", slots=2, nodes=kind)).changes == []
        query = "冷水机组的供水温度和冷却塔风机怎么设定？"
        allowed = json.dumps(run(result.text, svc, query, {"user_roles": "运维工程师"}), ensure_ascii=False)
        assert "冷却塔风机在出水温度高于" in allowed
        denied = json.dumps(run(result.text, svc, query, {"user_roles": "前台"}), ensure_ascii=False)
        assert "冷却塔风机在出水温度高于" not in denied and "doc-hvac" not in denied
    finally:
        svc.close()


def test_memory_keeps_earlier_turns_without_markers():
    from gcite.local.service_api import Conversation

    svc = start_local_services(shared_plugins=shared_plugins())
    try:
        result = retrofit(load(FIXTURES / "own-0.6.0-parallel-retrievals.en.yml"), options(memory=True))
        names = {v["name"] for v in result.document["workflow"]["conversation_variables"]}
        assert {"history", "history_text"} <= names
        llm = next(n for n in nodes_of(result.document).values() if n["data"]["type"] == "llm")
        assert llm["data"]["prompt_template"][0]["text"].count("{{#conversation.history_text#}}") == 1
        conversation = Conversation()
        list(run_chatflow(result.text, QUESTION, {}, svc, conversation))
        assert conversation.variables["history"][0]["query"] == QUESTION
        assert "[C:" not in conversation.variables["history_text"]
        assert retrofit(result.text, options(memory=True)).changes == []
        with pytest.raises(RetrofitRefusal, match="--memory: a workflow-mode app"):
            retrofit(load(FIXTURES / "dify-text-summarization-workflow.en.yml"), options(memory=True))
    finally:
        svc.close()


def test_web_search_runs_beside_the_retrieval_and_feeds_the_merge_node():
    svc = start_local_services(shared_plugins=shared_plugins())
    try:
        result = retrofit(load(FIXTURES / "svcvit-image-knowledge-base.zh.yml"), options(web="gcite"))
        web = next(n for n in nodes_of(result.document).values() if n["id"].startswith(f"{PREFIX}web_"))
        assert web["data"]["tool_name"] == "web_search"
        events = run(result.text, svc, QUESTION)
        merge = next(d for d in finished(events) if d["node_id"].startswith(f"{PREFIX}merge_"))
        assert {c["source_type"] for c in merge["outputs"]["chunk_metadata"]} == {"rag", "web"}
    finally:
        svc.close()


def test_web_search_runs_only_on_its_retrievals_branch():
    """A Question Classifier leads to two retrievals: each web search hangs on its retrieval's own branch, so one
    question runs one branch — one web search, one merge, one LLM, one answer — never both."""
    svc = start_local_services(shared_plugins=shared_plugins())
    try:
        result = retrofit(load(FIXTURES / "dify-qc-knowledge-chatbot.en.yml"), options(web="gcite"))
        edges = edges_of(result.document)
        webs = [i for i in nodes_of(result.document) if i.startswith(f"{PREFIX}web_")]
        assert len(webs) == 2
        for web in webs:
            merge = web.replace("web_", "merge_", 1)
            retrieval = next(source for source, _, target in edges if target == merge and source != web)
            into = lambda node: {(source, handle) for source, handle, target in edges if target == node}  # noqa: E731
            assert into(web) == into(retrieval) and all(handle != "source" for _, handle in into(web)), web
        events = run(result.text, svc, "How do I book a meeting room?")
        ran = [d["node_id"] for d in finished(events) if d.get("status") != "skipped"]
        assert sum(i.startswith(f"{PREFIX}web_") for i in ran) == 1
        assert sum(i.startswith(f"{PREFIX}merge_") for i in ran) == 1
        assert sum(nodes_of(result.document)[i]["data"]["type"] == "llm" for i in ran) == 1
        answer = "".join(e["answer"] for e in events if e["event"] == "message")
        assert answer.count("[C:") >= 1 and "book" in answer.lower()
    finally:
        svc.close()


@pytest.mark.parametrize("question", ["巡更时发现异常怎么上报？", "紧急：巡更时发现异常怎么上报？"])
def test_behind_an_aggregator_of_two_branches_the_web_search_runs_on_either(question):
    """An IF/ELSE leads to two retrievals and a Variable Aggregator joins them: the web search hangs on both
    branches, so whichever is taken, the merge node gets the web results too."""
    svc = start_local_services(shared_plugins=shared_plugins())
    try:
        result = retrofit(load(FIXTURES / "own-0.2.0-branch-aggregator.zh.yml"), options(web="gcite"))
        web = next(i for i in nodes_of(result.document) if i.startswith(f"{PREFIX}web_"))
        assert {handle for source, handle, target in edges_of(result.document) if target == web} == {"true", "false"}
        events = run(result.text, svc, question)
        merge = next(d for d in finished(events) if d["node_id"].startswith(f"{PREFIX}merge_"))
        assert {c["source_type"] for c in merge["outputs"]["chunk_metadata"]} == {"rag", "web"}
    finally:
        svc.close()


def test_llms_whose_context_is_not_retrieval_are_named_and_left_alone():
    result = retrofit(load(FIXTURES / "svcvit-intent-reply-workflow.zh.yml"), options())
    note = next(n for n in result.notes if n.startswith("left as they are"))
    assert '"意图向量机" (1718246807593): context disabled' in note
    assert '"风格化回复内容" (1718853322658): context is 1718852940536.output' in note
    assert (
        nodes_of(result.document)["1718853322658"]
        == nodes_of(safe_load(load(FIXTURES / "svcvit-intent-reply-workflow.zh.yml")))["1718853322658"]
    )


def test_dify_s_built_in_memory_is_named_in_a_note():
    notes = retrofit(load(FIXTURES / "own-0.3.0-code-after-llm.en.yml"), options()).notes
    assert any("keeps Dify's built-in memory" in note and "--memory" in note for note in notes)
    assert not any(
        "built-in memory" in n for n in retrofit(load(FIXTURES / "own-0.2.0-branch-aggregator.zh.yml"), options()).notes
    )


def test_the_export_api_form_is_read():
    text = load(FIXTURES / "svcvit-image-knowledge-base.zh.yml")
    wrapped = retrofit(json.dumps({"data": text}, ensure_ascii=False), options())
    assert wrapped.text == retrofit(text, options()).text and "export API" in wrapped.notes[0]


# --- refusals ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,reason",
    [
        (
            "dify-knowledge-chatbot-context-disabled.en.yml",
            'no Knowledge Retrieval → LLM context path; LLM nodes looked at: "LLM" (1711528917469): context disabled '
            "while its prompt uses {{#context#}} (empty in Dify): --enable-context wires it",
        ),
        (
            "svcvit-document-chat-context-via-template.zh.yml",
            'the context of LLM "LLM 2" (1720801890321) comes through '
            'Template node "Template 2" (1720796109721), which also uses '
            "1720795163496.class_name; in Dify, set the context",
        ),
        (
            "svcvit-deep-researcher-retrieval-in-iteration.zh.yml",
            '"问题分解" (1739088190247): context is 1739087621665.Research_Theme (a start node)',
        ),
        (
            "tomatio13-manual-search-context-from-start.ja.yml",
            '"回答生成" (1731228346443): context is 1731228343114.Query',
        ),
        ("own-0.4.0-no-retrieval.zh.yml", 'no Knowledge Retrieval → LLM context path; LLM nodes looked at: "LLM" '),
        ("own-0.5.0-jinja2-prompt.en.yml", 'cannot rewire safely: LLM "LLM" ('),
        ("own-chat-mode.en.yml", "app mode 'chat' has no workflow graph"),
        ("own-rag-pipeline.en.yml", "not a Dify app DSL: kind is 'rag_pipeline'"),
        ("own-not-yaml.txt.yml", "not a Dify app DSL: not valid YAML ("),
    ],
)
def test_what_cannot_be_retrofitted_is_refused_with_its_reason(name, reason):
    with pytest.raises(RetrofitRefusal) as refused:
        retrofit(load(FIXTURES / "refuse" / name), options())
    assert reason in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    "mutate,reason",
    [
        (
            lambda d: d["workflow"]["graph"]["nodes"].append(
                {"id": "gcite_merge_1743994891832", "data": {"type": "template-transform"}}
            ),
            "node id gcite_merge_1743994891832 is taken",
        ),
        (
            lambda d: [
                n["data"].update(metadata_filtering_mode="automatic")
                for n in d["workflow"]["graph"]["nodes"]
                if n["data"]["type"] == "knowledge-retrieval"
            ],
            "--acl would replace the automatic metadata filter",
        ),
        (lambda d: d.update(version=0.1), "version must be a string"),
        (lambda d: d.pop("app"), "it has no app section"),
    ],
)
def test_unsafe_shapes_are_refused(mutate, reason):
    document = safe_load(load(FIXTURES / "svcvit-image-knowledge-base.zh.yml"))
    mutate(document)
    with pytest.raises(RetrofitRefusal, match=re.escape(reason)):
        retrofit(yaml.safe_dump(document, allow_unicode=True), options(acl="access_roles"))


def test_an_llm_inside_an_iteration_is_refused():
    document = safe_load(load(FIXTURES / "svcvit-image-knowledge-base.zh.yml"))
    llm = nodes_of(document)["1743994891832"]
    llm["parentId"] = "1743994832383"
    # a parent that is not an iteration or loop of the file: refused (one inside an iteration is retrofitted:
    # tests/authoring/test_retrofit_shapes.py)
    with pytest.raises(RetrofitRefusal, match="inside a container that is not an iteration or loop of this file"):
        retrofit(yaml.safe_dump(copy.deepcopy(document), allow_unicode=True), options())
