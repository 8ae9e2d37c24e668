"""`cited_answer` in Dify's own api server (`make test-dify`): Start → role slots → Knowledge Retrieval → role filter
→ web search → merge → cited_answer → Answer `{{#cite.answer#}}{{#cite.sources#}}`: the two shipped plugin chatflows
as imported (no `citation_style` input: the tool's default, superscripts) and tests/support/cited.py's copy with the
style fixed, each on the Service API (`/v1/chat-messages`) and on the API Dify's web app calls (`/api/chat-messages`
with the site's code and a passport, tests/dify/console.py `WebApp`).

The tool's backwards model call goes from OUR plugin process through the daemon stand-in to Dify's real
`/inner/api/invoke/llm`; Dify's model manager calls the stand-in model provider (`dispatch/llm/invoke`), whose
scripted model streams an answer that cites out of order, repeats ids, groups them, writes a full-width marker and
unknown ids, in irregular pieces (so markers are split across deltas), `PACE` seconds apart. Two turns of one
conversation, read from the Service API stream as a client reads it.

The stream of the first turn is written to `$GCITE_CITED_RECORDING` when set (the browser test renders the committed
copy: tests/fixtures/cited_answer/dify_stream.json), else into the test-dify work folder.
"""

import json
import os
from pathlib import Path

import pytest

from gcite.local.llm import numbered_chunks
from tests.dify.console import WebApp, chat_timed, conversation_messages
from tests.dify.harness import CITED_APP, DSL_FILES, RESTRICTED_QUERIES, restricted_texts, tool_prompt
from tests.support.cited import (
    CITE,
    UNKNOWN_IDS,
    displayed,
    first_appearance,
    stream_problems,
    tricky_answer,
    tricky_script,
)

QUERIES = ("访客来访需要怎么登记？", "会议室怎么预约？")
ROLES = {"user_roles": "前台"}
USER = "cited-answer-user"
PACE = 0.02  # seconds between the scripted model's pieces
APPS = (CITED_APP, *DSL_FILES[:2])  # the shipped plugin chatflows, and the phase-1 copy
CHANNELS = ("service-api", "web-app")
CASES = [(app, channel) for app in APPS for channel in CHANNELS]
# The web app's stream carries no node inputs or outputs (Dify sends it node events without details): there the
# answer is compared with the Service API's for the same app and turn (the scripted model answers alike).
SERVICE_ANSWERS: dict[tuple[str, int], str] = {}


class Channel:
    """One way a client reaches the app: `chat_timed(query, inputs, conversation)` and `saved(conversation)`."""

    def __init__(self, dify, app: str, channel: str, user: str) -> None:
        self.name, self.app = channel, app
        if channel == "web-app":
            self.web = WebApp(dify.base_url, dify.console.site_code(dify.apps[app].app_id), user)
        else:
            self.web, self.base_url, self.key, self.user = None, dify.base_url, dify.apps[app].key, user

    def chat_timed(self, query, inputs, conversation=""):
        if self.web is not None:
            return self.web.chat_timed(query, inputs, conversation)
        return chat_timed(self.base_url, self.key, query, inputs, user=self.user, conversation_id=conversation)

    def saved(self, conversation):
        if self.web is not None:
            return self.web.messages(conversation)
        return conversation_messages(self.base_url, self.key, conversation, user=self.user)


def finished(events, node):
    found = [e["data"] for e in events if e.get("event") == "node_finished" and e["data"]["node_id"] == node]
    assert len(found) == 1, [e.get("event") for e in events]
    return found[0]


@pytest.fixture(scope="module", params=CASES, ids=[f"{a}-{c}" for a, c in CASES])
def turns(dify, request):
    """([events with their arrival times] of the two turns, the conversation id, the channel) for one app and
    channel."""
    app, name = request.param
    channel = Channel(dify, app, name, f"{USER}-{name}")
    dify.daemon.script, dify.daemon.pace = tricky_script, PACE
    out, conversation = [], ""
    try:
        for query in QUERIES:
            status, timed = channel.chat_timed(query, ROLES, conversation)
            assert status == 200, timed
            conversation = next(e["conversation_id"] for _, e in timed if e.get("conversation_id"))
            out.append(timed)
    finally:
        dify.daemon.script, dify.daemon.pace = None, 0.0
    if (app, name) == (DSL_FILES[0], "web-app"):  # the shipped chatflow in the web app: what the renderer test shows
        record(out[0], QUERIES[0])
    return out, conversation, channel


def record(timed, query):
    path = Path(os.environ.get("GCITE_CITED_RECORDING") or Path(os.environ["GCITE_DIFY_WORK"]) / "cited-stream.json")
    messages = [{"at": round(at, 3), "answer": e["answer"]} for at, e in timed if e.get("event") == "message"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "dify": "1.16.1 (api 08993dd6)",
                "app": "dsl/gcite_chatflow.yml as shipped, through the web app API (/api/chat-messages)",
                "query": query,
                "messages": messages,
            },
            ensure_ascii=False,
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"\ntest-dify: the first turn's stream is recorded in {path}")


