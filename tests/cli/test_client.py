"""gcite.client and `python -m gcite chat`: both streams give the same typed events; ping, unknown events, errors
and cut connections are handled."""

import io
import json
from http.server import BaseHTTPRequestHandler

import pytest

from gcite import client, protocol
from gcite.authoring.chatflows import PLUGIN_DSL
from gcite.cli.main import main as gcite_main
from gcite.client import Cite, Done, Error, Ready, Sources, Text
from gcite.local.runner import run_chatflow
from gcite.local.service_api import dify_sse
from gcite.local.services import local_services
from tests.support.local_http import origin, start_server, stop_server
from tests.support.plugins import shared_plugins

QUERY = "巡更时发现异常怎么上报？"
SOURCE = {
    "id": "4",
    "source_type": "web",
    "document_title": "标题",
    "display_subtitle": "example.com",
    "site_name": "",
    "published_date": "",
    "url": "https://example.com/a",
    "snippet": "片段",
}


@pytest.fixture(scope="module")
def raw_stream():
    """One real turn of the shipped chatflow on the runner: the Service API events (dicts)."""
    with local_services(shared_plugins=shared_plugins()) as services:
        # as gcite.client's users run it: the cited_answer node streams canonical markers for a program
        return list(
            run_chatflow(
                PLUGIN_DSL.read_text(encoding="utf-8"),
                QUERY,
                {"user_roles": "物业经理", "citation_style": "markers"},
                services,
            )
        )


def gcite_sse(*events) -> list[str]:
    return "".join(protocol.gcite_sse(name, data) for name, data in events).splitlines(keepends=True)


def test_raw_dify_stream_and_gcite_protocol_give_the_same_events(raw_stream):
    from_raw = list(client.sse_events("".join(dify_sse(e) for e in raw_stream).splitlines(keepends=True)))
    from_protocol = list(
        client.sse_events(
            (": open\n\n" + "".join(protocol.gcite_sse(n, d) for n, d in protocol.translate(raw_stream))).splitlines(
                True
            )
        )
    )
    assert from_raw == from_protocol
    assert isinstance(from_raw[0], Ready) and isinstance(from_raw[1], Sources) and isinstance(from_raw[-1], Done)
    cites = [e for e in from_raw if isinstance(e, Cite)]
    assert [c.numbers for c in cites] == [[1], [2]] and [c.new for c in cites] == [[1], [2]]
    text = "".join(e.text for e in from_raw if isinstance(e, Text))
    assert "[C:" not in text and text.startswith("巡检过程中如发现异常")
    assert "- [C:1]" not in text  # the Answer node's appended source list is not answer text
    done = from_raw[-1]
    assert done.status == "cited" and [c["document_title"] for c in done.citations] == [
        "巡更操作指南 v2.1",
        "物业巡检流程标准：日常巡检、专项巡检与应急巡检",
    ]


def test_chunk_list_is_found_in_any_node_carrying_chunk_metadata(raw_stream):
    renamed = [
        {**e, "data": {**e["data"], "node_id": "my_own_merge"}}
        if e["event"] == "node_finished" and e["data"]["node_id"] == "merge"
        else e
        for e in raw_stream
    ]
    events = list(client.dify_events(renamed))
    assert events == list(client.dify_events(raw_stream))
    assert isinstance(events[-1], Done) and len(events[-1].citations) == 2


def test_ping_comments_and_unknown_events_are_skipped():
    lines = (
        gcite_sse(("ready", {}), ("sources", {"sources": [SOURCE]}))
        + [
            ": keep-alive\n",
            "\n",
            "event: ping\n",
            "data: {}\n",
            "\n",
            "event: future_event\n",
            'data: {"x": 1}\n',
            "\n",
        ]
        + gcite_sse(
            ("text", {"text": "答案"}),
            ("cite", {"numbers": [1], "ids": ["4"], "new": [1]}),
            (
                "done",
                {
                    "status": "cited",
                    "citations": [{"number": 1, "id": "4", "count": 1, **SOURCE, "support": 0.9, "weak": False}],
                    "invalid_ids": [],
                    "conversation": "h",
                    "message_id": "m",
                    "citation_recall_proxy": 1.0,
                },
            ),
        )
    )
    events = list(client.sse_events(line.replace("\n", "\r\n") for line in lines))  # CRLF too
    assert [type(e) for e in events] == [Ready, Sources, Text, Cite, Done]
    assert events[-1].extra == {"citation_recall_proxy": 1.0}
    assert events[-1].citations[0]["weak"] is False


