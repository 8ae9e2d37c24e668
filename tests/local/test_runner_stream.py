"""The runner's stream is Dify's Service API stream (`POST /v1/chat-messages`, streaming), event for event: the
order (a ping first, `message_end` before `workflow_finished`), pings while waiting, and each event's fields with
Dify's values (`core/app/entities/task_entities.py`, `WorkflowResponseConverter`, the advanced-chat pipeline)."""

import json
import time
import uuid

import pytest

from gcite.authoring import chatflows
from gcite.local.llm import ExtractiveModel
from gcite.local.runner import Services, run_chatflow
from gcite.local.service_api import Conversation, dify_sse
from gcite.local.services import local_services
from gcite.local.web_search import TAVILY_OUTAGE, tavily_messages
from tests.support.plugins import shared_plugins
from tests.support.runner_dsl import minimal_dsl

TAVILY = {"langgenius/tavily:": {"tavily_api_key": "tvly-TEST"}}
ENVELOPE = ["event", "conversation_id", "message_id", "created_at", "task_id"]
WORKFLOW_STARTED = ["id", "workflow_id", "inputs", "created_at", "reason"]
NODE_STARTED = [
    "id",
    "node_id",
    "node_type",
    "title",
    "index",
    "predecessor_node_id",
    "inputs",
    "inputs_truncated",
    "created_at",
    "extras",
    "iteration_id",
    "loop_id",
    "agent_strategy",
]
NODE_FINISHED = [
    "id",
    "node_id",
    "node_type",
    "title",
    "index",
    "predecessor_node_id",
    "inputs",
    "inputs_truncated",
    "process_data",
    "process_data_truncated",
    "outputs",
    "outputs_truncated",
    "status",
    "error",
    "elapsed_time",
    "execution_metadata",
    "created_at",
    "finished_at",
    "files",
    "iteration_id",
    "loop_id",
]
WORKFLOW_FINISHED = [
    "id",
    "workflow_id",
    "status",
    "outputs",
    "error",
    "elapsed_time",
    "total_tokens",
    "total_steps",
    "created_by",
    "created_at",
    "finished_at",
    "exceptions_count",
    "files",
]
USAGE = [
    "prompt_tokens",
    "prompt_unit_price",
    "prompt_price_unit",
    "prompt_price",
    "completion_tokens",
    "completion_unit_price",
    "completion_price_unit",
    "completion_price",
    "total_tokens",
    "total_price",
    "currency",
    "latency",
    "time_to_first_token",
    "time_to_generate",
]


@pytest.fixture(scope="module")
def turn():
    """One turn of the plugin chatflow with the runner's local services (its web_search asks the local server)."""
    conversation = Conversation(user="alice")
    with local_services(shared_plugins=shared_plugins()) as svc:
        events = list(
            run_chatflow(
                chatflows.PLUGIN_DSL.read_text(encoding="utf-8"),
                "巡更时发现异常怎么上报？",
                {"user_roles": "物业经理"},
                svc,
                conversation,
            )
        )
    return events, conversation


@pytest.fixture(scope="module")
def tavily_dsl():
    """The plugin chatflow generated with the official Tavily plugin's search (`build-dsl --search tavily`)."""
    return chatflows.chatflow_text(chatflows.Variant(search="tavily"))


def test_the_order_is_difys(turn):
    events, _ = turn
    kinds = [e["event"] for e in events]
    assert kinds[0] == "ping" and kinds[1] == "workflow_started"
    assert kinds[-2:] == ["message_end", "workflow_finished"]  # since Dify 1.14 message_end comes first
    body = kinds[2:-2]
    assert set(body) <= {"node_started", "node_finished", "message", "ping"}
    started = [e["data"]["id"] for e in events if e["event"] == "node_started"]
    finished = [e["data"]["id"] for e in events if e["event"] == "node_finished"]
    assert sorted(started) == sorted(finished) and len(set(started)) == len(started)
    for execution in started:  # each node starts before it finishes
        assert started.index(execution) <= next(
            i for i, e in enumerate(events) if e["event"] == "node_finished" and e["data"]["id"] == execution
        )


