"""The chat endpoint through the real plugin process over stdio, the daemon played by `PluginProcess`: app
invocations answered by running the shipped chatflow DSLs on the runner (`AppHost`), and by canned Dify-shaped
streams for the error paths."""

import json
import sys
import time

import pytest

from citations.filter import parse_roles
from gcite.authoring.chatflows import CODE_DSL, PLUGIN_DSL
from gcite.local.app_host import AppHost, sample_services
from gcite.local.knowledge import load_json
from gcite.local.plugin_process import PluginProcess
from tests.support import ROOT
from tests.support.endpoint import (
    ORIGIN,
    SECRET,
    SETTINGS,
    Canned,
    answer_text,
    assert_protocol,
    chunk,
    dify_stream,
    envelope,
    events_of,
    node,
    post,
    raw_token,
    token,
    unsigned_token,
)

KNOWLEDGE = load_json("knowledge_base.json")
SAMPLE_USERS = {"guest": [], "frontdesk": ["前台"], "engineer": ["运维工程师"], "manager": ["物业经理"]}
RESTRICTED_QUERIES = ("冷水机组供水温度设定为多少？", "访客来访需要怎么登记？")
# what another node's outputs or Dify's envelope would put on the wire; none of it may reach the caller
NEVER_SENT = (
    "formatted_chunks",
    "chunk_metadata",
    "access_roles",
    "user_roles",
    "sys.",
    "role_1",
    "seg-",
    "doc-",
    "ds-building-ops",
    "oss://",
    "[C:",
    "【C",
    "workflow_run_id",
    "node_id",
    "segment_id",
    "dataset",
    "gcite:no-role",
    "task_id",
    "score",
)


@pytest.fixture(scope="module")
def plugin():
    with PluginProcess(ROOT, sys.executable) as process:
        yield process


@pytest.fixture(scope="module")
def services():
    shared = sample_services()
    yield shared
    shared.close()


@pytest.fixture(scope="module")
def plugin_dsl_host(services):
    return AppHost(PLUGIN_DSL.read_text(encoding="utf-8"), services, app_id="app-gcite")


def restricted_texts(roles: list[str]) -> list[str]:
    """Titles and chunk texts of the sample documents these roles may not see (ACL as the filter node reads it)."""
    texts = []
    for document in KNOWLEDGE["documents"]:
        allowed = parse_roles(document["doc_metadata"]["access_roles"])
        if allowed is not None and not allowed & set(roles):
            texts += [document["doc_metadata"]["document_title"], document["document_name"]]
            texts += [segment["content"] for segment in document["segments"]]
    return texts


def windows(text: str, size: int = 8) -> set[str]:
    return {text[i : i + size] for i in range(max(1, len(text) - size + 1))}


PUBLIC_WINDOWS = set().union(
    *(windows(page["title"]) | windows(page["content"]) for page in load_json("web_corpus.json"))
)


# --- end to end on the shipped chatflows --------------------------------------------------------------------------


def test_no_restricted_byte_reaches_any_sample_user_on_the_shipped_chatflow(plugin, plugin_dsl_host):
    calls = {
        (user, query): post(plugin, {"query": query}, bearer=token(user, roles), handler=plugin_dsl_host)
        for user, roles in SAMPLE_USERS.items()
        for query in RESTRICTED_QUERIES
    }
    seen_restricted = {}
    for (user, query), call in calls.items():
        events = events_of(call)
        assert call.status == 200 and call.error is None
        assert_protocol(call.text, events)
        assert events[-1][0] == "done", events[-1]
        for never in NEVER_SENT:
            assert never not in call.text, (user, query, never)
        # a window that is also on a public web page of the local search corpus may come from the web results
        forbidden = set().union(*(windows(t) for t in restricted_texts(SAMPLE_USERS[user]))) - PUBLIC_WINDOWS
        leaked = [w for w in forbidden if w in call.text]
        assert not leaked, (user, query, leaked[:3])
        assert call.app_requests[0]["inputs"] == {
            "user_roles": json.dumps(SAMPLE_USERS[user], ensure_ascii=False),
            "citation_style": "markers",
        }
        seen_restricted[(user, query)] = any(w in call.text for t in restricted_texts([]) for w in windows(t))
    # the control: users with the role do get the restricted documents, so the checks above could fail
    assert seen_restricted[("engineer", RESTRICTED_QUERIES[0])] and seen_restricted[("manager", RESTRICTED_QUERIES[0])]
    assert seen_restricted[("frontdesk", RESTRICTED_QUERIES[1])] and seen_restricted[("manager", RESTRICTED_QUERIES[1])]


