"""The node types real chatflows contain, on the runner (gcite/local/nodes_extra.py and graphon's own): iteration and
loop, if-else and the variable aggregator, the variable assigner — on Dify's own test workflows
(tests/fixtures/retrofit/runner/, from langgenius/dify api/tests/fixtures/workflow) — and the question classifier,
parameter extractor, HTTP request (127.0.0.1 only), document extractor and another plugin's tool."""

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import yaml

from gcite.local.nodes_extra import classify, extract
from gcite.local.runner import run_chatflow
from gcite.local.service_api import Conversation
from gcite.local.services import start_local_services
from tests.support.local_http import origin, start_server, stop_server
from tests.support.plugins import shared_plugins
from tests.support.runner_dsl import edge

DIFY = Path(__file__).resolve().parent.parent / "fixtures" / "retrofit" / "runner"
OWN = DIFY.parent


@pytest.fixture(scope="module")
def services():
    svc = start_local_services(shared_plugins=shared_plugins())
    yield svc
    svc.close()


def run(
    text: str, svc, query: str = "hello", inputs: dict | None = None, conversation: Conversation | None = None
) -> list[dict]:
    return list(run_chatflow(text, query, inputs or {}, svc, conversation))


def outputs(events: list[dict]) -> dict:
    assert events[-1]["event"] == "workflow_finished", events[-1]
    return events[-1]["data"]["outputs"]


def answer(events: list[dict]) -> str:
    return "".join(e["answer"] for e in events if e["event"] == "message")