def test_every_event_carries_exactly_difys_fields(turn):
    events, conversation = turn
    message_id, task_id = events[1]["message_id"], events[1]["task_id"]
    run_id = events[1]["workflow_run_id"]
    tool_nodes = {"web", "acl_filter", "merge", "validate", "cite"}
    for event in events:
        kind = event["event"]
        if kind == "ping":
            assert event == {"event": "ping"} and dify_sse(event) == "event: ping\n\n"
            continue
        assert list(event)[:5] == ENVELOPE
        assert (event["conversation_id"], event["message_id"], event["task_id"]) == (
            conversation.conversation_id,
            message_id,
            task_id,
        )
        assert event["created_at"] == events[1]["created_at"]  # the message's creation time, on every event
        data = event.get("data")
        if kind == "workflow_started":
            assert list(event) == ENVELOPE + ["workflow_run_id", "data"] and list(data) == WORKFLOW_STARTED
            assert data["id"] == run_id and data["reason"] == "initial" and uuid.UUID(data["workflow_id"])
            assert (
                data["inputs"]["user_roles"] == "物业经理" and data["inputs"]["sys.query"] == "巡更时发现异常怎么上报？"
            )
            assert {
                "sys.user_id",
                "sys.app_id",
                "sys.workflow_id",
                "sys.workflow_run_id",
                "sys.dialogue_count",
                "sys.files",
            } <= set(data["inputs"]) and "sys.conversation_id" not in data["inputs"]
        elif kind == "node_started":
            assert list(event) == ENVELOPE + ["workflow_run_id", "data"] and list(data) == NODE_STARTED
            assert (
                data["predecessor_node_id"],
                data["inputs"],
                data["inputs_truncated"],
                data["agent_strategy"],
                data["iteration_id"],
                data["loop_id"],
            ) == (None, None, False, None, None, None)
            if data["node_id"] in tool_nodes:
                assert list(data["extras"]) == ["icon"]
                assert data["extras"]["icon"].startswith("/console/api/workspaces/current/plugin/icon?tenant_id=")
            else:
                assert data["extras"] == {}
        elif kind == "node_finished":
            assert list(event) == ENVELOPE + ["workflow_run_id", "data"] and list(data) == NODE_FINISHED
            assert (data["inputs_truncated"], data["process_data_truncated"], data["outputs_truncated"]) == (
                False,
                False,
                False,
            )  # the Service API is never truncated
            assert data["predecessor_node_id"] is None and data["files"] == [] and data["status"] == "succeeded"
            assert data["error"] is None and isinstance(data["outputs"], dict) and "workflow_id" not in data
        elif kind == "message":  # an empty answer too (the LLM's last chunk, an empty variable), as Dify sends
            assert list(event) == ENVELOPE + ["id", "answer", "from_variable_selector"]
            assert event["id"] == message_id and isinstance(event["answer"], str)
        elif kind == "message_end":
            assert list(event) == ENVELOPE + ["id", "metadata", "files"] and event["files"] == []
            assert list(event["metadata"]) == ["annotation_reply", "retriever_resources", "usage", "reasoning"]
            assert event["metadata"]["annotation_reply"] is None and event["metadata"]["reasoning"] == {}
            usage = event["metadata"]["usage"]
            assert list(usage) == USAGE and usage["total_price"] == "0.0" and usage["currency"] == "USD"
            assert isinstance(usage["time_to_first_token"], float) and isinstance(usage["time_to_generate"], float)
        elif kind == "workflow_finished":
            assert list(event) == ENVELOPE + ["workflow_run_id", "data"] and list(data) == WORKFLOW_FINISHED
            assert data["id"] == run_id and data["status"] == "succeeded" and data["exceptions_count"] == 0
            assert data["created_by"] == {"id": conversation.end_user_id, "user": "alice"}
            assert data["total_steps"] == sum(e["event"] == "node_started" for e in events)
        else:
            raise AssertionError(f"an event Dify does not send here: {kind}")
    # Dify sends index 1 on every node (its started event keeps node_run_index's default)
    assert {e["data"]["index"] for e in events if e["event"] in ("node_started", "node_finished")} == {1}


def test_knowledge_retrieval_reports_what_dify_reports_and_nothing_local(turn):
    events, _ = turn
    kr = next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == "kr")
    assert list(kr["process_data"]) == ["usage"] and list(kr["process_data"]["usage"]) == USAGE
    assert kr["process_data"]["usage"]["total_tokens"] == 0 and kr["process_data"]["usage"]["total_price"] == "0.0"
    assert kr["execution_metadata"] == {"total_tokens": 0, "total_price": "0.0", "currency": "USD"}
    assert kr["inputs"] == {"query": "巡更时发现异常怎么上报？"}
    stream = "".join(dify_sse(e) for e in events)
    assert "documents_admitted" not in stream and "metadata_filtering_conditions" not in stream


def test_the_wire_format_is_difys(turn):
    events, _ = turn
    stream = "".join(dify_sse(e) for e in events)
    assert stream.startswith('event: ping\n\ndata: {"event":"workflow_started",')
    assert "巡更" in stream and "\\u5de1" not in stream  # UTF-8, not \u escapes (orjson)
    for block in stream.split("\n\n")[:-1]:
        assert block == "event: ping" or (block.startswith("data: {") and "\n" not in block)


class SlowModel(ExtractiveModel):
    def invoke_llm(self, **kwargs):
        time.sleep(0.9)
        return super().invoke_llm(**kwargs)


