"""Hostile input through the runner and its LLM client: a clear one-line error or a correct result, never a
traceback (huge inputs, deep JSON, NaN, lone surrogates, odd SSE bodies)."""

import contextlib
import io
import json
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler

import pytest

from gcite.authoring import chatflows
from gcite.cli.main import main as cli
from gcite.local.dify_rules import DifyRefusal
from gcite.local.llm import OpenAICompatibleModel
from gcite.local.runner import Services, run_chatflow
from gcite.sse import sse_lines
from tests.support import ROOT
from tests.support.local_http import origin, start_server, stop_server
from tests.support.plugins import shared_plugins
from tests.support.runner_dsl import minimal_dsl

CODE_DSL = str(chatflows.CODE_DSL)


def cli_run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli(["run", *args])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "inputs,message",
    [
        ("[" * 100_000 + "]" * 100_000, "error: --inputs is nested too deeply"),
        ('{"a":' * 50_000 + "1" + "}" * 50_000, "error: --inputs is nested too deeply"),
        ('{"user_roles": NaN}', "error: --inputs is not JSON: NaN is not a JSON value"),
        ('{"user_roles": -Infinity}', "error: --inputs is not JSON: -Infinity is not a JSON value"),
        (
            '{"user_roles": "\\ud800"}',
            "error: inputs.user_roles is not valid Unicode text: lone surrogate U+D800 at character 0",
        ),
    ],
)
def test_hostile_inputs_are_one_line_errors(inputs, message):
    code, out, err = cli_run(CODE_DSL, "--query", "q", "--inputs", inputs)
    assert (code, out, err) == (2, "", message + "\n")


@pytest.mark.parametrize(
    "inputs,message",
    [
        ('{"user_roles": ["前台"]}', "(type 'text-input') user_roles in input form must be a string"),
        (json.dumps({"user_roles": "前台," * 40_000}), "user_roles in input form must be less than 256 characters"),
    ],
)
def test_start_inputs_dify_rejects_are_its_failed_stream(inputs, message):
    code, out, err = cli_run(CODE_DSL, "--query", "q", "--inputs", inputs)
    events = [json.loads(line[5:]) for line in out.splitlines() if line.startswith("data:")]
    assert (code, err) == (1, "") and [e["event"] for e in events] == ["workflow_started", "workflow_finished"]
    assert events[-1]["data"]["status"] == "failed" and events[-1]["data"]["error"] == message


def test_a_lone_surrogate_in_the_query_is_a_one_line_error():
    code, out, err = cli_run(CODE_DSL, "--query", "巡更\udcff")
    assert (code, out, err) == (
        2,
        "",
        "error: --query is not valid Unicode text: lone surrogate U+DCFF at character 2\n",
    )


def test_undecodable_argv_bytes_give_the_same_error_from_a_real_process():
    done = subprocess.run(
        [sys.executable, "-m", "gcite", "run", CODE_DSL.encode(), "--query", b"q\xff"],
        cwd=ROOT,
        capture_output=True,
        timeout=120,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr == b"error: --query is not valid Unicode text: lone surrogate U+DCFF at character 1\n"


def test_nan_and_deep_values_given_to_run_chatflow_are_refused():
    text = minimal_dsl(
        [
            {"variable": "n", "label": "n", "type": "number", "required": False},
            {"variable": "j", "label": "j", "type": "json_object", "required": False},
        ]
    )
    with pytest.raises(DifyRefusal, match="inputs.n is nan, which is not a JSON number"):
        list(run_chatflow(text, "q", {"n": float("nan")}, Services()))
    deep: dict = {}
    for _ in range(5000):
        deep = {"a": deep}
    with pytest.raises(DifyRefusal, match="nested more than 100 levels deep"):
        list(run_chatflow(text, "q", {"j": deep}, Services()))


def test_a_huge_query_runs_through_a_code_node(tmp_path):
    """The code DSL's web_body Code node takes the query: 200 KB of it is over argv's 128 KiB."""
    svc = Services()
    try:
        events = list(
            run_chatflow(
                chatflows.CODE_DSL.read_text(encoding="utf-8"),
                "会议室怎么预约？" + "预" * 200_000,
                {"user_roles": "前台"},
                svc,
            )
        )
    finally:
        svc.close()
    body = next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == "web_body")
    assert body["status"] == "succeeded" and len(json.loads(body["outputs"]["body"])["query"]) > 200_000