def finished(events: list[dict], node_type: str) -> list[dict]:
    return [e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_type"] == node_type]


# --- Dify's own test workflows ----------------------------------------------------------------------------------


def test_iteration_runs_its_inner_graph_for_each_item(services):
    events = run((DIFY / "array_iteration_formatting_workflow.yml").read_text(encoding="utf-8"), services)
    assert outputs(events) == {"output": ["output: 1", "output: 2", "output: 3"]}
    events = run((DIFY / "iteration_flatten_output_enabled_workflow.yml").read_text(encoding="utf-8"), services)
    assert outputs(events) == {"output": [1, 2, 2, 4, 3, 6]}


def test_loop_runs_until_its_break_condition(services):
    events = run((DIFY / "increment_loop_with_break_condition_workflow.yml").read_text(encoding="utf-8"), services)
    assert outputs(events) == {"num": 5}
    events = run((DIFY / "loop_contains_answer.yml").read_text(encoding="utf-8"), services, "hello")
    assert answer(events).endswith("hello + 2")


@pytest.mark.parametrize(
    "switch1,switch2,expected",
    [
        (1, 0, {"group1": "switch 1 on", "group2": "switch 2 off"}),
        (0, 1, {"group1": "switch 1 off", "group2": "switch 2 on"}),
    ],
)
def test_if_else_and_the_grouped_aggregator(switch1, switch2, expected, services):
    text = (DIFY / "dual_switch_variable_aggregator_workflow.yml").read_text(encoding="utf-8")
    assert outputs(run(text, services, inputs={"switch1": switch1, "switch2": switch2})) == expected


def test_the_variable_assigner_writes_a_conversation_variable(services):
    conversation = Conversation()
    text = (DIFY / "test_streaming_conversation_variables_v1_overwrite.yml").read_text(encoding="utf-8")
    assert answer(run(text, services, "hello", conversation=conversation)) == "Current Value Of `conv_var` is:hello"
    assert conversation.variables["conv_var"] == "hello"


# --- the stand-in's classifier and extractor --------------------------------------------------------------------


def test_the_classifier_picks_the_class_sharing_most_with_the_question_else_the_first():
    classes = [{"id": "1", "name": "巡更、报修、设备等物业问题"}, {"id": "2", "name": "天气新闻等其他问题"}]
    assert classify("明天天气怎么样", classes)["id"] == "2"
    assert classify("巡更时发现异常怎么上报", classes)["id"] == "1"
    assert classify("xyz", classes)["id"] == "1"


def test_the_extractor_answers_json_of_the_declared_types():
    values = extract(
        "book 3 rooms for 2.5 hours",
        [
            {"name": "text", "type": "string"},
            {"name": "count", "type": "number"},
            {"name": "ok", "type": "boolean"},
            {"name": "all", "type": "array[number]"},
            {"name": "size", "type": "select", "options": ["small rooms", "hall"]},
        ],
    )
    assert values == {
        "text": "book 3 rooms for 2.5 hours",
        "count": 3,
        "ok": False,
        "all": [3, 2.5],
        "size": "small rooms",
    }


def test_classifier_and_extractor_nodes_run_in_a_chatflow(services):
    events = run(
        (OWN / "own-0.5.0-classifier-other-plugin.zh.yml").read_text(encoding="utf-8"),
        services,
        "巡更时发现异常怎么上报？",
    )
    classified = finished(events, "question-classifier")[0]
    assert classified["status"] == "succeeded" and classified["outputs"]["class_id"] == "1"
    text = (OWN / "own-0.4.0-workflow-extractor.en.yml").read_text(encoding="utf-8")
    events = run(text, services, inputs={"question": "patrol abnormality report"})
    extracted = finished(events, "parameter-extractor")[0]
    assert extracted["status"] == "succeeded"
    assert extracted["outputs"]["topic"] == "patrol abnormality report" and extracted["outputs"]["__is_success"] == 1


# --- HTTP, document extractor -----------------------------------------------------------------------------------


def one_node_flow(data: dict, answer_text: str) -> str:
    nodes = [
        {"id": "start", "type": "custom", "data": {"type": "start", "title": "Start", "variables": []}},
        {"id": "n", "type": "custom", "data": {"title": "Node", "desc": "", **data}},
        {
            "id": "answer",
            "type": "custom",
            "data": {"type": "answer", "title": "Answer", "answer": answer_text, "variables": []},
        },
    ]
    document = {
        "version": "0.3.1",
        "kind": "app",
        "app": {"name": "t", "mode": "advanced-chat"},
        "workflow": {
            "conversation_variables": [],
            "environment_variables": [],
            "features": {},
            "graph": {"nodes": nodes, "edges": [edge("start", "n"), edge("n", "answer")]},
        },
    }
    return yaml.safe_dump(document, allow_unicode=True)


def http_node(url: str) -> dict:
    return {
        "type": "http-request",
        "method": "get",
        "url": url,
        "authorization": {"type": "no-auth", "config": None},
        "headers": "",
        "params": "",
        "body": {"type": "none", "data": []},
        "timeout": {"connect": 5, "read": 5, "write": 5},
        "ssl_verify": False,
        "retry_config": {"retry_enabled": False, "max_retries": 0, "retry_interval": 100},
    }


def test_http_requests_reach_127_0_0_1_only(services):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            body = json.dumps({"path": self.path}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = start_server(Handler)
    try:
        url = f"{origin(server)}/status"
        events = run(one_node_flow(http_node(url), "{{#n.body#}}"), services)
        assert json.loads(answer(events)) == {"path": "/status"}
        assert finished(events, "http-request")[0]["outputs"]["status_code"] == 200
    finally:
        stop_server(server)
    events = run(one_node_flow(http_node("https://example.com/status"), "{{#n.body#}}"), services)
    failed = finished(events, "http-request")[0]
    assert failed["status"] == "failed"  # graphon reports the refused request as Dify does
    assert failed["error"] == "Reached maximum retries for URL https://example.com/status"


def test_the_document_extractor_fails_without_a_file_as_in_dify(services):
    flow = one_node_flow(
        {"type": "document-extractor", "variable_selector": ["start", "file"], "is_array_file": False}, "{{#n.text#}}"
    )
    failed = finished(run(flow, services), "document-extractor")[0]
    assert failed["status"] == "failed" and failed["error"] == "File variable not found for selector: ['start', 'file']"