def test_error_event_ends_the_stream():
    events = list(
        client.gcite_events(
            gcite_sse(
                ("ready", {}),
                ("text", {"text": "半"}),
                ("error", {"code": "app_error", "message": "出错了"}),
                ("text", {"text": "never"}),
            )
        )
    )
    assert events[-1] == Error("app_error", "出错了") and Text("never") not in events


def test_a_cut_stream_ends_with_incomplete_both_ways(raw_stream):
    cut = [e for e in raw_stream if e["event"] not in ("message_end", "workflow_finished")]
    assert list(client.dify_events(cut))[-1].code == "incomplete"
    lines = gcite_sse(("ready", {}), ("text", {"text": "半句"}))
    assert list(client.gcite_events(lines))[-1] == Error("incomplete", client.INCOMPLETE)
    half = gcite_sse(("ready", {}))[0:1] + ["event: text\n", 'data: {"text": "未完']  # cut inside an event
    assert list(client.gcite_events(half))[-1].code in ("incomplete", "bad_stream")


def test_replace_drops_what_was_shown():
    result = client.collect(
        client.gcite_events(
            gcite_sse(
                ("ready", {}),
                ("text", {"text": "old"}),
                ("cite", {"numbers": [1], "ids": ["4"], "new": [1]}),
                ("replace", {"text": "new text"}),
                (
                    "done",
                    {"status": "uncited", "citations": [], "invalid_ids": [], "conversation": "", "message_id": ""},
                ),
            )
        )
    )
    assert result["answer"] == "new text" and result["status"] == "uncited"


def run_cli(argv, stdin_text=""):
    out, err = io.StringIO(), io.StringIO()
    import sys

    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(stdin_text), out, err
    try:
        code = gcite_main(argv)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    return code, out.getvalue(), err.getvalue()


def test_cli_json_is_the_same_for_both_streams(raw_stream):
    raw_text = "".join(dify_sse(e) for e in raw_stream)
    gcite_text = "".join(protocol.gcite_sse(n, d) for n, d in protocol.translate(raw_stream))
    code_raw, out_raw, _ = run_cli(["chat", "--stdin", "--json"], raw_text)
    code_g, out_g, _ = run_cli(["chat", "--stdin", "--json"], gcite_text)
    assert code_raw == code_g == 0 and out_raw == out_g and out_raw.count("\n") == 1
    result = json.loads(out_raw)
    assert result["status"] == "cited" and "[1]" in result["answer"] and "[C:" not in result["answer"]


def test_cli_renders_live_with_superscripts_and_the_sources(raw_stream):
    code, out, err = run_cli(["chat", "--stdin"], "".join(dify_sse(e) for e in raw_stream))
    assert code == 0 and err == ""
    assert "主管¹。" in out and "[C:" not in out
    assert "[1] 巡更操作指南 v2.1 · 楼宇运营知识库 (knowledge base)" in out
    assert (
        "[2] 物业巡检流程标准：日常巡检、专项巡检与应急巡检 · 知乎 · 2025-08-12 (web)  "
        "https://www.zhihu.com/question/123/answer/456"
    ) in out


def test_cli_cut_connection_is_a_clear_error(raw_stream):
    cut = "".join(dify_sse(e) for e in raw_stream if e["event"] not in ("message_end", "workflow_finished"))
    code, out, err = run_cli(["chat", "--stdin"], cut)
    assert code == 1 and "error (incomplete)" in err and "[C:" not in out and "[1]" not in out
    code, out, err = run_cli(["chat", "--stdin", "--json"], cut)
    result = json.loads(out)
    assert code == 1 and result["status"] == "error" and result["error"]["code"] == "incomplete"
    assert result["error"]["message"] and set(result) == {"status", "error"}  # no partial answer


def test_cli_local_run_insufficient_evidence():
    code, out, _ = run_cli(["chat", "火星基地的氧气配额是多少？", "--roles", "物业经理", "--json"])
    assert code == 0 and json.loads(out)["status"] == "insufficient_evidence"


