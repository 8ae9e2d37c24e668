"""Every shipped chatflow in Dify's own api server (`make test-dify`; the `dify` fixture is in conftest.py).

In file order: the operator's set-up (console, knowledge base), then per chatflow two streaming turns, the ACL
for a user without the role, 40 unknown citation ids; then `gcite acl audit` / `acl fix --apply` against the real
Knowledge API; then a builder's own chatflow after `gcite retrofit`; then the plugin's endpoint through the
stand-in daemon into Dify's real app. Each step asserts.
"""

import json
import re
import subprocess
import sys
import time
from typing import Any

import jwt
import pytest
import requests
import yaml

from citations.answer_layout import machine_inputs
from gcite.authoring.retrofit import PREFIX, new_id
from gcite.protocol import EVENTS, parse_gcite_sse
from tests.dify.console import chat
from tests.dify.harness import (
    CITED_APP,
    DSL_FILES,
    ENDPOINT_SECRET,
    HOOK_ID,
    METADATA_FIELDS,
    RESTRICTED_QUERIES,
    RETROFIT_APP,
    RETROFIT_LOOP_APP,
    ROOT,
    dump,
    restricted_texts,
    stored_metadata,
)
from tests.dify.scripted_llm import is_title_request
from tests.support.yamltext import safe_load

MARKER = re.compile(r"\[C:(\d+)\]")
VISITOR_QUERY = "访客来访需要怎么登记？"  # the visitor document: roles 前台 and 物业经理
FOLLOW_UP = "会议室怎么预约？"
PARKING_QUERY = "地下停车场临时车辆怎么计费？"  # the document whose access_roles is JSON null
UNKNOWN_IDS = {str(900 + n) for n in range(40)}
FORTY_UNKNOWN = "访客须在前台出示证件登记" + "".join(f"[C:{i}]" for i in sorted(UNKNOWN_IDS)) + "。"  # no such chunks


# --- helpers ------------------------------------------------------------------------------------------------------


def turn(dify, dsl: str, query: str, roles: str, *, user: str = "tester", conversation_id: str = "") -> list[dict]:
    """One turn as G-Cite's readers ask: the plugin chatflows' cited_answer node streams canonical markers
    (test_cited_answer_in_dify.py reads them as Dify's chat does, without the input: superscripts)."""
    status, events = chat(
        dify.base_url,
        dify.apps[dsl].key,
        query,
        machine_inputs({"user_roles": roles}),
        user=user,
        conversation_id=conversation_id,
    )
    assert status == 200, events
    return events


def finished(events: list[dict], node_id: str) -> dict[str, Any]:
    found = [e for e in events if e.get("event") == "node_finished" and e["data"].get("node_id") == node_id]
    assert len(found) == 1, f"expected one node_finished of {node_id!r}: {[e.get('event') for e in events]}"
    return found[0]["data"]


def answer_of(events: list[dict]) -> str:
    return "".join(e.get("answer") or "" for e in events if e.get("event") == "message")


def workflow_status(events: list[dict]) -> dict[str, Any]:
    ends = [e for e in events if e.get("event") == "workflow_finished"]
    assert len(ends) == 1 and events[-1] is ends[0], [e.get("event") for e in events[-3:]]
    return ends[0]["data"]


def assert_cited_turn(events: list[dict], merge: str = "merge") -> tuple[list[dict], str]:
    """Succeeded; the merge node's chunk list comes before the first `message`; the answer cites only its ids."""
    assert workflow_status(events)["status"] == "succeeded", dump(events[-1:])
    names = [(e.get("event"), (e.get("data") or {}).get("node_id")) for e in events]
    merge_at = names.index(("node_finished", merge))
    first_message = names.index(("message", None))
    assert merge_at < first_message, names
    chunks = finished(events, merge)["outputs"]["chunk_metadata"]
    ids = {c["id"] for c in chunks}
    answer = answer_of(events)
    cited = set(MARKER.findall(answer))
    assert cited, f"the scripted answer cites nothing: {answer!r}"
    assert cited <= ids, (cited, ids, answer)
    return chunks, answer


def checker(dsl: str) -> str:
    """The node whose outputs hold the citations: the plugin chatflows' cited_answer, the Code ones' validator."""
    return "validate" if "_code" in dsl else "cite"


