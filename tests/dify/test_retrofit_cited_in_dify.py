"""A builder's chatflow after `gcite retrofit --answer cited --memory`, in Dify's own api server (`make test-dify`):
tests/fixtures/retrofit/svcvit-image-knowledge-base.zh.yml as this Dify would export it (its LLM on the stand-in's
model, with completion parameters of its own), retrofitted, the output imported as written, published and keyed.
`cited_answer` stands where the LLM node stood, with that model, those parameters and the LLM's system prompt; the
scripted model (tests/support/cited.py `tricky_script`) cites out of order, repeats and groups ids, writes unknown
ids, in irregular pieces. Two turns of one conversation on the Service API (`/v1/chat-messages`) and on the API
Dify's web app calls (`/api/chat-messages`, tests/dify/console.py `WebApp`), read as a client reads them; and the
native citation panel (on in this app), which retrofit's report says stays empty, is empty."""

import pytest
import yaml

from gcite.authoring.retrofit import Options, retrofit
from gcite.local.llm import numbered_chunks
from tests.dify.console import WebApp, chat_timed, conversation_messages
from tests.dify.harness import RETROFIT_FIXTURE, add_app, builder_export_for_dify, plugin_identifier, tool_prompt
from tests.support.cited import UNKNOWN_IDS, displayed, first_appearance, stream_problems, tricky_answer, tricky_script
from tests.support.yamltext import safe_load

APP = "retrofit-cited:" + RETROFIT_FIXTURE.name
LLM = "1743994891832"
CITE, MERGE = f"gcite_cite_{LLM}", f"gcite_merge_{LLM}"
PARAMS = {"temperature": 0.3, "max_tokens": 700}  # the builder's completion parameters, carried to the tool
INSTRUCTIONS = "你是一个AI聊天助手，请参考<info></info>中的内容"  # the start of the builder's system prompt
QUERIES = ("访客来访需要怎么登记？", "会议室怎么预约？")
USER = "retrofit-cited-user"
PACE = 0.02
CHANNELS = ("service-api", "web-app")
# The web app's stream carries no node inputs or outputs (Dify sends it node events without details): there the
# answer is compared with the Service API's for the same turn (the scripted model answers alike).
SERVICE_ANSWERS: dict[int, str] = {}


def finished(events, node):
    found = [e["data"] for e in events if e.get("event") == "node_finished" and e["data"]["node_id"] == node]
    assert len(found) == 1, [e.get("event") for e in events]
    return found[0]


@pytest.fixture(scope="module")
def app(dify):
    exported = safe_load(builder_export_for_dify(RETROFIT_FIXTURE.read_text(encoding="utf-8"), dify))
    llm = next(n for n in exported["workflow"]["graph"]["nodes"] if n["id"] == LLM)
    llm["data"]["model"]["completion_params"] = dict(PARAMS)
    assert exported["workflow"]["features"]["retriever_resource"]["enabled"]  # the native panel is on
    text = yaml.safe_dump(exported, allow_unicode=True, sort_keys=False)
    result = retrofit(text, Options(answer="cited", memory=True, identifier=plugin_identifier()))
    assert any(n.startswith("Dify's citation panel") and "stays empty" in n for n in result.notes)
    return add_app(dify, APP, result.text)  # retrofit's output as it is, nothing edited after


@pytest.fixture(scope="module", params=CHANNELS)
def turns(dify, app, request):
    """([events with their arrival times] of the two turns, the conversation id, the model requests made, the
    channel, and the web app client on that channel (else None))."""
    channel = request.param
    web = WebApp(dify.base_url, dify.console.site_code(app.app_id), f"{USER}-web") if channel == "web-app" else None
    dify.daemon.script, dify.daemon.pace = tricky_script, PACE
    out, conversation, since = [], "", len(dify.daemon.llm_requests)
    try:
        for query in QUERIES:
            if web is not None:
                status, timed = web.chat_timed(query, {}, conversation)
            else:
                status, timed = chat_timed(dify.base_url, app.key, query, {}, user=USER, conversation_id=conversation)
            assert status == 200, timed
            conversation = next(e["conversation_id"] for _, e in timed if e.get("conversation_id"))
            out.append(timed)
    finally:
        dify.daemon.script, dify.daemon.pace = None, 0.0
    return out, conversation, dify.daemon.llm_requests[since:], channel, web