class _Server:
    """A throwaway HTTP server on 127.0.0.1 answering POSTs with a fixed status and body, optionally cut."""

    def __init__(self, status, body: bytes, cut: bool = False):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                outer.path = self.path
                outer.request = (
                    self.headers.get("Authorization"),
                    self.rfile.read(int(self.headers["Content-Length"])),
                )
                self.send_response(status)
                self.send_header("Content-Type", "text/event-stream" if status == 200 else "application/json")
                if not cut:
                    self.send_header("Content-Length", str(len(body)))
                else:
                    self.send_header("Content-Length", str(len(body) + 1000))  # promises more than it sends
                self.end_headers()
                self.wfile.write(body)

        self.httpd = start_server(Handler)
        self.url = f"{origin(self.httpd)}/e/hook/gcite/chat"

    def close(self):
        stop_server(self.httpd)


def test_chat_over_http_sends_token_and_handle_and_reads_errors():
    body = "".join(
        gcite_sse(
            ("ready", {}),
            ("text", {"text": "好"}),
            (
                "done",
                {"status": "uncited", "citations": [], "invalid_ids": [], "conversation": "h2", "message_id": "m"},
            ),
        )
    ).encode()
    server = _Server(200, body)
    try:
        events = list(client.chat(server.url, "tok", "问", conversation="h1"))
        assert events[-1].conversation == "h2"
        assert server.request == ("Bearer tok", json.dumps({"query": "问", "conversation": "h1"}).encode())
    finally:
        server.close()
    server = _Server(401, json.dumps({"code": "unauthorized", "message": "token expired"}).encode())
    try:
        assert list(client.chat(server.url, "tok", "问")) == [Error("unauthorized", "token expired")]
    finally:
        server.close()
    server = _Server(200, "".join(gcite_sse(("ready", {}), ("text", {"text": "半"}))).encode(), cut=True)
    try:
        assert list(client.chat(server.url, "tok", "问"))[-1].code == "incomplete"
    finally:
        server.close()
    assert list(client.chat("http://127.0.0.1:9/none", "tok", "问"))[-1].code == "connection"


def test_a_unicode_line_separator_in_the_answer_is_text_not_a_line_end():
    body = "".join(
        gcite_sse(
            ("ready", {}),
            ("text", {"text": "a\u2028b\u0085c"}),
            ("done", {"status": "uncited", "citations": [], "invalid_ids": [], "conversation": "h", "message_id": "m"}),
        )
    ).encode()
    server = _Server(200, body)
    try:
        events = list(client.chat(server.url, "tok", "问"))
    finally:
        server.close()
    assert Text("a\u2028b\u0085c") in events and isinstance(events[-1], Done)


def test_service_api_reads_the_raw_stream_over_http(raw_stream):
    server = _Server(200, "".join(dify_sse(e) for e in raw_stream).encode())
    try:
        base = server.url.rsplit("/e/", 1)[0] + "/v1"
        events = list(client.service_api(base, "app-key", QUERY, {"user_roles": "物业经理"}, conversation_id="c1"))
        authorization, body = server.request
        assert authorization == "Bearer app-key" and server.path == "/v1/chat-messages"
        assert json.loads(body) == {
            "query": QUERY,
            "inputs": {"user_roles": "物业经理"},
            "response_mode": "streaming",
            "user": "gcite-client",
            "conversation_id": "c1",
        }
        assert events == list(client.dify_events(raw_stream))
    finally:
        server.close()


# --- gcite chat: every option applies or is refused (issue 14, point 7) ---------------------------------------

URL = "http://127.0.0.1:9/e/hook/gcite/chat"  # never reached: each of these is refused before any request


def one_error_line(argv, stdin_text=""):
    code, out, err = run_cli(argv, stdin_text)
    assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err.strip()


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["q", "--url", URL, "--token", "t", "--roles", "前台"],
            "--roles does not apply to --url: the roles come from the token",
        ),
        (["q", "--url", URL, "--token", "t", "--api-key", "k"], "--api-key does not apply to --url"),
        (["q", "--url", URL, "--token", "t", "--dsl", "code"], "--dsl does not apply to --url"),
        (["q", "--url", URL, "--token", "t", "--user", "guest"], "--user and --token both give the caller: use one"),
        (["q", "--url", URL], "--url needs --token (or --user with gcite serve)"),
        (["q", "--service-api", URL, "--api-key", "k", "--token", "t"], "--token does not apply to --service-api"),
        (["q", "--service-api", URL, "--api-key", "k", "--dsl", "code"], "--dsl does not apply to --service-api"),
        (["q", "--token", "t"], "--token does not apply to a local run"),
        (["q", "--user", "guest"], "--user does not apply to a local run"),
        (["q", "--api-key", "k"], "--api-key does not apply to a local run"),
        (["q", "--conversation", "c1"], "local conversations do not persist across invocations"),
        (["q", "--stdin"], "--stdin reads a recorded answer: give no question"),
        (["--stdin", "--roles", "前台"], "--roles does not apply to --stdin"),
        (["--stdin", "--conversation", "c1"], "--conversation does not apply to --stdin"),
        ([], "the question is missing"),
        ([""], "error: the question is empty"),
        (["  ", "--url", URL, "--token", "t"], "error: the question is empty"),
        (
            ["q", "--dsl", "/nonexistent/chatflow.yml"],
            "error: /nonexistent/chatflow.yml: cannot read it (FileNotFoundError",
        ),
    ],
)
def test_chat_refuses_options_that_do_not_apply_and_empty_questions(argv, message):
    assert message in one_error_line(["chat", *argv])