def llm_prompt(dify, app_id: str, query: str, containing: str = "") -> str:
    """The system prompt of the chatflow LLM call for this query (the daemon saw every call). A tool's model call
    (cited_answer) carries no app id: then the latest call for the query holding `containing`."""
    for request in reversed(dify.daemon.llm_requests):
        messages = request["data"]["prompt_messages"]
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        if (
            request.get("app_id") in (app_id, None)
            and messages
            and messages[-1].get("content") == query
            and (containing in system)
        ):
            return "\n".join(m["content"] for m in messages if m["role"] == "system")
    raise AssertionError(f"no LLM call for {query!r} in app {app_id}")


# --- the operator's set-up ----------------------------------------------------------------------------------------


def test_console_setup_imports_all_four_chatflows_and_the_retrofitted_one(dify):
    assert dify.tenant_id and dify.console.http.cookies.get("access_token")
    assert set(dify.apps) == {
        *DSL_FILES,
        RETROFIT_APP,
        RETROFIT_LOOP_APP,
        CITED_APP,
    }  # CITED_APP: test_cited_answer_in_dify.py
    for app in dify.apps.values():
        assert app.import_result["status"] in ("completed", "completed-with-warnings"), app.import_result
        assert app.import_result["imported_dsl_version"] and app.key.startswith("app-")


def test_knowledge_base_holds_the_sample_documents_and_their_metadata(dify):
    stored = stored_metadata(dify)
    for document in dify.kb["documents"]:
        expected = {name: document["doc_metadata"].get(name) for name in METADATA_FIELDS}
        assert stored[document["document_id"]] == expected, document["document_id"]
    assert stored["doc-parking"]["access_roles"] is None  # stored as JSON null, not as "" or "null"
    for document in dify.kb["documents"]:
        dify_id = dify.documents[document["document_id"]]
        segments = dify.knowledge.get(f"/datasets/{dify.dataset_id}/documents/{dify_id}/segments", "segments")
        assert [s["content"] for s in segments["data"]] == [s["content"] for s in document["segments"]]


# --- every chatflow ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dsl", DSL_FILES)
def test_two_turns_cite_existing_chunks_and_turn_two_sees_turn_one(dify, dsl):
    first = turn(dify, dsl, VISITOR_QUERY, "前台")
    chunks, _ = assert_cited_turn(first)
    assert any(c["source_type"] == "rag" and c["document_title"] == "访客管理制度" for c in chunks), chunks
    conversation = first[-1].get("conversation_id") or next(
        e["conversation_id"] for e in first if e.get("conversation_id")
    )
    remembered = finished(first, checker(dsl))["outputs"]["answer_without_markers"]
    second = turn(dify, dsl, FOLLOW_UP, "前台", conversation_id=conversation)
    assert_cited_turn(second)
    assert {e.get("conversation_id") for e in second if e.get("conversation_id")} == {conversation}
    prompt = llm_prompt(dify, dify.apps[dsl].app_id, FOLLOW_UP, remembered)
    assert VISITOR_QUERY in prompt and remembered in prompt, prompt[-800:]


@pytest.mark.parametrize("dsl", DSL_FILES)
def test_a_user_without_the_role_never_receives_a_restricted_chunk(dify, dsl):
    forbidden = restricted_texts(dify, set())
    assert forbidden
    for query in RESTRICTED_QUERIES:
        events = turn(dify, dsl, query, "", user="no-role")
        assert workflow_status(events)["status"] == "succeeded"
        text = dump(events)
        leaked = [t for t in forbidden if t in text]
        assert not leaked, (query, leaked)
    # the same question from a user with the role does reach the document: the check above can fail
    allowed = dump(turn(dify, dsl, VISITOR_QUERY, "前台", user="frontdesk"))
    assert "访客须在前台出示证件登记" in allowed