def test_the_tool_calls_the_builders_model_with_its_parameters_and_prompt(dify, turns):
    requests = [r["data"] for r in turns[2] if INSTRUCTIONS in str(r["data"]["prompt_messages"][0].get("content"))]
    assert len(requests) == 2
    for request, query in zip(requests, QUERIES):
        assert request["prompt_messages"][-1]["content"] == query
        assert {k: request["model_parameters"].get(k) for k in PARAMS} == PARAMS
        system = str(request["prompt_messages"][0]["content"])
        assert system.startswith(INSTRUCTIONS) and "[C:1]" in system  # the builder's prompt, then the tool's rules


@pytest.mark.parametrize("n", [0, 1], ids=["turn 1", "turn 2"])
def test_each_turn_streams_clean_citations_numbered_by_first_appearance(dify, turns, n):
    timed, channel = turns[0][n], turns[3]
    events = [e for _, e in timed]
    assert events[-1]["event"] == "workflow_finished" and events[-1]["data"]["status"] == "succeeded", events[-1]
    messages = [(at, e["answer"]) for at, e in timed if e["event"] == "message"]
    assert stream_problems([text for _, text in messages]) == []  # no [C:, no half <sup in any message event
    first_text = next(at for at, text in messages if text)
    tool_done = next(at for at, e in timed if e["event"] == "node_finished" and e["data"]["node_id"] == CITE)
    print(
        f"\ntest-dify: retrofit --answer cited, {channel}, turn {n + 1}: "
        f"first text {tool_done - first_text:.2f} s early"
    )
    assert tool_done - first_text > 0.5  # the chat saw the answer as the model wrote it
    answer = "".join(text for _, text in messages)
    numbers, titles, items = displayed(answer)
    _, cited = tricky_answer(numbered_chunks(tool_prompt(dify, QUERIES[n], INSTRUCTIONS)), QUERIES[n])
    # this app's own retrieval (keyword, top 4) finds one chunk for the first question and several for the second
    assert cited and (n == 0 or len(cited) >= 2)
    assert first_appearance(numbers) == list(range(1, len(cited) + 1))
    assert sorted(items) == list(range(1, len(cited) + 1))  # the sources list holds exactly the cited chunks
    assert not any(i in answer for i in UNKNOWN_IDS)
    # the native citation panel: Dify sends it nothing (no LLM node's context), as retrofit's report says
    end = next(e for e in events if e["event"] == "message_end")
    assert not (end.get("metadata") or {}).get("retriever_resources"), end.get("metadata")
    if channel == "web-app":
        assert finished(events, CITE)["outputs"] is None  # what this channel cannot check, the Service API did
        if n in SERVICE_ANSWERS:
            assert answer == SERVICE_ANSWERS[n]
        return
    SERVICE_ANSWERS[n] = answer
    outputs = finished(events, CITE)["outputs"]
    assert [c["id"] for c in outputs["citations"]] == cited and outputs["invalid_ids"] == list(UNKNOWN_IDS)
    chunks = {str(c["id"]): c for c in finished(events, MERGE)["outputs"]["chunk_metadata"]}
    for number, chunk_id in enumerate(cited, start=1):
        assert (
            chunks[chunk_id]["document_title"] in titles[number] and chunks[chunk_id]["document_title"] in items[number]
        )


def test_the_saved_messages_are_what_streamed_and_the_second_turn_remembers_the_first(dify, turns, app):
    timed_turns, conversation, _, channel, web = turns
    if web is not None:
        saved = web.messages(conversation)
    else:
        saved = conversation_messages(dify.base_url, app.key, conversation, user=USER)
    assert [m["query"] for m in saved] == list(QUERIES)
    for message, timed in zip(saved, timed_turns):
        assert message["answer"] == "".join(e["answer"] for _, e in timed if e["event"] == "message")
    if channel == "web-app":  # no node outputs on this channel: the history the model saw has no markup
        history = tool_prompt(dify, QUERIES[1], QUERIES[0]).split(QUERIES[0], 1)[1]
        assert "<sup" not in history and "gcite-" not in history
        return
    remembered = finished([e for _, e in timed_turns[0]], CITE)["outputs"]["answer_without_markers"]
    assert remembered and "[C:" not in remembered and "<sup" not in remembered
    assert QUERIES[0] in tool_prompt(dify, QUERIES[1], remembered)
