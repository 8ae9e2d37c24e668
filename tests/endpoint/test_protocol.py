"""gcite.protocol: Dify's event stream → the G-Cite protocol, on canned streams and on the shipped chatflows."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import endpoints.chat_protocol as chat_protocol
from citations import validate as validate_citations
from citations.answer_layout import machine_inputs
from citations.stream import CitationStream
from gcite import protocol
from gcite.authoring.chatflows import CODE_DSL, PLUGIN_DSL
from gcite.local.app_host import sample_services
from gcite.local.runner import run_chatflow
from gcite.protocol import (
    SOURCE_KEYS,
    ProtocolError,
    Translator,
    gcite_sse,
    parse_gcite_sse,
    safe_url,
    source_of,
    translate,
)
from tests.support.endpoint import answer_text, assert_protocol, chunk, dify_stream, envelope, node

CHUNKS = [chunk(1, "第一段"), chunk(2, "第二段", source_type="web", url="https://example.com/2"), chunk(3, "第三段")]


def run(events, **options):
    return list(translate(events, Translator(**options)))


def merged(events):
    """Adjacent `text` events joined: what a reader sees, whatever the split."""
    out = []
    for name, data in events:
        if name == "text" and out and out[-1][0] == "text":
            out[-1] = ("text", {"text": out[-1][1]["text"] + data["text"]})
        else:
            out.append((name, data))
    return out


# --- the wire format ----------------------------------------------------------------------------------------------


def test_sse_round_trips_and_knows_only_the_protocols_events():
    data = {"text": '第一行\n第二行 "quoted" </script>'}
    wire = protocol.OPEN_COMMENT + gcite_sse("ready", {}) + gcite_sse("text", data)
    assert wire.count("\ndata: ") == 2 and "\n\n" not in gcite_sse("text", data)[:-2]
    assert list(parse_gcite_sse(wire)) == [("ready", {}), ("text", data)]
    assert list(parse_gcite_sse(wire.splitlines(keepends=True))) == [("ready", {}), ("text", data)]
    with pytest.raises(ValueError, match="not a G-Cite protocol event"):
        gcite_sse("node_finished", {})


@pytest.mark.parametrize(
    "url,safe",
    [
        ("https://example.com/a?b=1#c", "https://example.com/a?b=1#c"),
        ("HTTP://Example.com", "HTTP://Example.com"),
        ("  https://example.com/x  ", "https://example.com/x"),
        ("javascript:alert(1)", ""),
        ("oss://bucket/file", ""),
        ("data:text/html,<b>", ""),
        ("https://", ""),
        ("//example.com/x", ""),
        ("https://exa mple.com", ""),
        ("https://example.com/\nx", ""),
        (None, ""),
        (42, ""),
        ("", ""),
        ("http://[::1", ""),
    ],
)
def test_only_http_urls_with_a_host_pass(url, safe):
    assert safe_url(url) == safe


def test_a_source_has_exactly_the_documented_keys_all_text():
    source = source_of(
        {
            **chunk(7, "正文" * 200, url="https://x.example/1"),
            "published_date": None,
            "site_name": 5,
            "extra": "secret",
        },
        snippet_length=10,
    )
    assert tuple(source) == SOURCE_KEYS and all(isinstance(v, str) for v in source.values())
    assert source["snippet"] == "正文" * 5 and source["site_name"] == "5" and source["published_date"] == ""


# --- sources -----------------------------------------------------------------------------------------------------


def test_sources_come_from_the_first_node_with_a_chunk_metadata_list_before_any_text():
    stream = dify_stream(["答[C:2]"], CHUNKS)
    stream.insert(1, node("node_finished", "other", "code", {"chunk_metadata": "not a list", "x": 1}))
    events = run(stream)
    assert_protocol(protocol.OPEN_COMMENT, events)
    assert [n for n, _ in events][:3] == ["ready", "sources", "text"]
    assert [s["id"] for s in events[1][1]["sources"]] == ["1", "2", "3"]
    assert events[-1][1]["citations"][0]["url"] == "https://example.com/2"


def test_a_configured_source_node_is_the_only_one_read():
    decoy = node("node_finished", "decoy", "code", {"chunk_metadata": [chunk(1, "诱饵")]})
    stream = dify_stream(["答[C:1]"], CHUNKS)
    stream.insert(1, decoy)
    chosen = run(stream, source_node="merge")
    assert chosen[1][1]["sources"][0]["snippet"] == "第一段"
    as_text = dify_stream(["答[C:1]"], [])
    as_text[2]["data"]["outputs"]["chunk_metadata"] = json.dumps(CHUNKS, ensure_ascii=False)
    assert run(as_text, source_node="merge")[1][1]["sources"][2]["snippet"] == "第三段"
    missing = run(dify_stream(["答[C:1]"], CHUNKS), source_node="no-such-node")
    assert missing[1] == ("sources", {"sources": []})
    assert missing[-1][1]["invalid_ids"] == ["1"] and missing[-1][1]["status"] == "uncited"


def test_without_a_chunk_list_nothing_can_be_cited():
    stream = [envelope("message", id="m", answer="答案[C:1]，另[C:2]。"), envelope("message_end", id="m")]
    events = run(stream)
    assert events[1] == ("sources", {"sources": []})
    assert answer_text(events) == "答案，另。" and not any(n == "cite" for n, _ in events)
    assert events[-1][1]["invalid_ids"] == ["1", "2"] and events[-1][1]["citations"] == []


def test_a_chunk_list_after_the_answer_started_is_ignored():
    stream = dify_stream(["答[C:1]"], CHUNKS)
    late = stream.pop(2)
    stream.insert(6, late)
    events = run(stream)
    assert events[1] == ("sources", {"sources": []}) and [n for n, _ in events].count("sources") == 1


@pytest.mark.parametrize(
    "bad",
    [
        [{"id": "x"}],
        [{"id": "1", "source_type": "rag"}, {"id": "01", "source_type": "rag"}],
        [{"id": "1", "source_type": "book"}],
        ["text"],
        "{not json",
    ],
)
def test_a_malformed_chunk_list_is_an_app_error(bad):
    stream = [node("node_finished", "merge", "tool", {"chunk_metadata": bad}), envelope("message_end", id="m")]
    events = run(stream, source_node="merge")
    assert events[-1][0] == "error" and events[-1][1]["code"] == "app_error" and len(events) == 2


# --- the answer text ---------------------------------------------------------------------------------------------


def test_the_answer_nodes_appended_reference_list_is_not_answer_text():
    for selectors in (True, False):
        events = run(dify_stream(["答案", "[C:1]。"], CHUNKS, references="- [C:1] 标题", selectors=selectors))
        assert answer_text(events).rstrip("\n") == "答案。"
        assert "标题" not in json.dumps(events, ensure_ascii=False)


def test_text_before_the_llm_in_the_answer_template_still_shows():
    stream = dify_stream(["正文[C:1]"], CHUNKS)
    stream.insert(4, envelope("message", id="msg-1", answer="前言：", from_variable_selector=["answer", "answer"]))
    assert answer_text(run(stream)) == "前言：正文"


def test_an_answer_templates_own_text_before_the_retrieval_waits_for_the_chunk_list():
    # "Answer: {{#llm.text#}}": Dify streams the template's own text at once, before the merge node has run
    stream = dify_stream(["正文[C:2]"], CHUNKS)
    stream.insert(1, envelope("message", id="msg-1", answer="回答：", from_variable_selector=["answer", "answer"]))
    events = run(stream)
    assert [n for n, _ in events][:3] == ["ready", "sources", "text"] and len(events[1][1]["sources"]) == 3
    assert answer_text(events) == "回答：正文" and events[2] == ("text", {"text": "回答："})
    assert [(c["number"], c["id"]) for c in events[-1][1]["citations"]] == [(1, "2")]


def test_held_text_is_shown_at_the_end_when_no_chunk_list_and_no_llm_text_come():
    stream = [
        envelope("message", id="m", answer="你好[C:1]", from_variable_selector=["answer", "answer"]),
        envelope("message_end", id="m"),
    ]
    events = run(stream)
    assert [n for n, _ in events] == ["ready", "sources", "text", "done"] and events[1][1]["sources"] == []
    assert answer_text(events) == "你好" and events[-1][1]["invalid_ids"] == ["1"]
    replaced = run([stream[0], envelope("message_replace", id="m", answer="已替换"), stream[1]])
    assert [n for n, _ in replaced] == ["ready", "sources", "replace", "done"]
    assert replaced[2][1]["text"] == "已替换" and answer_text(replaced) == ""


@pytest.mark.parametrize(
    "deltas",
    [["先看[C:3]。上报[C:1][C:3]。"], ["先看[C:3]。上报[C:1]", "[C:3]。"], ["先看[C:3]。上报[C:1]", "[C:", "3]", "。"]],
)
def test_adjacent_markers_are_one_citation_with_its_numbers_ascending(deltas):
    """`[C:1][C:3]` (how the prompt asks for several sources) is one `cite`, as `[C:1,3]` is, however it is split;
    a marker after text is a citation of its own."""
    events = run(dify_stream(deltas, CHUNKS))
    cites = [d for name, d in events if name == "cite"]
    assert cites == [{"numbers": [1], "ids": ["3"], "new": [1]}, {"numbers": [1, 2], "ids": ["3", "1"], "new": [2]}]
    assert merged(events)[2:5] == [("text", {"text": "先看"}), ("cite", cites[0]), ("text", {"text": "。上报"})]
    assert [name for name, _ in events[-3:]] == ["cite", "text", "done"]


def test_a_citation_at_the_very_end_still_comes_before_done():
    events = run(dify_stream(["上报[C:1]", "[C:2]"], CHUNKS))
    assert [name for name, _ in events][-2:] == ["cite", "done"]
    assert events[-2][1] == {"numbers": [1, 2], "ids": ["1", "2"], "new": [1, 2]}


def test_ping_unknown_events_and_anything_after_done_are_ignored():
    stream = dify_stream(["答[C:1]"], CHUNKS)
    stream[4:4] = [{"event": "ping"}, envelope("agent_log", data={"secret": "x"}), "not a dict"]
    stream += [envelope("message", id="m", answer="迟到的文字"), envelope("error", message="late")]
    events = run(stream)
    assert events[-1][0] == "done" and "迟到" not in json.dumps(events, ensure_ascii=False)


def test_done_carries_the_validator_support_flags_when_it_provides_them(monkeypatch):
    class Flagging(CitationStream):
        def result(self, support=True):
            result = super().result(support)
            for citation in result["citations"]:
                citation.update(support=0.25, weak=True)
            return {
                **result,
                "uncited_sentences": ["无引用的句子"],
                "citation_recall_proxy": 0.5,
                "citation_precision_proxy": 1.0,
                "internal_only": "never sent",
            }

    monkeypatch.setattr(chat_protocol, "CitationStream", Flagging)
    done = run(dify_stream(["答[C:2]"], CHUNKS))[-1][1]
    assert done["citations"][0]["support"] == 0.25 and done["citations"][0]["weak"] is True
    assert done["uncited_sentences"] == ["无引用的句子"] and done["citation_recall_proxy"] == 0.5
    assert "internal_only" not in done
    assert_protocol(protocol.OPEN_COMMENT, run(dify_stream(["答[C:2]"], CHUNKS)))


def with_validate_outputs(stream, outputs):
    """`stream` with its validate node's `node_finished` carrying `outputs` (as the validate node's are)."""
    for event in stream:
        if event.get("event") == "node_finished" and event["data"]["node_id"] == "validate":
            event["data"]["outputs"] = outputs
    return stream


def test_done_takes_the_support_flags_from_the_validate_node_without_checking_again(monkeypatch):
    from citations import stream as citation_stream

    answer = "第二段说的是这个[C:2]。第一段[C:1]。"
    outputs = validate_citations.main(answer, CHUNKS)
    outputs["citations"][0].update(support=0.123, weak=True, reasons=[{"kind": "negation"}], reason="negation")
    outputs["uncited_sentences"], outputs["citation_recall_proxy"] = ["来自节点"], 0.75
    calls = []
    monkeypatch.setattr(citation_stream, "check_support", lambda *a, **k: calls.append(1))
    done = run(with_validate_outputs(dify_stream([answer], CHUNKS), outputs))[-1][1]
    assert calls == []  # the validate node's results are used: the check does not run a second time
    first = done["citations"][0]
    assert (first["id"], first["support"], first["weak"], first["reason"]) == ("2", 0.123, True, "negation")
    assert done["uncited_sentences"] == ["来自节点"] and done["citation_recall_proxy"] == 0.75


def test_done_checks_support_itself_when_the_validate_node_does_not_cover_every_citation(monkeypatch):
    from citations import stream as citation_stream

    answer = "第二段[C:2]。第一段[C:1]。"
    outputs = validate_citations.main(answer, CHUNKS)
    outputs["citations"] = outputs["citations"][:1]  # as when the node's list was capped
    calls = []
    real = citation_stream.check_support
    monkeypatch.setattr(citation_stream, "check_support", lambda *a, **k: calls.append(1) or real(*a, **k))
    done = run(with_validate_outputs(dify_stream([answer], CHUNKS), outputs))[-1][1]
    assert calls == [1] and [c["id"] for c in done["citations"]] == ["2", "1"]
    assert all("support" in c for c in done["citations"])


def test_insufficient_evidence_status():
    done = run(dify_stream(["根据现有资料无法确定。"], CHUNKS))[-1][1]
    assert done["status"] == "insufficient_evidence" and done["citations"] == []


# --- failures ----------------------------------------------------------------------------------------------------


def test_translate_turns_every_failure_into_one_error_event_and_tells_the_log():
    told = []

    def upstream():
        yield dify_stream(["x"], CHUNKS)[0]
        raise ConnectionError("daemon said: secret detail")

    events = list(translate(upstream(), on_problem=lambda code, error: told.append((code, str(error)))))
    assert events[-1] == protocol.error_event("app_unavailable") and "secret" not in json.dumps(events)
    assert told == [("app_unavailable", "daemon said: secret detail")]

    class Broken(Translator):
        def feed(self, event):
            raise KeyError("bug")

    events = list(translate(dify_stream(["x"], CHUNKS), Broken()))
    assert [n for n, _ in events] == ["ready", "error"] and events[-1][1]["code"] == "internal_error"


def test_translate_stops_reading_and_closes_the_upstream_once_done():
    state = {"read": 0, "closed": False}

    def upstream():
        try:
            for event in dify_stream(["x"], CHUNKS) + [envelope("ping")] * 5:
                state["read"] += 1
                yield event
        finally:
            state["closed"] = True

    events = list(translate(upstream()))
    assert events[-1][0] == "done" and state["closed"] and state["read"] == len(dify_stream(["x"], CHUNKS))


def test_error_events_carry_a_code_and_a_message_for_users_only():
    for code in ("app_error", "app_unavailable", "incomplete", "internal_error"):
        name, data = protocol.error_event(code)
        assert name == "error" and data["code"] == code and data["message"] == protocol.MESSAGES[code]
    with pytest.raises(ProtocolError):
        protocol.sources_of("[1]")


# --- streaming equals batch ----------------------------------------------------------------------------------------

ALPHABET = st.sampled_from(list("ab 答。[]【】［］Cc:：1234,-`\n") + ["[C:1]", "[C:2,3]", "【C：2】", "[C:9]", "```"])


@settings(max_examples=150, deadline=None)
@given(st.lists(ALPHABET, max_size=40).map("".join), st.lists(st.integers(0, 60), max_size=8))
def test_the_protocol_stream_equals_the_batch_for_every_split(answer, cuts):
    cuts = sorted(c for c in cuts if c <= len(answer))
    deltas = [answer[a:b] for a, b in zip([0] + cuts, cuts + [len(answer)]) if answer[a:b]]
    streamed = run(dify_stream(deltas, CHUNKS))
    batch = run(dify_stream([answer] if answer else [], CHUNKS))
    assert merged(streamed) == merged(batch)
    expected = validate_citations.main(answer, CHUNKS)
    assert answer_text(streamed) == expected["answer_without_markers"]
    done = streamed[-1][1]
    assert [c["id"] for c in done["citations"]] == [c["id"] for c in expected["citations"]]
    assert done["invalid_ids"] == expected["invalid_ids"] and done["status"] == expected["status"]
    numbers = [n for name, d in streamed if name == "cite" for n in d["new"]]
    assert numbers == list(range(1, len(done["citations"]) + 1))


# --- the shipped chatflows ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def services():
    shared = sample_services()
    yield shared
    shared.close()


@pytest.mark.parametrize("dsl", [PLUGIN_DSL, CODE_DSL], ids=["plugin-dsl", "code-dsl"])
def test_on_the_shipped_chatflows_the_text_is_what_the_validator_node_made_of_the_llms_text(dsl, services):
    raw = list(
        run_chatflow(
            dsl.read_text(encoding="utf-8"),
            "巡更时发现异常怎么上报？",
            machine_inputs({"user_roles": '["物业经理"]'}),
            services,
        )
    )
    checker = "cite" if dsl == PLUGIN_DSL else "validate"  # cited_answer checks its own answer
    validate = next(
        e["data"]["outputs"] for e in raw if e["event"] == "node_finished" and e["data"]["node_id"] == checker
    )
    if dsl == CODE_DSL:
        appended = "".join(
            e["answer"]
            for e in raw
            if e["event"] == "message" and e.get("from_variable_selector", [""])[0] == "validate"
        )
        assert appended.startswith("- [C:")  # the Answer node does append the raw reference list
    else:  # asked for markers: the tool streams whole canonical markers and no list
        shown = "".join(e["answer"] for e in raw if e["event"] == "message")
        assert "<sup" not in shown and "[C:" in shown
    events = run(raw)
    assert answer_text(events) == validate["answer_without_markers"]
    done = events[-1][1]
    assert [c["id"] for c in done["citations"]] == [c["id"] for c in validate["citations"]]
    assert done["status"] == validate["status"] and done["invalid_ids"] == validate["invalid_ids"]


def test_an_llm_that_is_not_the_answers_does_not_end_it():
    rewriter = [node("node_started", "rewrite", "llm"), node("node_finished", "rewrite", "llm", {"text": "改写的问题"})]
    for selectors in (True, False):
        stream = dify_stream(["回答[C:1]。"], CHUNKS, selectors=selectors)
        stream[1:1] = rewriter
        assert answer_text(run(stream)).rstrip("\n") == "回答。", selectors


def test_an_empty_llm_answer_shows_nothing_of_the_appended_list():
    events = run(dify_stream([], CHUNKS, references="- [C:1] 标题"))
    assert answer_text(events) == "" and events[-1][1]["status"] == "uncited"


def test_a_weak_citation_reaches_the_front_end_with_its_reasons():
    chunks = [chunk(1, "会议室须提前一天预约，每次最多使用 2 小时。")]
    events = list(translate(dify_stream(["会议室每次最多使用 5 小时[C:1]。"], chunks)))
    done = next(data for name, data in events if name == "done")
    cited = done["citations"][0]
    assert cited["weak"] is True and cited["support"] < 0.25
    assert any(r["kind"] == "number" for r in cited["reasons"]), cited["reasons"]
    assert isinstance(cited["reason"], str) and "5" in cited["reason"]
    supported = list(translate(dify_stream(["会议室须提前一天预约[C:1]。"], chunks)))
    strong = next(data for name, data in supported if name == "done")["citations"][0]
    assert strong["weak"] is False and not strong.get("reasons")


# --- a chatflow whose answer cited_answer writes (asked for markers) ----------------------------------------------


def cited_stream(deltas, outputs):
    """The shipped plugin chatflow's stream as the endpoint asks for it: merge, then cited_answer's `answer` stream
    variable in `markers` style (whole canonical markers of known chunks), its empty `sources`, its node_finished."""
    stream = dify_stream([], CHUNKS, references="")
    start = next(i for i, e in enumerate(stream) if e.get("data", {}).get("node_id") == "llm")
    body = [node("node_started", "cite", "tool")]
    body += [
        {**stream[-1], "event": "message", "answer": d, "from_variable_selector": ["cite", "answer"]} for d in deltas
    ]
    body.append(node("node_finished", "cite", "tool", {"answer_without_markers": "x", **outputs}))
    end = [e for e in stream if e["event"] in ("workflow_finished", "message_end")]
    return stream[:start] + body + end


def cited_outputs(status, invalid_ids, weak):
    citation = {
        "index": 1,
        "id": "2",
        "count": 1,
        "support": 0.1 if weak else 0.9,
        "weak": weak,
        "reasons": [{"kind": "number"}] if weak else [],
        "reason": "a number differs" if weak else "",
    }
    return {
        "citations": [citation],
        "status": status,
        "invalid_ids": invalid_ids,
        "uncited_sentences": [],
        "citation_recall_proxy": 1.0,
        "citation_precision_proxy": 0.0 if weak else 1.0,
    }


def test_a_cited_answer_nodes_outputs_complete_done_without_reading_html():
    events = run(cited_stream(["答案", "[C:2]", "。"], cited_outputs("cited", ["901"], weak=True)))
    assert [n for n, _ in merged(events)] == ["ready", "sources", "text", "cite", "text", "done"]
    assert answer_text(events) == "答案。"
    done = events[-1][1]
    assert done["status"] == "cited" and done["invalid_ids"] == ["901"]  # dropped by the tool before it streamed
    assert [(c["number"], c["id"], c["weak"], c["reason"]) for c in done["citations"]] == [
        (1, "2", True, "a number differs")
    ]  # the tool's own support check


def test_a_cited_answer_that_failed_midway_says_so_in_done():
    events = run(
        cited_stream(
            ["答案[C:2]", "\n\n⚠️ 回答到此中断：模型在生成过程中出错。"], cited_outputs("model_error", [], weak=False)
        )
    )
    assert events[-1][0] == "done" and events[-1][1]["status"] == "model_error"
    assert "[C:" not in answer_text(events)