@pytest.mark.parametrize("dsl", DSL_FILES)
def test_forty_unknown_ids_leave_the_validate_node_succeeded(dify, dsl):
    dify.daemon.script = lambda messages: FORTY_UNKNOWN
    try:
        events = turn(dify, dsl, VISITOR_QUERY, "前台")
    finally:
        dify.daemon.script = None
    validate = finished(events, checker(dsl))
    assert validate["status"] == "succeeded", validate.get("error")
    assert workflow_status(events)["status"] == "succeeded"
    outputs = validate["outputs"]
    listed = outputs["invalid_ids"]
    ids = [i for i in listed if not re.fullmatch(r"…and \d+ more", i)]  # a Code node's list holds 30 at most
    assert ids and set(ids) <= UNKNOWN_IDS, listed
    assert not MARKER.search(outputs["answer_without_markers"] or "")
    if checker(dsl) == "cite":  # every id unknown: cited_answer's stream shows none of them either
        assert not MARKER.search(answer_of(events))


# --- a builder's own chatflow after `gcite retrofit --nodes code` (harness: RETROFIT_FIXTURE) -------------------------


def test_a_retrofitted_builder_chatflow_cites_in_real_dify(dify):
    document = dify.retrofitted.document
    nodes = {n["id"]: n["data"]["type"] for n in document["workflow"]["graph"]["nodes"]}
    llm = next(node_id for node_id, kind in nodes.items() if kind == "llm" and not node_id.startswith(PREFIX))
    merge, validate = new_id("merge", llm), new_id("validate", llm)
    assert nodes[merge] == nodes[validate] == "code", nodes  # --nodes code: no plugin tool
    builders = {node_id for node_id in nodes if not node_id.startswith(PREFIX)}
    assert {nodes[b] for b in builders} == {"start", "knowledge-retrieval", "llm", "answer"}, nodes
    status, events = chat(dify.base_url, dify.apps[RETROFIT_APP].key, VISITOR_QUERY, {}, user="builder")
    assert status == 200, events  # no Start input: the builder's chatflow has none, and retrofit adds none here
    chunks, answer = assert_cited_turn(events, merge)
    assert any(c["source_type"] == "rag" and c["document_title"] == "访客管理制度" for c in chunks), chunks
    checked = finished(events, validate)
    assert checked["status"] == "succeeded", checked.get("error")
    assert checked["outputs"]["invalid_ids"] == [], checked["outputs"]
    assert set(checked["outputs"]["id_map"]) == set(MARKER.findall(answer)), checked["outputs"]  # what it cites
    for node_id in builders | {merge}:
        assert finished(events, node_id)["status"] == "succeeded", (node_id, finished(events, node_id).get("error"))
    calls = [
        r
        for r in dify.daemon.llm_requests
        if r.get("app_id") == dify.apps[RETROFIT_APP].app_id and not is_title_request(r["data"]["prompt_messages"])
    ]
    assert len(calls) == 1, calls  # the LLM node's; no memory, so the prompt is the builder's system prompt alone
    prompt = "\n".join(m["content"] for m in calls[0]["data"]["prompt_messages"] if m["role"] == "system")
    assert "注意保留图片信息" in prompt and "[C:" in prompt, prompt[-800:]  # the builder's prompt, with the chunks


def test_a_retrofitted_llm_inside_a_loop_cites_in_real_dify(dify):
    """Issue 33: retrofit places the merge and validate nodes inside the LLM's loop (parentId, isInLoop, loop_id,
    zIndex, relative position); Dify imports that, runs them inside the loop (their events carry the loop's id) and
    the merge node reads the retrieval before the loop."""
    document = dify.retrofitted_loop.document
    nodes = {n["id"]: n for n in document["workflow"]["graph"]["nodes"]}
    loop = next(i for i, n in nodes.items() if n["data"]["type"] == "loop")
    llm = next(i for i, n in nodes.items() if n["data"]["type"] == "llm")
    merge, validate = new_id("merge", llm), new_id("validate", llm)
    assert nodes[merge]["parentId"] == nodes[validate]["parentId"] == loop
    status, events = chat(dify.base_url, dify.apps[RETROFIT_LOOP_APP].key, VISITOR_QUERY, {}, user="builder")
    assert status == 200, events
    assert workflow_status(events)["status"] == "succeeded", dump(events[-1:])
    merged, checked = finished(events, merge), finished(events, validate)
    assert merged["status"] == checked["status"] == "succeeded", (merged.get("error"), checked.get("error"))
    assert merged.get("loop_id") == checked.get("loop_id") == loop, (merged.get("loop_id"), checked.get("loop_id"))
    chunks = merged["outputs"]["chunk_metadata"]
    assert any(c["source_type"] == "rag" and c["document_title"] == "访客管理制度" for c in chunks), chunks
    llm_text = finished(events, llm)["outputs"]["text"]
    cited = set(MARKER.findall(llm_text))
    assert cited and cited <= {c["id"] for c in chunks}, (llm_text, chunks)
    assert checked["outputs"]["invalid_ids"] == [] and set(checked["outputs"]["id_map"]) == cited, checked["outputs"]