def test_chat_dsl_is_checked_like_run_and_takes_plugin_or_code(tmp_path):
    (tmp_path / "workflow.yml").write_text("app:\n  mode: workflow\nworkflow:\n  graph: {}\n", encoding="utf-8")
    (tmp_path / "bad.yml").write_text("app: [1\n", encoding="utf-8")
    assert one_error_line(["chat", "q", "--dsl", str(tmp_path / "workflow.yml")]) == (
        f"error: {tmp_path / 'workflow.yml'}: not a chatflow DSL "
        "(app.mode is 'workflow'; a chatflow has 'advanced-chat')"
    )
    assert one_error_line(["chat", "q", "--dsl", str(tmp_path / "bad.yml")]).startswith(
        f"error: {tmp_path / 'bad.yml'}: not a YAML file ("
    )
    text = PLUGIN_DSL.with_name("gcite_chatflow_code.yml").read_text(encoding="utf-8")
    (tmp_path / "unknown.yml").write_text(text.replace("type: code", "type: bogus"), encoding="utf-8")
    assert one_error_line(["chat", "q", "--dsl", str(tmp_path / "unknown.yml")]) == (
        f"error: {tmp_path / 'unknown.yml'}: DslError: Unsupported DSL node type: bogus"
    )
    code, out, err = run_cli(["chat", QUERY, "--roles", "物业经理", "--dsl", "code"])
    assert code == 0 and err == "" and "[1] " in out
    assert "conversation:" not in out  # a local conversation cannot be continued, so no handle is offered


def test_chat_local_run_keeps_the_engine_log_off_stderr(monkeypatch):
    import logging

    def failing(*args, **kwargs):
        logging.getLogger("graphon.test").error("engine trouble", exc_info=RuntimeError("boom"))
        raise RuntimeError("the engine broke")
        yield  # pragma: no cover - a generator

    monkeypatch.setattr("gcite.local.runner.run_chatflow", failing)
    assert one_error_line(["chat", "q"]) == "error: RuntimeError: the engine broke"
    code, _, err = run_cli(["chat", "q", "--verbose"])
    assert (
        code == 2
        and "[graphon.test] ERROR: engine trouble" in err
        and err.endswith("error: RuntimeError: the engine broke\n")
    )


def test_stdin_stream_cut_mid_line_is_incomplete_and_garbage_inside_is_bad_stream(raw_stream):
    text = "".join(dify_sse(e) for e in raw_stream)
    cut = text[: text.index('"event": "node_finished"') + 40] if '"event": "node_finished"' in text else None
    cut = cut or text[: text.index('"event":"node_finished"') + 40]  # inside a data: line, no newline after it
    code, out, _ = run_cli(["chat", "--stdin", "--json"], cut)
    assert code == 1 and json.loads(out)["error"]["code"] == "incomplete"
    garbled = cut + "\n\n" + "".join(dify_sse(e) for e in raw_stream[-2:])
    code, out, _ = run_cli(["chat", "--stdin", "--json"], garbled)
    assert code == 1 and json.loads(out)["error"] == {
        "code": "bad_stream",
        "message": "the server sent an unreadable event",
    }


def test_chat_input_dify_would_refuse_is_one_line():
    assert (
        one_error_line(["chat", "q\ud800"])
        == "error: query is not valid Unicode text: lone surrogate U+D800 at character 1"
    )
    assert one_error_line(["chat", "q", "--roles", "a\ud800"]).startswith(
        "error: inputs.user_roles is not valid Unicode"
    )