def test_the_tools_model_call_goes_through_difys_inner_api_to_the_model_provider(dify, turns):
    calls = [c for c in dify.daemon.model_calls if c["prompt_messages"][-1]["content"] in QUERIES]
    assert len(calls) >= 2 and all(c["type"] == "llm" and c["tenant_id"] == dify.tenant_id for c in calls)
    assert {(c["provider"], c["model"]) for c in calls} == {("langgenius/openai/openai", "gpt-4o-mini")}
    for query in QUERIES:  # Dify's model manager passed the tool's prompt on to the provider (dispatch/llm/invoke)
        assert "[C:1]" in tool_prompt(dify, query)


@pytest.mark.parametrize("n", [0, 1], ids=["turn 1", "turn 2"])
def test_each_turn_streams_clean_citations_numbered_by_first_appearance(dify, turns, n):
    timed, channel = turns[0][n], turns[2]
    events = [e for _, e in timed]
    assert events[-1]["event"] == "workflow_finished" and events[-1]["data"]["status"] == "succeeded", events[-1]
    messages = [(at, e["answer"]) for at, e in timed if e["event"] == "message"]
    assert stream_problems([text for _, text in messages]) == []
    first_text = next(at for at, text in messages if text)
    tool_done = next(at for at, e in timed if e["event"] == "node_finished" and e["data"]["node_id"] == CITE)
    print(
        f"\ntest-dify: cited_answer, {channel.name}, turn {n + 1}: the first answer text came "
        f"{tool_done - first_text:.2f} s before "
        f"the tool's node_finished ({len(messages)} message events)"
    )
    assert tool_done - first_text > 0.5  # the model wrote for about a second: the chat saw it as it was written
    answer = "".join(text for _, text in messages)
    numbers, titles, items = displayed(answer)
    _, cited = tricky_answer(numbered_chunks(tool_prompt(dify, QUERIES[n])), QUERIES[n])
    assert len(cited) >= 2 and first_appearance(numbers) == list(range(1, len(cited) + 1))
    assert sorted(items) == list(range(1, len(cited) + 1))  # the Sources list holds exactly the cited chunks
    assert not any(i in answer for i in UNKNOWN_IDS)
    if channel.name == "web-app":
        assert finished(events, CITE)["outputs"] is None  # what this channel cannot check, the Service API did
        if (channel.app, n) in SERVICE_ANSWERS:
            assert answer == SERVICE_ANSWERS[(channel.app, n)]
        return
    SERVICE_ANSWERS[(channel.app, n)] = answer
    chunks = {str(c["id"]): c for c in finished(events, "merge")["outputs"]["chunk_metadata"]}
    outputs = finished(events, CITE)["outputs"]
    assert [c["id"] for c in outputs["citations"]] == cited
    assert outputs["invalid_ids"] == list(UNKNOWN_IDS)
    for number, chunk_id in enumerate(cited, start=1):
        assert (
            chunks[chunk_id]["document_title"] in titles[number] and chunks[chunk_id]["document_title"] in items[number]
        )
    assert outputs["status"] == "cited" and "**来源**" in answer


def test_the_saved_messages_are_what_streamed(dify, turns):
    timed_turns, conversation, channel = turns
    saved = channel.saved(conversation)
    assert [m["query"] for m in saved] == list(QUERIES)
    for message, timed in zip(saved, timed_turns):
        streamed = "".join(e["answer"] for _, e in timed if e["event"] == "message")
        assert message["answer"] == streamed


def test_the_second_turn_sees_the_first_without_markers(dify, turns):
    first = [e for _, e in turns[0][0]]
    if turns[2].name == "web-app":  # no node outputs on this channel: the history the model saw has no markup
        history = tool_prompt(dify, QUERIES[1], QUERIES[0]).split(QUERIES[0], 1)[1]
        assert "<sup" not in history and "gcite-" not in history
        return
    remembered = finished(first, CITE)["outputs"]["answer_without_markers"]
    assert remembered and "[C:" not in remembered and "<sup" not in remembered
    prompt = tool_prompt(dify, QUERIES[1], remembered)
    assert QUERIES[0] in prompt


@pytest.mark.parametrize("app,name", CASES, ids=[f"{a}-{c}" for a, c in CASES])
def test_a_user_without_the_role_never_receives_a_restricted_chunk(dify, app, name):
    forbidden = restricted_texts(dify, set())
    assert forbidden
    channel = Channel(dify, app, name, "no-role")
    dify.daemon.script = tricky_script  # the model cites every chunk it is given: a restricted one would show
    try:
        for query in RESTRICTED_QUERIES:
            status, timed = channel.chat_timed(query, {"user_roles": ""})
            assert status == 200 and timed[-1][1]["data"]["status"] == "succeeded", timed[-1]
            text = json.dumps([e for _, e in timed], ensure_ascii=False)
            assert not [t for t in forbidden if t in text], query
        status, timed = Channel(dify, app, name, "frontdesk").chat_timed(QUERIES[0], ROLES)
    finally:
        dify.daemon.script = None
    assert "访客须在前台出示证件登记" in json.dumps([e for _, e in timed], ensure_ascii=False)  # the check can fail