# --- gcite acl against the real Knowledge API ------------------------------------------------------------------------


def gcite_acl(dify, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gcite", "acl", *args, "--dataset", dify.dataset_id, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "DIFY_BASE_URL": f"{dify.base_url}/v1", "DIFY_DATASET_API_KEY": dify.dataset_key},
    )


def parking_retrieved(dify) -> bool:
    events = turn(dify, "gcite_chatflow.yml", PARKING_QUERY, "物业经理", user="manager")
    results = finished(events, "kr")["outputs"]["result"]
    parking = dify.documents["doc-parking"]
    return any(r["metadata"]["document_id"] == parking for r in results)


def test_acl_audit_and_fix_repair_the_json_null_document_in_real_dify(dify):
    assert not parking_retrieved(dify)  # Dify's metadata SQL never admits a JSON null
    audit = gcite_acl(dify, "audit")
    rows = [json.loads(line) for line in audit.stdout.splitlines() if line.startswith("{")]
    by_id = {row["id"]: row for row in rows if "id" in row}
    parking = by_id[dify.documents["doc-parking"]]
    assert parking["status"] == "fix" and parking["value"] is None and parking["value_set"], parking
    assert audit.returncode != 0, audit.stdout  # a document needs attention
    before = stored_metadata(dify)
    fixed = gcite_acl(dify, "fix", "--apply")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    after = stored_metadata(dify)
    for sample_id, values in before.items():
        others = {k: v for k, v in values.items() if k != "access_roles"}
        assert {k: v for k, v in after[sample_id].items() if k != "access_roles"} == others, sample_id
    assert after["doc-parking"]["access_roles"] == ""
    assert parking_retrieved(dify)  # the JSON-null document reappears in retrieval
    again = gcite_acl(dify, "audit")
    assert again.returncode == 0, again.stdout


# --- the plugin's endpoint through the stand-in daemon into Dify's real app -------------------------------------------


def endpoint_chat(dify, query: str, roles: list[str], sub: str) -> tuple[int, list[tuple[str, Any]], str]:
    token = jwt.encode({"sub": sub, "roles": roles, "exp": int(time.time()) + 600}, ENDPOINT_SECRET, algorithm="HS256")
    response = requests.post(
        f"{dify.daemon.url}/e/{HOOK_ID}/gcite/chat",
        json={"query": query},
        timeout=240,
        headers={"Authorization": f"Bearer {token}"},
    )
    return response.status_code, list(parse_gcite_sse(response.text)), response.text


def test_endpoint_streams_the_gcite_protocol_from_dify_and_hides_restricted_text(dify):
    asked = len(dify.daemon.app_requests)
    status, events, text = endpoint_chat(dify, VISITOR_QUERY, ["前台"], "frontdesk")
    assert status == 200, text
    names = [name for name, _ in events]
    assert set(names) <= set(EVENTS) and names[0] == "ready" and names[-1] == "done", names
    assert "sources" in names and "text" in names
    sources = next(data for name, data in events if name == "sources")
    assert any(s["document_title"] == "访客管理制度" for s in sources["sources"]), sources
    assert dify.daemon.app_requests[asked]["app_id"] == dify.apps["gcite_chatflow.yml"].app_id
    # the shipped chatflow's cited_answer, asked for markers: clean text, cite events, done from the tool's outputs
    assert dify.daemon.app_requests[asked]["inputs"]["citation_style"] == "markers"
    shown = "".join(data["text"] for name, data in events if name == "text")
    assert "[C:" not in shown and "<sup" not in shown, shown
    done = events[-1][1]
    assert done["citations"] and [c["number"] for c in done["citations"]] == list(range(1, len(done["citations"]) + 1))
    assert all("support" in c for c in done["citations"])
    assert [n for name, data in events if name == "cite" for n in data["new"]] == [
        c["number"] for c in done["citations"]
    ]
    forbidden = restricted_texts(dify, set())
    for query in RESTRICTED_QUERIES:
        status, events, text = endpoint_chat(dify, query, [], "guest")
        assert status == 200 and events[-1][0] == "done", text
        assert not [t for t in forbidden if t in text], query