@pytest.mark.parametrize("dsl", [PLUGIN_DSL, CODE_DSL], ids=["plugin-dsl", "code-dsl"])
def test_a_cited_answer_streams_without_the_answer_nodes_reference_list(plugin, services, dsl):
    host = AppHost(dsl.read_text(encoding="utf-8"), services)
    call = post(plugin, {"query": "巡更时发现异常怎么上报？"}, bearer=token("alice", ["物业经理"]), handler=host)
    events = events_of(call)
    assert_protocol(call.text, events)
    names = [name for name, _ in events]
    assert names[:3] == ["ready", "sources", "text"] and names[-1] == "done"
    done = events[-1][1]
    assert done["status"] == "cited" and [c["number"] for c in done["citations"]] == [1, 2]
    cites = [data for name, data in events if name == "cite"]
    assert [c["numbers"] for c in cites] == [[1], [2]] and [c["new"] for c in cites] == [[1], [2]]
    assert [c["ids"][0] for c in cites] == [c["id"] for c in done["citations"]]
    text = answer_text(events)
    assert text.startswith("巡检过程中如发现异常") and text.endswith("。") and "\n\n" not in text[-3:]
    for citation in done["citations"]:  # the reference list's content arrives as data, not as answer text
        assert citation["document_title"] not in text
    sources = events[1][1]["sources"]
    assert {c["id"] for c in done["citations"]} <= {s["id"] for s in sources}
    assert all(s["url"] == "" or s["url"].startswith("https://") for s in sources)
    assert "oss://" not in call.text  # the knowledge chunk's non-http URL became ""


def test_the_conversation_continues_with_the_handle_and_only_for_its_caller(plugin, plugin_dsl_host):
    first = events_of(
        post(plugin, {"query": "巡更时发现异常怎么上报？"}, bearer=token("carol", ["前台"]), handler=plugin_dsl_host)
    )
    handle = first[-1][1]["conversation"]
    conversation_id = handle.rsplit(".", 1)[0]
    assert conversation_id in plugin_dsl_host.conversations
    second = post(
        plugin,
        {"query": "会议室怎么预约？", "conversation": handle},
        bearer=token("carol", ["前台"]),
        handler=plugin_dsl_host,
    )
    events = events_of(second)
    assert events[-1][0] == "done" and events[-1][1]["conversation"] == handle
    assert second.app_requests[0]["conversation_id"] == conversation_id
    assert plugin_dsl_host.conversations[conversation_id].dialogue_count == 2
    # another caller, a tampered id, a forged signature: 403 and no app call
    for bearer, forged in (
        (token("mallory", ["前台"]), handle),
        (token("carol", ["前台"]), ("1" if handle[0] == "0" else "0") + handle[1:]),
        (token("carol", ["前台"]), handle[:-4] + ("BBBB" if handle.endswith("AAAA") else "AAAA")),
        (token("carol", ["前台"]), "no-signature"),
        (token("carol", ["前台"]), conversation_id),
    ):
        canned = Canned(dify_stream(["x"], []))
        call = post(plugin, {"query": "q", "conversation": forged}, bearer=bearer, handler=canned)
        assert call.wait_head() == 403 and json.loads(call.read())["code"] == "forbidden"
        assert canned.requests == [] and call.app_requests == []


