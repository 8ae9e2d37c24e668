"""Both chatflow DSL files, run end to end on graphon (Dify's workflow engine) with the runner's local services."""

import copy
import json
import re

import pytest

from citations import merge as merge_chunks
from citations import web_request as web_search_request
from citations.answer_layout import machine_inputs
from gcite.authoring import chatflows
from gcite.authoring.variants import INSUFFICIENT
from gcite.client import Cite, Done, Text, dify_events, parse_dify_sse
from gcite.local.llm import OpenAICompatibleModel
from gcite.local.runner import GCITE_PLUGIN, Services, run_chatflow
from gcite.local.service_api import Conversation, dify_sse
from gcite.local.services import start_local_services
from tests.support import ROOT
from tests.support.local_http import origin, start_server, stop_server
from tests.support.openai_model import streaming_model
from tests.support.plugins import shared_plugins
from tests.support.yamltext import safe_load

DSLS = {"plugin": chatflows.PLUGIN_DSL, "code": chatflows.CODE_DSL}
CHECKER = {"plugin": "cite", "code": "validate"}  # the node whose outputs hold the citations and the status
TAVILY_KEY = "tvly-TEST-SECRET-7f3a9c"
BOCHA_KEY = "bocha-TEST-SECRET-51e2d8"
NODE_ID = re.compile(r"[a-zA-Z0-9_]{1,50}")
TEMPLATE = re.compile(r"\{\{#([a-zA-Z0-9_]{1,50}(?:\.[a-zA-Z_][a-zA-Z0-9_]{0,29}){1,10})#\}\}")
RESTRICTED_TEXT = "冷却塔风机在出水温度高于 32℃"  # only in the knowledge-base document for 运维工程师 / 物业经理


def dsl_text(kind: str, search_key: str = BOCHA_KEY) -> str:
    return DSLS[kind].read_text(encoding="utf-8").replace(chatflows.PLACEHOLDER_SEARCH_KEY, search_key)


def services(**kwargs) -> Services:
    """The runner's local services (their search server started; `close()` stops it), with a secret Tavily key."""
    return start_local_services(
        tool_credentials={"langgenius/tavily:": {"tavily_api_key": TAVILY_KEY}},
        shared_plugins=shared_plugins(),
        **kwargs,
    )


def run(
    kind: str,
    query: str,
    roles: str = "物业经理",
    svc: Services | None = None,
    conversation: Conversation | None = None,
    text: str | None = None,
) -> list[dict]:
    own = svc is None
    svc = svc or services()
    try:
        # as G-Cite's readers run them: the plugin chatflow's cited_answer node streams canonical markers
        return list(
            run_chatflow(text or dsl_text(kind), query, machine_inputs({"user_roles": roles}), svc, conversation)
        )
    finally:
        if own:
            svc.close()


def answer_of(events: list[dict]) -> str:
    return "".join(e["answer"] for e in events if e["event"] == "message")


def finished(events: list[dict], node_id: str) -> dict:
    return next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == node_id)


@pytest.fixture(scope="module")
def shared():
    svc = services()
    yield svc
    svc.close()


# --- the stream ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(DSLS))
def test_chunk_list_arrives_before_the_answer_and_every_marker_names_a_chunk(kind, shared):
    events = run(kind, "巡更时发现异常怎么上报？", svc=shared)
    kinds = [e["event"] for e in events]
    assert kinds[:2] == ["ping", "workflow_started"] and kinds[-2:] == ["message_end", "workflow_finished"]
    merge_at = next(
        i
        for i, e in enumerate(events)
        if e["event"] == "node_finished" and "chunk_metadata" in (e["data"]["outputs"] or {})
    )
    assert merge_at < kinds.index("message")
    chunks = events[merge_at]["data"]["outputs"]["chunk_metadata"]
    assert {c["source_type"] for c in chunks} == {"rag", "web"}
    answer = answer_of(events)
    cited = re.findall(r"\[C:(\d+)\]", answer)
    assert cited and set(cited) <= {c["id"] for c in chunks}
    assert events[-1]["data"]["status"] == "succeeded"
    assert events[-1]["data"]["outputs"]["answer"] == answer
    validated = finished(events, CHECKER[kind])["outputs"]
    assert validated["status"] == "cited" and validated["invalid_ids"] == []
    if kind == "code":
        assert validated["references_by_marker_markdown"] in answer  # the Answer node streamed the reference list
    else:  # markers (what G-Cite's readers ask for): each whole, numbered as the tool's citations, no list
        assert list(dict.fromkeys(cited)) == [c["id"] for c in validated["citations"]]
        assert not answer.rstrip().endswith(")") and "<sup" not in answer