# --- the OpenAI-compatible client's SSE decoding --------------------------------------------------------------


def test_sse_lines_split_on_lf_only_and_decode_whole_lines():
    text = "data: é\u2028ü\u0085\r\n\ndata: [DONE]"
    raw = text.encode("utf-8")
    assert list(sse_lines([raw[i : i + 1] for i in range(len(raw))])) == ["data: é\u2028ü\u0085", "", "data: [DONE]"]
    with pytest.raises(RuntimeError, match="not UTF-8"):
        list(sse_lines([b"data: \xff\n"]))


def serve(chunks: list[bytes], content_type: str = "text/event-stream"):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Type", content_type)  # no charset: requests would assume ISO-8859-1
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(chunk)
                self.wfile.flush()

        def log_message(self, *args):
            pass

    return start_server(Handler)


def run_with_llm_sending(chunks: list[bytes]) -> list[dict]:
    """The plugin chatflow's events when its LLM is an OpenAI-compatible server writing these bytes."""
    server = serve(chunks)
    try:
        svc = Services(
            llm=OpenAICompatibleModel(f"{origin(server)}/v1", "m", "k"),
            tool_credentials={"langgenius/tavily:": {"tavily_api_key": "tvly-TEST"}},
            shared_plugins=shared_plugins(),
        )
        try:
            # the LLM-node layout (`build-dsl --answer llm-node`): what an LLM node makes of the model's body
            return list(
                run_chatflow(
                    chatflows.chatflow_text(chatflows.Variant(answer="llm-node")),
                    "会议室怎么预约？",
                    {"user_roles": "前台"},
                    svc,
                )
            )
        finally:
            svc.close()
    finally:
        stop_server(server)


def test_an_sse_body_without_charset_is_read_as_utf8_and_u2028_is_not_a_line_end():
    pieces = ["会议室须提前预约", "\u2028第二行", "，é[C:", "1]。"]
    body = (
        b"".join(
            f"data: {json.dumps({'choices': [{'delta': {'content': p}}]}, ensure_ascii=False)}\r\n\r\n".encode()
            for p in pieces
        )
        + b"data: [DONE]\n\n"
    )
    events = run_with_llm_sending([body[i : i + 7] for i in range(0, len(body), 7)])  # characters split across writes
    llm = next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == "llm")
    assert llm["outputs"]["text"] == "".join(pieces)


def test_an_llm_that_sends_a_lone_surrogate_fails_the_run_with_a_clear_error():
    body = b'data: {"choices": [{"delta": {"content": "x\\ud800"}}]}\n\ndata: [DONE]\n\n'
    events = run_with_llm_sending([body])
    assert events[-1]["event"] == "workflow_finished" and events[-1]["data"]["status"] == "failed"
    assert "not valid Unicode (a lone surrogate)" in events[-1]["data"]["error"]
    json.dumps(events, ensure_ascii=False).encode("utf-8")  # the stream itself stays valid UTF-8


def test_an_llm_error_that_echoes_the_key_never_shows_it():
    from gcite.local.engine import UserPromptMessage

    class Echo(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"error": f"Incorrect API key provided: {self.headers['Authorization']}"}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = start_server(Echo)
    try:
        model = OpenAICompatibleModel(f"{origin(server)}/v1", "m", "sk-TOPSECRET-abc123")
        with pytest.raises(RuntimeError) as error:
            model.invoke_llm(prompt_messages=[UserPromptMessage(content="hi")], model_parameters={})
    finally:
        stop_server(server)
    assert "answered 401" in str(error.value) and "Incorrect API key" in str(error.value)
    assert "TOPSECRET" not in str(error.value)