# --- who the caller is --------------------------------------------------------------------------------------------


def bad_tokens():
    now = int(time.time())
    return {
        "missing": None,
        "empty": "",
        "malformed": "not-a-jwt",
        "forged": token(secret="another-secret-that-is-also-long-enough-x"),
        "alg-none": unsigned_token({"sub": "alice", "roles": ["物业经理"], "exp": now + 600}),
        "hs512": token(algorithm="HS512"),
        "expired": token(exp_in=-5),
        "no-exp": raw_token({"sub": "alice", "roles": []}),
        "no-sub": raw_token({"roles": [], "exp": now + 60}),
        "sub-number": raw_token({"sub": 42, "roles": [], "exp": now + 60}),
        "no-roles": token(roles=None),
        "roles-text": raw_token({"sub": "alice", "roles": "物业经理", "exp": now + 60}),
        "roles-objects": raw_token({"sub": "alice", "roles": [{"name": "物业经理"}], "exp": now + 60}),
        "wrong-audience": token(aud="someone-else"),
        "not-yet-valid": token(nbf=now + 3600),
    }


@pytest.mark.parametrize("case", list(bad_tokens()))
def test_a_bad_token_is_401_with_a_json_error_and_no_app_call(plugin, case):
    bearer = bad_tokens()[case]
    canned = Canned(dify_stream(["x"], []))
    headers = {} if bearer is None else {"Authorization": f"Bearer {bearer}"}
    call = post(plugin, {"query": "会议室怎么预约？"}, headers=headers, handler=canned)
    assert call.wait_head() == 401
    assert call.headers["Content-Type"].startswith("application/json")
    body = json.loads(call.read())
    assert set(body) == {"code", "message"} and body["code"] in ("missing_token", "invalid_token", "expired_token")
    assert (body["code"] == "expired_token") == (case == "expired")
    assert canned.requests == [] and call.app_requests == []
    assert SECRET not in call.text and (not bearer or bearer not in call.text)


def test_other_authorization_schemes_are_401(plugin):
    for value in (f"Basic {token()}", token(), "Bearer", f"Bearer {token()} extra"):
        call = post(plugin, {"query": "q"}, headers={"Authorization": value}, handler=Canned([]))
        assert call.wait_head() == 401, value


def test_the_audience_setting_requires_that_audience(plugin):
    settings = {**SETTINGS, "jwt_audience": "gcite-chat"}
    stream = dify_stream(["ok"], [])
    assert post(plugin, {"query": "q"}, bearer=token(), handler=Canned(stream), settings=settings).wait_head() == 401
    assert (
        post(plugin, {"query": "q"}, bearer=token(aud="other"), handler=Canned(stream), settings=settings).wait_head()
        == 401
    )
    call = post(plugin, {"query": "q"}, bearer=token(aud="gcite-chat"), handler=Canned(stream), settings=settings)
    assert call.wait_head() == 200 and events_of(call)[-1][0] == "done"


def test_roles_come_only_from_the_token_never_from_the_body(plugin):
    canned = Canned(dify_stream(["ok"], []))
    body = {
        "query": "访客怎么登记？",
        "roles": ["物业经理"],
        "user_roles": "物业经理",
        "inputs": {"user_roles": '["物业经理"]'},
        "conversation_id": "conv-of-someone",
        "user": "bob",
    }
    call = post(plugin, body, bearer=token("dave", ["前台", "访客"]), handler=canned)
    assert events_of(call)[-1][0] == "done"
    request = canned.requests[0]
    assert request["inputs"] == {"user_roles": '["前台", "访客"]', "citation_style": "markers"}
    assert request["conversation_id"] is None and request["query"] == "访客怎么登记？"
    assert request["app_id"] == "app-gcite" and request["response_mode"] == "streaming"


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b"{}",
        b'{"query": ""}',
        b'{"query": "   "}',
        b'{"query": 42}',
        b'{"query": "q", "conversation": 7}',
        "x" * 70000,
        json.dumps({"query": "长" * 4001}),
        b"\xff\xfe",
    ],
    ids=[
        "not-json",
        "array",
        "no-query",
        "empty",
        "blank",
        "number",
        "conversation-number",
        "too-large",
        "query-too-long",
        "not-utf8",
    ],
)
def test_a_body_that_is_not_a_question_is_400(plugin, body):
    canned = Canned([])
    call = post(plugin, body, bearer=token(), handler=canned)
    too_long = isinstance(body, str) and body.startswith('{"query"')
    assert call.wait_head() == 400 and json.loads(call.read())["code"] == (
        "query_too_long" if too_long else "bad_request"
    )
    assert canned.requests == []