@pytest.mark.parametrize("kind", sorted(DSLS))
def test_an_empty_knowledge_base_and_no_web_results_give_the_insufficient_answer(kind):
    svc = services(knowledge_base={"dataset_id": "d", "dataset_name": "empty", "documents": []}, web_search_fails=True)
    events = run(kind, "今天天气怎么样？", svc=svc)
    svc.close()
    assert events[-1]["event"] == "workflow_finished" and not any(e["event"] == "error" for e in events)
    assert finished(events, "merge")["outputs"]["chunk_count"] == 0
    assert answer_of(events).startswith(INSUFFICIENT)
    assert finished(events, CHECKER[kind])["outputs"]["status"] == "insufficient_evidence"


@pytest.mark.parametrize("kind", sorted(DSLS))
def test_a_failed_web_search_falls_back_to_the_knowledge_base(kind):
    svc = services(web_search_fails=True)
    events = run(kind, "巡更时发现异常怎么上报？", svc=svc)
    svc.close()
    web = finished(events, "web")
    # the web_search tool raises on the refused key, the HTTP Request node fails on Bocha's 401: each node fails
    # and takes its default value (the official Tavily tool's text-only failure: tests/local/test_chatflow_search.py)
    assert web["status"] == "exception"
    assert "refused the API key" in web["error"] if kind == "plugin" else "401" in web["error"]
    chunks = finished(events, "merge")["outputs"]["chunk_metadata"]
    assert chunks and {c["source_type"] for c in chunks} == {"rag"}
    assert re.search(r"\[C:1\]", answer_of(events))
    assert [e["event"] for e in events[-2:]] == ["message_end", "workflow_finished"]
    assert events[-1]["data"]["status"] == "partial-succeeded"


@pytest.mark.parametrize("kind", sorted(DSLS))
def test_a_user_without_the_role_never_sees_a_restricted_chunk_anywhere_in_the_stream(kind, shared):
    query = "冷水机组的供水温度和冷却塔风机怎么设定？"
    allowed = "".join(dify_sse(e) for e in run(kind, query, roles="运维工程师", svc=shared))
    assert RESTRICTED_TEXT in allowed  # the document is found for a user who may see it
    for roles in ("前台", "", "运维"):
        stream = "".join(dify_sse(e) for e in run(kind, query, roles=roles, svc=shared))
        assert RESTRICTED_TEXT not in stream and RESTRICTED_TEXT.replace(" ", "\\u0020") not in stream
        assert "doc-hvac" not in stream  # not even its ids, in any node's outputs (Knowledge Retrieval's included)


def test_knowledge_retrieval_applies_the_pre_filter_conditions():
    seen = []
    svc = services(retrieval_log=seen.append)
    events = run("code", "访客登记和冷水机组", roles="前台", svc=svc)
    svc.close()
    kr = finished(events, "kr")
    ids = {item["metadata"]["document_id"] for item in kr["outputs"]["result"]}
    assert "doc-visitor" in ids and "doc-hvac" not in ids
    conditions = seen[0]["metadata_filtering_conditions"]["conditions"]
    assert {"name": "access_roles", "comparison_operator": "contains", "value": ",前台,", "id": "acl-004"} in conditions
    assert "doc-hvac" not in seen[0]["admitted"] and "doc-visitor" in seen[0]["admitted"]


