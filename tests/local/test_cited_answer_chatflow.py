"""The shipped plugin chatflows (`cited_answer`, no style input: Dify's chat's superscripts) on the local runner: the
real plugin process, its model call answered by the runner's LLM (the same one LLM nodes get), the stream checked as
a client reads it. Two turns; `gcite run`."""

import json
import subprocess
import sys
import time

import pytest

from gcite.authoring import chatflows
from gcite.local.runner import run_chatflow
from gcite.local.service_api import Conversation
from gcite.local.services import local_services
from tests.support import ROOT
from tests.support.cited import (
    CITE,
    UNKNOWN_IDS,
    TrickyModel,
    cited_chatflow,
    displayed,
    first_appearance,
    stream_problems,
)
from tests.support.local_http import origin, start_server, stop_server
from tests.support.openai_model import streaming_model
from tests.support.plugins import shared_plugins

QUERIES = {
    "zh": ("访客来访需要怎么登记？", "会议室怎么预约？"),
    "en": ("How do visitors register?", "How do I book a meeting room?"),
}
DSL = {"zh": chatflows.PLUGIN_DSL, "en": chatflows.PLUGIN_DSL.with_name("gcite_chatflow.en.yml")}


def finished(events, node):
    return next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == node)


def timed_turn(dsl, query, services, conversation):
    """[(seconds since the request, event)] of one turn."""
    start, out = time.perf_counter(), []
    for event in run_chatflow(dsl, query, {"user_roles": "前台"}, services, conversation):
        out.append((time.perf_counter() - start, event))
    return out


@pytest.fixture(scope="module", params=["zh", "en"])
def turns(request):
    dsl = DSL[request.param].read_text(encoding="utf-8")  # the shipped chatflow: no style input, superscripts
    model = TrickyModel(pause=0.01)
    conversation = Conversation()
    with local_services(model, shared_plugins=shared_plugins()) as services:
        first = timed_turn(dsl, QUERIES[request.param][0], services, conversation)
        second = timed_turn(dsl, QUERIES[request.param][1], services, conversation)
    return request.param, model, first, second


def test_each_turn_streams_clean_citations_before_the_tool_ends(turns):
    lang, model, *both = turns
    for n, timed in enumerate(both):
        events = [e for _, e in timed]
        assert events[-1]["event"] == "workflow_finished" and events[-1]["data"]["status"] == "succeeded", events[-1]
        messages = [(at, e["answer"]) for at, e in timed if e["event"] == "message"]
        assert stream_problems([text for _, text in messages]) == []
        cite_done = next(at for at, e in timed if e["event"] == "node_finished" and e["data"]["node_id"] == CITE)
        first_text = next(at for at, text in messages if text)
        assert cite_done - first_text > 0.1, (first_text, cite_done)  # the answer streamed while the model wrote
        answer = "".join(text for _, text in messages)
        numbers, titles, items = displayed(answer)
        outputs = finished(events, CITE)["outputs"]
        cited = model.cited[n]
        assert first_appearance(numbers) == list(range(1, len(cited) + 1))
        assert [c["id"] for c in outputs["citations"]] == cited
        assert outputs["invalid_ids"] == list(UNKNOWN_IDS) and not any(i in answer for i in UNKNOWN_IDS)
        chunks = {str(c["id"]): c for c in finished(events, "merge")["outputs"]["chunk_metadata"]}
        assert sorted(items) == list(range(1, len(cited) + 1))  # the list holds exactly the cited chunks
        for number, chunk_id in enumerate(cited, start=1):
            assert chunks[chunk_id]["document_title"] in titles[number]
            assert chunks[chunk_id]["document_title"] in items[number]
        assert ("来源" if lang == "zh" else "Sources") in answer


def test_the_second_turn_sees_the_first_without_markers(turns):
    lang, model, first, _ = turns
    remembered = finished([e for _, e in first], CITE)["outputs"]["answer_without_markers"]
    assert remembered and "[C:" not in remembered and "<sup" not in remembered
    second_prompt = model.prompts[1][0].content
    assert QUERIES[lang][0] in second_prompt and remembered in second_prompt
    assert second_prompt.count("[C:N]") == 2  # the rules, once (they name the marker twice)


def gcite_run(path, *options):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gcite",
            "run",
            str(path),
            "--query",
            "How do I book a meeting room?",
            "--inputs",
            '{"user_roles": ""}',
            *options,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("data:")]


@pytest.fixture(scope="module")
def cited_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cited") / "cited.yml"
    path.write_text(cited_chatflow(DSL["en"].read_text(encoding="utf-8")), encoding="utf-8")
    return path


def test_gcite_run_answers_the_tools_model_call_with_the_extractive_stand_in(cited_file):
    events = gcite_run(cited_file)
    answer = "".join(e["answer"] for e in events if e["event"] == "message")
    numbers, titles, items = displayed(answer)
    assert first_appearance(numbers) == [1, 2] and "Meeting room rules" in titles[1] and len(items) == 2
    assert finished(events, CITE)["outputs"]["status"] == "cited"


def test_gcite_run_answers_it_with_the_model_at_llm_base_url(cited_file):
    requests = []
    server = start_server(streaming_model(["Book it in the mini", "-program [C:", "4][C:77]."], requests))
    try:
        events = gcite_run(cited_file, "--llm-base-url", f"{origin(server)}/v1", "--llm-model", "m-1")
    finally:
        stop_server(server)
    assert requests and requests[0]["model"] == "m-1" and requests[0]["temperature"] == 0.2  # the tool's parameters
    assert "# Citation rules" in requests[0]["messages"][0]["content"]
    answer = "".join(e["answer"] for e in events if e["event"] == "message")
    assert answer.startswith("Book it in the mini-program<sup title=") and "[C:" not in answer
    assert finished(events, CITE)["outputs"]["invalid_ids"] == ["77"]