def test_misconfigured_settings_are_a_500_json_error_not_an_sdk_page(plugin):
    for settings in (
        {**SETTINGS, "token_secret": "short"},
        {**SETTINGS, "app": None},
        {**SETTINGS, "snippet_length": "lots"},
    ):
        call = post(plugin, {"query": "q"}, bearer=token(), handler=Canned([]), settings=settings)
        assert call.wait_head() == 500 and json.loads(call.read())["code"] == "not_configured"
        assert "short" not in call.text


# --- CORS ---------------------------------------------------------------------------------------------------------


def preflight(plugin, origin):
    headers = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}
    if origin:
        headers["Origin"] = origin
    call = plugin.request("OPTIONS", "/gcite/chat", headers=headers, settings=SETTINGS)
    call.read()
    return call


def test_cors_preflight_answers_only_allowed_origins(plugin):
    for origin in (ORIGIN, "https://other.example.org"):
        call = preflight(plugin, origin)
        assert call.status == 204, origin
        assert call.headers["Access-Control-Allow-Origin"] == origin
        allowed = {h.strip().lower() for h in call.headers["Access-Control-Allow-Headers"].split(",")}
        assert {"authorization", "content-type"} <= allowed
        assert "POST" in call.headers["Access-Control-Allow-Methods"]
        assert "Access-Control-Allow-Credentials" not in call.headers
    for origin in ("https://evil.example.net", "http://chat.example.com", None):
        call = preflight(plugin, origin)
        assert call.status == 403 and not any(h.startswith("Access-Control") for h in call.headers)


def test_cors_headers_on_posts_only_for_allowed_origins(plugin):
    stream = dify_stream(["ok"], [])
    call = post(plugin, {"query": "q"}, bearer=token(), headers={"Origin": ORIGIN}, handler=Canned(stream))
    events_of(call)
    assert call.headers["Access-Control-Allow-Origin"] == ORIGIN and call.headers["Vary"] == "Origin"
    denied = post(plugin, {"query": "q"}, bearer="bad", headers={"Origin": ORIGIN}, handler=Canned(stream))
    assert denied.wait_head() == 401 and denied.headers["Access-Control-Allow-Origin"] == ORIGIN  # error readable
    canned = Canned(stream)
    evil = post(plugin, {"query": "q"}, bearer=token(), headers={"Origin": "https://evil.example.net"}, handler=canned)
    assert evil.wait_head() == 403 and json.loads(evil.read())["code"] == "origin_not_allowed"
    assert not any(h.startswith("Access-Control") for h in evil.headers) and canned.requests == []
    server = post(plugin, {"query": "q"}, bearer=token(), handler=Canned(stream))  # no Origin: a back end
    assert server.wait_head() == 200 and not any(h.startswith("Access-Control") for h in server.headers)
    everyone = post(
        plugin,
        {"query": "q"},
        bearer=token(),
        headers={"Origin": "https://any.example"},
        handler=Canned(stream),
        settings={**SETTINGS, "allowed_origins": "*"},
    )
    assert everyone.wait_head() == 200 and everyone.headers["Access-Control-Allow-Origin"] == "https://any.example"


# --- the stream's error paths (canned Dify streams) ---------------------------------------------------------------