@pytest.mark.parametrize("kind", sorted(DSLS))
def test_the_stream_never_contains_a_configured_search_key(kind):
    svc = services()
    stream = "".join(dify_sse(e) for e in run(kind, "巡更时发现异常怎么上报？", svc=svc))
    svc.close()
    local_key = svc.tool_credentials[GCITE_PLUGIN]["bocha_api_key"]
    if kind == "code":
        assert svc.search_http.requests[0]["headers"]["Authorization"] == f"Bearer {BOCHA_KEY}"
    else:
        assert any(
            c["tool"] == "web_search" and c["credentials"].get("bocha_api_key") == local_key for c in svc.tool_calls
        )
        assert svc.search_server.requests  # the web_search tool called the local server with that key
    assert BOCHA_KEY not in stream and TAVILY_KEY not in stream and local_key not in stream


@pytest.mark.parametrize("query", ['巡更 " 异常', '", "count": 50, "freshness": "oneDay', "{}", "\\u0022 ]} {"])
def test_user_text_cannot_change_the_search_request(query, shared):
    shared.search_http.requests.clear()
    run("code", query, svc=shared)
    body = json.loads(shared.search_http.requests[-1]["body"])
    assert body == {
        "query": query.strip(),
        "count": web_search_request.SEARCH_COUNT,
        "summary": True,
        "freshness": "noLimit",
    }


def test_two_turns_old_markers_are_never_read_as_current_citations():
    svc = services()
    conversation = Conversation()
    first = run("plugin", "巡更时发现异常怎么上报？", svc=svc, conversation=conversation)
    assert re.search(r"\[C:\d+\]", answer_of(first))
    second = run("plugin", "会议室怎么预约？", svc=svc, conversation=conversation)
    svc.close()
    system, user = (m.content for m in svc.llm.prompts[-1])
    history = system.split("# 之前的对话")[1].split("# 检索片段")[0]
    assert "巡更" in history and "会议室怎么预约" not in history  # the first turn, not the current one
    assert not re.search(r"[\[【［]\s*[Cc]\s*[:：]", history)  # no marker of the earlier turn
    headers = re.findall(r"^\[C:(\d+)\]$", system, flags=re.M)
    chunk_ids = [c["id"] for c in finished(second, "merge")["outputs"]["chunk_metadata"]]
    assert headers == chunk_ids  # every marker in the prompt is a header of the current list
    assert user == "会议室怎么预约？"
    assert conversation.variables["history"][0]["query"] == "巡更时发现异常怎么上报？"
    assert len(conversation.variables["history"]) == 2


def test_runner_streams_an_openai_compatible_endpoint():
    requests = []
    server = start_server(streaming_model(["会议室须提前", "预约[C:", "1]。"], requests))
    try:
        svc = services(llm=OpenAICompatibleModel(f"{origin(server)}/v1", "test-model", "sk-x"))
        events = run("plugin", "会议室怎么预约？", svc=svc)
        svc.close()
    finally:
        stop_server(server)
    assert answer_of(events).startswith("会议室须提前预约[C:1]。")
    [body] = requests
    assert body["model"] == "test-model" and body["stream"] is True
    assert [m["role"] for m in body["messages"]] == ["system", "user"] and body["_authorization"] == "Bearer sk-x"


def test_the_client_renumbers_the_stream_and_lists_only_cited_sources(shared):
    events = run("plugin", "巡更时发现异常怎么上报？", svc=shared)
    typed = list(dify_events(parse_dify_sse("".join(dify_sse(e) for e in events).splitlines())))
    kinds = [type(e).__name__ for e in typed]
    assert kinds.index("Sources") < kinds.index("Text")  # the chunk list before the answer
    text = "".join(e.text for e in typed if isinstance(e, Text))
    assert "[C:" not in text and any(isinstance(e, Cite) for e in typed)
    new_numbers = [n for e in typed if isinstance(e, Cite) for n in e.new]
    assert new_numbers == list(range(1, len(new_numbers) + 1))  # renumbered 1, 2, 3 in order of appearance
    done = next(e for e in typed if isinstance(e, Done))
    assert [c["number"] for c in done.citations] == new_numbers  # only the cited sources