def test_pings_keep_coming_while_the_stream_waits():
    with local_services(llm=SlowModel(), shared_plugins=shared_plugins()) as svc:
        # the LLM-node layout (`build-dsl --answer llm-node`): the pings while an LLM node waits
        events = list(
            run_chatflow(
                chatflows.chatflow_text(chatflows.Variant(answer="llm-node")),
                "会议室怎么预约？",
                {"user_roles": "前台"},
                svc,
                ping_interval=0.2,
            )
        )
    kinds = [e["event"] for e in events]
    llm_started = next(
        i for i, e in enumerate(events) if e["event"] == "node_started" and e["data"]["node_id"] == "llm"
    )
    first_message = kinds.index("message")
    assert (
        kinds[0] == "ping" and kinds[llm_started:first_message].count("ping") >= 2
    )  # about one per interval of waiting
    assert kinds[-2:] == ["message_end", "workflow_finished"]


def test_a_failed_run_ends_at_workflow_finished_as_in_dify():
    text = minimal_dsl(code="def main():\n    return {'out': ['s'] * 31}\n", outputs={"out": "array[string]"})
    events = list(run_chatflow(text, "q", {}, Services()))
    finished = events[-1]
    assert finished["event"] == "workflow_finished" and finished["data"]["status"] == "failed"
    assert finished["data"]["error"] == "The length of output variable `out` must be less than 30 elements."
    # Dify's stream of a failed run (checked in real Dify by tests/dify): no message_end and no `error` event
    assert not {"error", "message_end"} & {e["event"] for e in events}


def test_a_code_node_error_is_the_programs_whole_stderr_as_the_sandbox_reports_it():
    code = "def main():\n    raise ValueError('no roles here')\n"
    events = list(run_chatflow(minimal_dsl(code=code, outputs={"out": "string"}), "q", {}, Services()))
    error = next(e for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == "code")["data"]["error"]
    assert error.startswith("Traceback (most recent call last):\n") and error.endswith("ValueError: no roles here\n")
    assert events[-1]["data"]["error"] == error


# --- the official Tavily tool ---------------------------------------------------------------------------------


def test_tavily_failures_are_text_messages_as_the_official_plugin_sends_them():
    assert tavily_messages({"query": "q"}, fail=True) == [
        {"type": "text", "message": {"text": f"Error occurred while searching: {TAVILY_OUTAGE}"}, "meta": None}
    ]
    assert tavily_messages({"query": "q"}, api_key="") == [
        {
            "type": "text",
            "message": {"text": "Tavily API key is missing. Please set it in the credentials."},
            "meta": None,
        }
    ]
    assert tavily_messages({"query": ""})[0]["message"]["text"] == "Please input a query."
    found = tavily_messages({"query": "巡更", "max_results": 2})
    assert [m["type"] for m in found] == ["json", "text"]
    assert len(found[0]["message"]["json_object"]["results"]) == 2
    assert found[1]["message"]["text"].startswith("# Result 1: [")


@pytest.mark.parametrize("fail,key", [(True, "tvly-TEST"), (False, "")])
def test_a_failed_tavily_search_succeeds_with_text_and_an_empty_json(fail, key, tavily_dsl):
    svc = Services(
        tool_credentials={"langgenius/tavily:": {"tavily_api_key": key}},
        tavily_fail=fail,
        shared_plugins=shared_plugins(),
    )
    try:
        events = list(run_chatflow(tavily_dsl, "巡更时发现异常怎么上报？", {"user_roles": "物业经理"}, svc))
    finally:
        svc.close()
    web = next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == "web")
    expected = (
        f"Error occurred while searching: {TAVILY_OUTAGE}"
        if fail
        else "Tavily API key is missing. Please set it in the credentials."
    )
    assert web["status"] == "succeeded" and web["error"] is None
    assert web["outputs"]["json"] == [{"data": []}] and web["outputs"]["text"] == expected
    assert events[-1]["data"]["status"] == "succeeded" and events[-1]["data"]["exceptions_count"] == 0


def test_a_tavily_search_with_results_gives_json_then_the_formatted_text(tavily_dsl):
    svc = Services(tool_credentials=TAVILY, shared_plugins=shared_plugins())
    try:
        events = list(run_chatflow(tavily_dsl, "巡更时发现异常怎么上报？", {"user_roles": "物业经理"}, svc))
    finally:
        svc.close()
    web = next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == "web")
    response = web["outputs"]["json"][0]
    assert response["results"] and web["outputs"]["text"].startswith(
        f"# Result 1: [{response['results'][0]['title']}]({response['results'][0]['url']})\n"
    )
    assert json.dumps(web["outputs"]["json"]) != json.dumps([{"data": []}])


def test_verbose_prints_what_the_local_retrieval_admitted_on_stderr_only():
    import contextlib
    import io

    from gcite.cli.main import main as cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert (
            cli(
                [
                    "run",
                    str(chatflows.CODE_DSL),
                    "--query",
                    "访客登记",
                    "--inputs",
                    '{"user_roles": "前台"}',
                    "--verbose",
                ]
            )
            == 0
        )
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("[verbose] kr: admitted ")
    assert "'doc-visitor'" in lines[0] and "'doc-hvac'" not in lines[0] and '",前台,"' in lines[0]
    assert "doc-hvac" not in out.getvalue() and "admitted" not in out.getvalue()
    assert out.getvalue().startswith("event: ping\n\n")