CHUNKS = [
    chunk(1, "巡更需先打卡。", url="oss://kb/raw.pdf"),
    chunk(2, "网页说异常要上报。", source_type="web", url="javascript:alert(1)", title="<img src=x onerror=1>"),
    chunk(3, "第三个来源" * 100, source_type="web", url="https://example.com/a?b=1"),
]
SECRET_DETAIL = "database password hunter2 at 10.0.0.5"


def run_canned(plugin, handler, settings=SETTINGS):
    call = post(plugin, {"query": "q"}, bearer=token(), handler=handler, settings=settings)
    events = events_of(call)
    assert call.status == 200 and call.error is None
    assert_protocol(call.text, events)
    assert SECRET_DETAIL not in call.text and "Traceback" not in call.text
    return events


def test_a_canned_stream_gives_whitelisted_sources_cut_snippets_and_safe_urls(plugin):
    events = run_canned(
        plugin,
        Canned(dify_stream(["巡更需先打卡[C:1]，", "异常要上报[C:2][C", ":3]。"], CHUNKS)),
        {**SETTINGS, "snippet_length": "40"},
    )
    sources = events[1][1]["sources"]
    assert [s["url"] for s in sources] == ["", "", "https://example.com/a?b=1"]
    assert sources[1]["document_title"] == "<img src=x onerror=1>"  # text; the page shows it as text
    assert len(sources[2]["snippet"]) == 40 and sources[2]["snippet"] == CHUNKS[2]["content"][:40]
    assert answer_text(events) == "巡更需先打卡，异常要上报。"
    assert [d["numbers"] for n, d in events if n == "cite"] == [[1], [2, 3]]  # [C:2][C:3]: one citation
    done = events[-1][1]
    assert done["status"] == "cited" and done["message_id"] == "msg-1"
    assert done["citations"][2]["snippet"] == sources[2]["snippet"]


@pytest.mark.parametrize(
    "stream,code",
    [
        (dify_stream(["部分回答"], CHUNKS, end=False), "incomplete"),
        (
            dify_stream(["部分回答"], CHUNKS)[:5]
            + [envelope("error", status=500, code="internal_server_error", message=SECRET_DETAIL)],
            "app_error",
        ),
        (
            dify_stream(["x"], CHUNKS)[:5]
            + [envelope("workflow_finished", data={"status": "failed", "error": SECRET_DETAIL})],
            "app_error",
        ),
        (
            [node("node_finished", "merge", "tool", {"chunk_metadata": [{"id": "one", "content": SECRET_DETAIL}]})],
            "app_error",
        ),
        ([], "incomplete"),
    ],
    ids=["no-message-end", "app-error-event", "workflow-failed", "malformed-chunk-list", "empty-stream"],
)
def test_every_failure_of_the_app_ends_the_stream_with_an_error_event(plugin, stream, code):
    events = run_canned(plugin, Canned(stream))
    assert events[-1] == ("error", {"code": code, "message": events[-1][1]["message"]})


def test_a_backwards_invocation_error_is_an_error_event(plugin):
    def refuse(request):
        raise PermissionError(f"permission denied, you need to enable app access ({SECRET_DETAIL})")
        yield  # pragma: no cover

    events = run_canned(plugin, refuse)
    assert [name for name, _ in events] == ["ready", "error"] and events[-1][1]["code"] == "app_unavailable"
    deadline = time.monotonic() + 10  # the detail is for the operator: in the plugin's log, not in the response
    while not any(SECRET_DETAIL in json.dumps(log, ensure_ascii=False) for log in plugin.logs):
        assert time.monotonic() < deadline, plugin.logs[-3:]
        time.sleep(0.05)
    assert not any(SECRET in json.dumps(log) for log in plugin.logs)