def test_run_command_prints_the_service_api_stream(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gcite",
            "run",
            str(DSLS["code"]),
            "--query",
            "会议室怎么预约？",
            "--inputs",
            '{"user_roles": "前台"}',
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    blocks = done.stdout.split("\n\n")
    assert blocks[0] == "event: ping" and blocks[-1] == ""
    assert all(b.startswith("data: ") or b == "event: ping" for b in blocks[:-1])
    events = [json.loads(b[6:]) for b in blocks[:-1] if b != "event: ping"]
    assert events[0]["event"] == "workflow_started" and events[-1]["event"] == "workflow_finished"
    assert {"node_started", "node_finished", "message", "workflow_finished"} <= {e["event"] for e in events}


# --- the DSL files ------------------------------------------------------------------------------------


def load(kind: str) -> dict:
    return safe_load(DSLS[kind].read_text(encoding="utf-8"))


def test_the_committed_dsl_files_are_what_the_builder_generates():
    for path, text in chatflows.generated().items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run `make dsl` (or `make package`)"


def test_code_nodes_are_exactly_the_node_files():
    sources = {
        "acl_roles": "acl_prefilter",
        "acl_filter": "filter_chunks",
        "web_body": "web_search_request",
        "merge": "merge_chunks",
        "validate": "validate_citations",
        "remember": "remember_turn",
    }
    code_nodes = {n["id"]: n["data"] for n in load("code")["workflow"]["graph"]["nodes"] if n["data"]["type"] == "code"}
    assert set(code_nodes) == set(sources)
    for node_id, data in code_nodes.items():
        assert data["code"] == (ROOT / "nodes" / f"{sources[node_id]}.py").read_text(encoding="utf-8"), node_id
        assert data["code_language"] == "python3"


@pytest.mark.parametrize("kind", sorted(DSLS))
def test_dsl_shape(kind):
    document = load(kind)
    assert document["version"] == "0.1.5" and isinstance(document["version"], str)
    assert document["kind"] == "app" and document["app"]["mode"] == "advanced-chat"
    nodes = document["workflow"]["graph"]["nodes"]
    assert all(NODE_ID.fullmatch(n["id"]) for n in nodes)
    allowed = {
        "string",
        "number",
        "object",
        "boolean",
        "array[string]",
        "array[number]",
        "array[object]",
        "array[boolean]",
    }
    for node in nodes:
        for output in (node["data"].get("outputs") or {}).values():
            assert output["type"] in allowed
    kr = next(n["data"] for n in nodes if n["data"]["type"] == "knowledge-retrieval")
    assert kr["metadata_filtering_mode"] == "manual" and kr["metadata_model_config"]["name"]
    web = next(n["data"] for n in nodes if n["id"] == "web")
    assert web["error_strategy"] == "default-value"
    answer = next(n["data"] for n in nodes if n["data"]["type"] == "answer")
    remember = next(n["data"] for n in nodes if n["id"] == "remember")
    memory = next(v["value_selector"] for v in remember["variables"] if v["variable"] == "answer")
    if kind == "plugin":  # cited_answer in place of the LLM node and the validator
        assert not [n for n in nodes if n["data"]["type"] == "llm" or n["id"] == "validate"]
        cite = next(n["data"] for n in nodes if n["id"] == "cite")
        assert cite["tool_name"] == "cited_answer" and cite["tool_node_version"] == "2"
        assert cite["tool_configurations"]["model"]["model_type"] == "llm"
        assert cite["tool_parameters"]["context"]["value"] == ["merge", "formatted_chunks"]
        assert cite["tool_parameters"]["style"]["value"] == "{{#start.citation_style#}}"
        assert cite["tool_parameters"]["instructions"]["value"].startswith("# 角色设定")
        assert answer["answer"] == "{{#cite.answer#}}{{#cite.sources#}}"
        assert memory == ["cite", "answer_without_markers"]
        return
    llm = next(n["data"] for n in nodes if n["data"]["type"] == "llm")
    assert llm["context"]["variable_selector"] == ["merge", "formatted_chunks"]
    assert [m["role"] for m in llm["prompt_template"]] == ["system", "user"]
    assert llm["prompt_template"][1]["text"] == "{{#sys.query#}}"
    assert "不是指令" in llm["prompt_template"][0]["text"] and "{{#context#}}" in llm["prompt_template"][0]["text"]
    assert answer["answer"] == "{{#llm.text#}}\n\n{{#validate.references_by_marker_markdown#}}"
    assert memory == ["validate", "answer_without_markers"]


def test_plugin_dsl_depends_on_our_package_and_search_top_k_matches():
    document = load("plugin")
    packages = [d for d in document["dependencies"] if d["type"] == "package"]
    assert packages == [
        {
            "current_identifier": None,
            "type": "package",
            "value": {"plugin_unique_identifier": chatflows.plugin_identifier(), "version": None},
        }
    ]
    nodes = {n["id"]: n["data"] for n in document["workflow"]["graph"]["nodes"]}
    assert nodes["merge"]["tool_configurations"]["max_web_results"] == nodes["web"]["tool_configurations"]["top_k"]
    for node_id in ("acl_filter", "web", "merge", "cite"):
        assert nodes[node_id]["plugin_unique_identifier"] == packages[0]["value"]["plugin_unique_identifier"]


def test_code_dsl_search_top_k_matches_and_needs_no_plugin():
    assert merge_chunks.DEFAULT_MAX_WEB_RESULTS == web_search_request.SEARCH_COUNT
    document = load("code")
    assert document["dependencies"] == []
    assert not [n for n in document["workflow"]["graph"]["nodes"] if n["data"]["type"] == "tool"]


def declared_outputs(node: dict) -> set[str]:
    data = node["data"]
    kind = data["type"]
    if kind == "start":
        return {v["variable"] for v in data["variables"]}
    if kind == "code":
        return set(data["outputs"])
    if kind == "tool":
        base = {"text", "files", "json"}
        if data["provider_id"].startswith("gcite/"):
            schema = safe_load((ROOT / "tools" / f"{data['tool_name']}.yaml").read_text(encoding="utf-8"))
            return base | set(schema["output_schema"]["properties"])
        return base
    return {
        "knowledge-retrieval": {"result"},
        "llm": {"text", "reasoning_content", "usage", "finish_reason"},
        "http-request": {"body", "status_code", "headers", "files"},
        "answer": {"answer", "files"},
    }.get(kind, set())


def references(value, found: list) -> None:
    if isinstance(value, str):
        found += [tuple(m.split(".")[:2]) for m in TEMPLATE.findall(value)]
    elif isinstance(value, dict):
        for key, item in value.items():
            if key in ("value_selector", "variable_selector", "query_variable_selector") and isinstance(item, list):
                found.append(tuple(item[:2]))
            elif key == "value" and value.get("type") == "variable" and isinstance(item, list):
                found.append(tuple(item[:2]))
            elif key == "value" and value.get("input_type") == "variable":
                found.append(tuple(item[:2]))
            else:
                references(item, found)
    elif isinstance(value, list):
        for item in value:
            references(item, found)


@pytest.mark.parametrize("kind", sorted(DSLS))
def test_every_variable_reference_resolves_to_an_upstream_output(kind):
    document = load(kind)
    graph = document["workflow"]["graph"]
    nodes = {n["id"]: n for n in graph["nodes"]}
    parents: dict[str, set[str]] = {n: set() for n in nodes}
    for edge in graph["edges"]:
        parents[edge["target"]].add(edge["source"])

    def upstream(node_id: str) -> set[str]:
        seen, todo = set(), list(parents[node_id])
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo += parents[current]
        return seen

    conversation = {v["name"] for v in document["workflow"]["conversation_variables"]}
    checked = 0
    for node_id, node in nodes.items():
        found: list = []
        references(copy.deepcopy(node["data"]), found)
        for ref in found:
            checked += 1
            source, name = ref[0], ref[1] if len(ref) > 1 else ""
            if source == "sys":
                assert name in {"query", "files", "conversation_id", "user_id", "dialogue_count"}, ref
            elif source == "conversation":
                assert name in conversation, ref
            else:
                assert source in upstream(node_id), f"{node_id} reads {ref} from a node that is not upstream"
                assert name in declared_outputs(nodes[source]), f"{node_id} reads undeclared {ref}"
    assert checked >= 15


@pytest.mark.parametrize(
    "dsl,extra,message",
    [
        ("missing.yml", [], "FileNotFoundError"),
        ("not_a_flow.yml", [], "not a chatflow DSL"),
        ("no_start.yml", [], "exactly one start node"),
        ("code", ["--inputs", "[1]"], "--inputs must be a JSON object"),
        ("code", ["--inputs", "{oops"], "--inputs is not JSON"),
        ("code", ["--llm-base-url", "http://127.0.0.1:9"], "--llm-base-url needs --llm-model"),
    ],
)
def test_run_command_reports_bad_input_clearly(tmp_path, dsl, extra, message):
    from gcite.cli.main import main as cli

    (tmp_path / "not_a_flow.yml").write_text("kind: app\n")
    (tmp_path / "no_start.yml").write_text("workflow:\n  graph:\n    nodes: []\n    edges: []\n")
    path = str(DSLS["code"]) if dsl == "code" else str(tmp_path / dsl)
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli(["run", path, "--query", "q", *extra]) == 2
    assert message in err.getvalue()


def test_build_dsl_answer_layouts(tmp_path, capsys):
    """--answer: cited (plugin default), llm-node (today's form, the Code-node default), clean (wait for the
    validator's clean numbers); a Code-node chatflow cannot be cited (a Code node cannot call a model)."""
    from gcite.cli.main import main

    def answer_and_types(variant):
        document = safe_load(chatflows.chatflow_text(variant))
        nodes = {n["id"]: n["data"] for n in document["workflow"]["graph"]["nodes"]}
        return nodes["answer"]["answer"], {i: d["type"] for i, d in nodes.items()}

    for plugin in (True, False):
        answer, types = answer_and_types(chatflows.Variant(plugin=plugin, answer="clean"))
        assert answer == "{{#validate.answer#}}\n\n{{#validate.references_markdown#}}"
        assert types["llm"] == "llm" and "cite" not in types
        answer, types = answer_and_types(chatflows.Variant(plugin=plugin, answer="llm-node"))
        assert answer == "{{#llm.text#}}\n\n{{#validate.references_by_marker_markdown#}}"
    answer, types = answer_and_types(chatflows.Variant())
    assert answer == "{{#cite.answer#}}{{#cite.sources#}}" and "llm" not in types and types["cite"] == "tool"
    with pytest.raises(ValueError, match="Code node cannot call a model"):
        chatflows.Variant(plugin=False, answer="cited")
    assert main(["build-dsl", "--answer", "clean"]) != 0
    assert "--answer needs --out DIR" in capsys.readouterr().err
    assert main(["build-dsl", "--answer", "cited", "--lang", "en", "--out", str(tmp_path)]) == 0
    code = safe_load((tmp_path / "gcite_chatflow_code.en.yml").read_text(encoding="utf-8"))
    assert "{{#llm.text#}}" in next(
        n["data"]["answer"] for n in code["workflow"]["graph"]["nodes"] if n["id"] == "answer"
    )  # cited applies to the plugin chatflow only