# --- a broken chatflow fails here: the checks above can fail in real Dify -------------------------------------------


def shipped(dify, dsl: str) -> dict[str, Any]:
    return safe_load(dify.apps[dsl].dsl_text)


def non_uuid_variable_id(dify) -> tuple[str, Any]:
    dsl = shipped(dify, "gcite_chatflow.yml")
    dsl["workflow"]["conversation_variables"][0]["id"] = "history"
    return yaml.safe_dump(dsl, allow_unicode=True, sort_keys=False), None


def code_node_returning_31_items(dify) -> tuple[str, Any]:
    dsl = shipped(dify, "gcite_chatflow_code.yml")
    validate = next(n for n in dsl["workflow"]["graph"]["nodes"] if n["id"] == "validate")
    assert "max_list_items=30," in validate["data"]["code"]
    validate["data"]["code"] = validate["data"]["code"].replace("max_list_items=30,", "max_list_items=31,")
    return yaml.safe_dump(dsl, allow_unicode=True, sort_keys=False), lambda messages: FORTY_UNKNOWN


def wrong_variable_selector(dify) -> tuple[str, Any]:
    dsl = shipped(dify, "gcite_chatflow.yml")
    merge = next(n for n in dsl["workflow"]["graph"]["nodes"] if n["id"] == "merge")
    assert merge["data"]["tool_parameters"]["rag_chunks"]["value"] == ["acl_filter", "chunks"]
    merge["data"]["tool_parameters"]["rag_chunks"]["value"] = ["acl_filter", "chunk"]
    return yaml.safe_dump(dsl, allow_unicode=True, sort_keys=False), None


def problem_in_dify(dify, dsl_text: str, script: Any) -> str | None:
    """What the checks of the shipped chatflows find wrong with this one in Dify (None: nothing)."""
    try:
        app_id, _ = dify.console.import_app(dsl_text)
        dify.console.publish(app_id)
        key = dify.console.app_api_key(app_id)
        dify.daemon.script = script
        try:
            status, events = chat(
                dify.base_url, key, VISITOR_QUERY, machine_inputs({"user_roles": "前台"}), user="breaker"
            )
        finally:
            dify.daemon.script = None
        assert status == 200, events
        for event in events:
            if event.get("event") == "node_finished":
                assert event["data"]["status"] == "succeeded", (event["data"]["node_id"], event["data"].get("error"))
        chunks, _ = assert_cited_turn(events)
        assert any(c["document_title"] == "访客管理制度" for c in chunks), "the knowledge chunk is missing"
    except AssertionError as error:
        return str(error)[:500]
    return None


BREAKAGES = {  # how each breakage shows in Dify
    non_uuid_variable_id: '"status": "failed"',  # the run fails before its first node
    code_node_returning_31_items: "must be less than 30 elements",  # Dify's Code-node output limit
    wrong_variable_selector: "the knowledge chunk is missing",  # Dify reads the missing variable as nothing
}


@pytest.mark.parametrize("breakage", list(BREAKAGES), ids=lambda f: f.__name__)
def test_a_broken_chatflow_fails_the_checks_in_real_dify(dify, breakage):
    text, script = breakage(dify)
    problem = problem_in_dify(dify, text, script)
    assert problem, f"{breakage.__name__}: Dify ran the broken chatflow and every check passed"
    assert BREAKAGES[breakage] in problem, problem


# --- the stand-ins were used as Dify uses the real programs -----------------------------------------------------------


def test_dify_made_only_the_daemon_calls_the_stand_in_serves_and_ran_code_in_the_sandbox(dify):
    assert dify.daemon.unknown == []
    paths = {path for _, path in dify.daemon.calls}
    assert {"dispatch/llm/invoke", "dispatch/tool/invoke", "management/tool"} <= paths, paths
    assert dify.sandbox.runs and all(r["answer"]["code"] == 0 for r in dify.sandbox.runs)