def test_an_invocation_cut_mid_answer_keeps_what_was_sent_and_ends_with_an_error(plugin):
    events = run_canned(plugin, Canned(dify_stream(["已经显示的文字", "更多"], CHUNKS), fail_after=5))
    assert answer_text(events) == "已经显示的文字" and events[-1][1]["code"] == "app_unavailable"


def test_dify_message_replace_becomes_replace_without_markers(plugin):
    stream = dify_stream(["被替换的回答[C:1]"], CHUNKS)
    stream.insert(6, envelope("message_replace", answer="内容已被审核替换[C:2]。", reason="output_moderation"))
    events = run_canned(plugin, Canned(stream))
    assert ("replace", {"text": "内容已被审核替换。"}) in events
    assert [n for n, _ in events].index("replace") > [n for n, _ in events].index("text")
    assert answer_text(events) == "被替换的回答"  # nothing after the replace
    assert [c["id"] for c in events[-1][1]["citations"]] == ["2"]


def test_the_reference_list_is_dropped_also_without_variable_selectors(plugin):
    events = run_canned(plugin, Canned(dify_stream(["答案[C:1]。"], CHUNKS, selectors=False)))
    text = answer_text(events)
    assert text.rstrip() == "答案。" and "title 1" not in text


# --- load -----------------------------------------------------------------------------------------------------------


def test_fifty_concurrent_streams_over_one_plugin_process_none_lost_or_mixed(plugin):
    def stream(request):
        n = request["query"].split()[-1]
        deltas = [f"answer {n} ", "part two", f"[C:1] end {n}."]
        return dify_stream(
            deltas, [chunk(1, f"chunk text {n}", title=f"title {n}")], conversation=f"conv-{n}", message=f"msg-{n}"
        )

    canned = Canned(stream, pause=0.01)
    calls = [post(plugin, {"query": f"question {n}"}, bearer=token(f"user-{n}", []), handler=canned) for n in range(50)]
    for n, call in enumerate(calls):
        events = events_of(call)
        assert_protocol(call.text, events)
        assert answer_text(events) == f"answer {n} part two end {n}."
        assert events[1][1]["sources"][0]["document_title"] == f"title {n}"
        done = events[-1][1]
        assert done["message_id"] == f"msg-{n}" and done["conversation"].startswith(f"conv-{n}.")
        assert call.app_requests[0]["user"] == f"user-{n}"
    assert len(canned.requests) == 50 and plugin.alive and plugin.stray == []


def test_a_request_the_sdk_cannot_parse_fails_that_session_only(plugin):
    call = plugin.request(
        "POST",
        "/gcite/chat",
        headers={"X_Under": "1", "Authorization": f"Bearer {token()}"},
        body=b'{"query": "q"}',
        settings=SETTINGS,
        app_handler=Canned([]),
    )
    call.read()
    assert call.status is None and "header" in call.error["message"].lower()
    follow = post(plugin, {"query": "q"}, bearer=token(), handler=Canned(dify_stream(["ok"], [])))
    assert events_of(follow)[-1][0] == "done" and plugin.alive


def test_the_app_host_refuses_unknown_conversations_and_apps_like_dify(plugin, plugin_dsl_host):
    canned = events_of(
        post(
            plugin,
            {"query": "q"},
            bearer=token("frank", []),
            handler=Canned(dify_stream(["ok"], [], conversation="conv-elsewhere")),
        )
    )
    handle = canned[-1][1]["conversation"]  # signed for frank, but the chatflow host never saw that conversation
    call = post(plugin, {"query": "q", "conversation": handle}, bearer=token("frank", []), handler=plugin_dsl_host)
    assert [n for n, _ in events_of(call)] == ["ready", "error"] and events_of(call)[-1][1]["code"] == "app_unavailable"
    other_app = {**SETTINGS, "app": {"app_id": "app-other"}}
    call = post(plugin, {"query": "q"}, bearer=token("frank", []), handler=plugin_dsl_host, settings=other_app)
    assert events_of(call)[-1][1]["code"] == "app_unavailable" and call.app_requests[0]["app_id"] == "app-other"
