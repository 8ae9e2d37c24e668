"""`citations.answer` and `citations.prompt`: what `cited_answer` streams and sends the model, with time given."""

import ast
import html
import re
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citations import answer as steps
from citations.prompt import PROMPT_TEXT, has_citation_rules, language_of, prompt_messages, system_prompt
from tests.support import ROOT
from tests.support.py310 import python310

CHUNKS = [
    {
        "id": 1,
        "document_title": "Meeting room rules",
        "source_type": "rag",
        "dataset_name": "Building KB",
        "display_subtitle": "Building KB",
        "url": "https://kb.example.com/rooms.pdf",
        "content": "Rooms are booked in the app.",
    },
    {
        "id": 2,
        "document_title": 'Parking "fees" <b>&</b> rules',
        "source_type": "web",
        "site_name": "City site",
        "display_subtitle": "City site · 2025-03-01",
        "url": "https://city.example.com/parking",
        "published_date": "2025-03-01",
        "content": "Parking costs 5 per hour.",
    },
    {
        "id": 3,
        "document_title": "访客管理制度",
        "source_type": "rag",
        "dataset_name": "楼宇运营知识库",
        "display_subtitle": "楼宇运营知识库",
        "url": "",
        "content": "访客须在前台出示证件登记。",
    },
]
# markers out of order, repeated, grouped, with unknown ids, full-width, in code, and one left unfinished
TRICKY = (
    "Book rooms in the app [C:3][C:1]. Parking is paid【C：2】, see also [C:1] and [C:99]. "
    "A group [C:1,C:2][C:2]. Code `[C:1]` stays. Unknown [C:42] only. End [C:2"
)
SUP = re.compile(r'<sup(?: title="([^"]*)")?>\[(\d+)\]\(#gcite-(\d+)\)</sup>')


def stream(text, size=4, style="html", step=0.01, window=steps.BATCH_WINDOW, chunks=CHUNKS, question="How?"):
    """(events, state) for `text` fed `size` characters at a time, one delta every `step` seconds."""
    state = steps.new_answer(chunks, style, question=question, window=window)
    events, now = [], 0.0
    for start in range(0, len(text), size):
        events += steps.feed_delta(state, text[start : start + size], now)
        now += step
    events += steps.finish_answer(state, now)
    return events, state


def half_tag(event):
    """An opening `<sup` without its `</sup>` in the same event (or the other way round)."""
    return event.count("<sup") != event.count("</sup>") or re.search(r"<s?u?p?$|<su$|</?s?u?p?$", event) is not None


# --- citations while streaming --------------------------------------------------------------------------------------


def test_citations_are_numbered_by_first_appearance_each_sup_with_its_title_and_anchor():
    events, state = stream(TRICKY)
    shown = "".join(events)
    numbers = [int(n) for _, n, _ in SUP.findall(shown)]
    assert numbers == [1, 2, 3, 2, 2, 3]  # [C:3] first → 1, [C:1] → 2, [C:2] → 3; repeats keep their number
    assert all(n == anchor for _, n, anchor in SUP.findall(shown))
    titles = {int(n): html.unescape(t) for t, n, _ in SUP.findall(shown)}
    assert titles == {
        1: "访客管理制度 · 楼宇运营知识库",
        2: "Meeting room rules · Building KB",
        3: 'Parking "fees" <b>&</b> rules · City site',
    }
    assert "`[C:1]`" in shown  # code is not a marker
    assert "[C:" not in shown.replace("`[C:1]`", "") and "C：" not in shown
    assert shown.endswith(". End")  # the unfinished marker at the end is dropped
    outputs = steps.final_outputs(state)
    assert outputs["invalid_ids"] == ["99", "42"]
    assert [c["id"] for c in outputs["citations"]] == ["3", "1", "2"]
    assert outputs["status"] == "cited"


def test_a_group_of_citations_is_kept_apart_by_a_comma_and_a_repeat_in_it_shown_once():
    events, _ = stream("Alpha [C:1][C:2]. Beta [C:2][C:2]. Gamma [C:1] and [C:2].", size=3)
    shown = "".join(events)
    assert re.search(r'\[1\]\(#gcite-1\)</sup><sup>,</sup><sup title="[^"]*">\[2\]\(#gcite-2\)</sup>\.', shown)
    b = shown.split("Beta", 1)[1].split("Gamma", 1)[0]
    assert len(SUP.findall(b)) == 1  # [C:2][C:2]: one superscript
    c = shown.split("Gamma", 1)[1]
    assert "<sup>,</sup>" not in c and len(SUP.findall(c)) == 2  # text between: two groups


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=80))
def test_any_split_shows_the_same_answer_and_no_event_holds_a_marker_or_half_a_tag(sizes):
    text = "<think>ok</think> head [C:1] " + TRICKY.replace(" Code `[C:1]` stays.", "")  # code: the test above
    deltas, at = [], 0
    for size in sizes * (len(text) // sum(sizes) + 1):
        if at >= len(text):
            break
        deltas.append(text[at : at + size])
        at += size
    state = steps.new_answer(CHUNKS, "html", question="q", window=0.05)
    events, now = [], 0.0
    for delta in deltas:
        events += steps.feed_delta(state, delta, now)
        now += 0.013
    events += steps.finish_answer(state, now)
    whole, _ = stream(text, size=len(text))
    assert "".join(events) == "".join(whole)
    for event in events:
        assert not half_tag(event), event
        assert not re.search(r"[\[【［]\s*[Cc]\s*[:：]", event), event


@pytest.mark.parametrize("style", steps.STYLES)
def test_plain_style_shows_bracketed_numbers_and_a_plain_list(style):
    events, state = stream("Book [C:1]. Park [C:2][C:1].", style=style)
    shown = "".join(events)
    sources = steps.final_outputs(state)["sources"]
    if style == "markers":  # for machines: canonical markers of known chunks, no list (the reader has `citations`)
        assert shown == "Book[C:1]. Park[C:2][C:1]." and sources == ""
    elif style == "plain":
        assert shown == "Book[1]. Park[2][1]." and "<" not in shown
        assert sources == (
            "\n\nSources:\n[1] Meeting room rules — Building KB — https://kb.example.com/rooms.pdf\n"
            '[2] Parking "fees" <b>&</b> rules — City site · 2025-03-01 — https://city.example.com/parking'
        )
    else:
        assert "<sup" in shown
        assert sources.startswith(
            '\n\n**Sources**\n\n1. <span id="gcite-1"></span>[Meeting room rules]'
            '(https://kb.example.com/rooms.pdf) — Building KB\n2. <span id="gcite-2"></span>'
        )
        assert "&lt;b&gt;" in sources and "<b>" not in sources  # a source's markup is text


def test_sources_hold_exactly_the_cited_chunks_in_display_order_and_none_for_the_refusal():
    _, state = stream("访客须登记[C:3]。也可以预约会议室[C:1]。")
    sources = steps.final_outputs(state)["sources"]
    assert sources.startswith('\n\n**来源**\n\n1. <span id="gcite-1"></span>访客管理制度')
    assert re.findall(r'id="gcite-(\d+)"', sources) == ["1", "2"] and "Parking" not in sources
    for refusal in ("根据现有资料无法确定。", "The available sources do not answer this question [C:1]."):
        _, state = stream(refusal)
        outputs = steps.final_outputs(state)
        assert outputs["status"] == "insufficient_evidence" and outputs["sources"] == ""
    _, state = stream("Nothing cited here.")
    assert steps.final_outputs(state)["sources"] == "" and steps.final_outputs(state)["status"] == "uncited"


# --- think ----------------------------------------------------------------------------------------------------------


def test_think_passes_through_untouched_and_stays_out_of_the_citations_and_memory():
    text = "<think>Maybe [C:2] or [C:1]?</think>Rooms are booked in the app [C:1]."
    for size in (1, 2, 3, 7, len(text)):
        events, state = stream(text, size=size)
        shown = "".join(events)
        assert shown.startswith("<think>Maybe [C:2] or [C:1]?</think>Rooms are booked in the app<sup")
        outputs = steps.final_outputs(state)
        assert outputs["answer_without_markers"] == "Rooms are booked in the app."
        assert [c["id"] for c in outputs["citations"]] == ["1"]  # the thought's [C:2] is no citation


def test_an_unclosed_think_is_closed_and_a_lone_angle_bracket_is_text():
    events, _ = stream("<think>still thinking", size=3)
    assert "".join(events) == "<think>still thinking\n</think>"
    events, _ = stream("a <b and c <thin k", size=2)
    assert "".join(events) == "a <b and c <thin k"


# --- batching -------------------------------------------------------------------------------------------------------


def test_batches_send_the_first_piece_at_once_then_at_most_one_event_per_window():
    text = "word " * 700  # 3,500 characters, 875 deltas of 4, one every 10 ms
    events, state = stream(text, step=0.01, window=0.08)
    assert "".join(events) == text.rstrip() or "".join(events) == text
    assert state["longest_wait"] <= 0.08 + 1e-9
    assert len(events) <= 875 / 5
    assert events[0] == "word"  # the first piece went out without waiting


def test_next_due_says_when_held_text_must_go_and_due_events_sends_it():
    state = steps.new_answer(CHUNKS, window=0.1)
    assert steps.next_due(state, 0.0) is None
    assert steps.feed_delta(state, "Hello", 1.0) == ["Hello"]
    assert steps.feed_delta(state, " there", 1.02) == []  # within the window: held
    assert steps.next_due(state, 1.03) == pytest.approx(0.07)
    assert steps.due_events(state, 1.05) == []
    assert steps.due_events(state, 1.1) == [" there"]
    assert steps.next_due(state, 1.1) is None and state["longest_wait"] == pytest.approx(0.08)
    assert steps.feed_delta(state, " [C:", 1.3) == []  # an unfinished marker is not a piece: nothing to send
    assert steps.next_due(state, 1.3) is None


# --- failures -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,reason,notice",
    [
        ("Rooms are booked in the app [C:1]. Parking [C:2", "error", steps.NOTICES["en"]["error"]),
        ("会议室在小程序中预约[C:1]。停车[C:", "timeout", steps.NOTICES["zh"]["timeout"]),
    ],
)
def test_a_failure_after_text_keeps_what_was_shown_drops_the_half_marker_and_ends_with_one_notice(text, reason, notice):
    state = steps.new_answer(CHUNKS, question="q")
    events = []
    for start in range(0, len(text), 3):
        events += steps.feed_delta(state, text[start : start + 3], start / 100)
    events += steps.fail_answer(state, reason, 1.0)
    shown = "".join(events)
    assert shown.endswith("\n\n" + notice) and shown.count("⚠️") == 1
    assert "[C:" not in shown and not any(half_tag(e) for e in events)
    outputs = steps.final_outputs(state)
    assert outputs["status"] == "model_error"
    assert [c["id"] for c in outputs["citations"]] == ["1"]
    assert 'id="gcite-1"' in outputs["sources"]  # the sources cited so far are listed
    assert notice not in outputs["answer_without_markers"]


def test_failure_reason_and_message():
    assert steps.failure_reason("read llm model failed: context deadline exceeded", 30) == "timeout"
    assert steps.failure_reason("read llm model failed: EOF", steps.MODEL_TIME_LIMIT - 1) == "timeout"
    assert steps.failure_reason("invoke llm model failed: 401 invalid key", 3) == "error"
    message = steps.failure_message("boom\n" * 200)
    assert message.startswith("cited_answer: the model failed before writing any text: boom boom")
    assert len(message) < 400 and "\n" not in message


# --- parameters -----------------------------------------------------------------------------------------------------

MODEL = {
    "provider": "langgenius/openai/openai",
    "model": "gpt-4o-mini",
    "model_type": "llm",
    "mode": "chat",
    "completion_params": {"temperature": 0.2},
}


def test_tool_request_reads_dify_parameters():
    request = steps.tool_request(
        {
            "model": MODEL,
            "query": "q",
            "context": "[C:1]\nx",
            "chunk_metadata": [""],
            "history": None,
            "style": None,
            "insufficient_phrases": "",
        }
    )
    assert request["model"] == MODEL and request["chunk_metadata"] is None and request["style"] == "html"
    assert request["insufficient_phrases"] == steps.INSUFFICIENT_DEFAULT and request["history"] == ""
    wrapped = steps.tool_request(
        {"model": {"type": "constant", "value": MODEL}, "query": "q"}
    )  # a node without a version
    assert wrapped["model"] == MODEL


@pytest.mark.parametrize(
    "parameters,field",
    [
        ({}, "model:"),
        ({"model": {"provider": "x"}}, "model:"),
        ({"model": {**MODEL, "model_type": "text-embedding"}}, "model:"),
        ({"model": {**MODEL, "completion_params": "hot"}}, "model.completion_params"),
        ({"model": MODEL, "style": "fancy"}, "style:"),
        ({"model": MODEL, "context": 5}, "context:"),
        ({"model": MODEL, "instructions": ["x"]}, "instructions:"),
        ({"model": MODEL, "history": {"a": 1}}, "history:"),
    ],
)
def test_a_bad_parameter_is_named(parameters, field):
    with pytest.raises(ValueError, match=re.escape(field)):
        steps.tool_request(parameters)


@pytest.mark.parametrize("chunks,field", [([{"id": "one"}], "chunk_metadata[0].id"), ("{bad", "chunk_metadata")])
def test_a_bad_chunk_list_is_named(chunks, field):
    with pytest.raises(ValueError, match=re.escape(field)):
        steps.new_answer(chunks)


def test_usage_keeps_only_token_counts():
    assert steps.usage_of(
        {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150, "total_price": "0.1"}
    ) == {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    assert steps.usage_of({"prompt_tokens": 5, "completion_tokens": True}) == {
        "prompt_tokens": 5,
        "completion_tokens": 0,
        "total_tokens": 5,
    }
    assert steps.usage_of(None) == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


# --- the prompt -----------------------------------------------------------------------------------------------------


def test_rules_are_added_in_the_instructions_language_once():
    zh = system_prompt("[C:1]\n内容", instructions="你是物业助理，回答简洁。")
    en = system_prompt("[C:1]\ncontent", instructions="You are the building's assistant.")
    assert PROMPT_TEXT["zh"]["rules"].split("\n")[0] in zh and "根据现有资料无法确定" in zh
    assert PROMPT_TEXT["en"]["rules"].split("\n")[0] in en and "The available sources do not answer" in en
    assert zh.index("你是物业助理") < zh.index("# 引用规则") < zh.index("# 检索片段\n[C:1]")
    own = "You are an assistant. Cite as [C:N] after each claim."
    assert has_citation_rules(own) and system_prompt("[C:1]\nx", instructions=own).count("[C:N]") == 1
    again = system_prompt("[C:1]\nx", instructions=en)  # our own prompt fed back: the rules are not added twice
    assert again.count("# Citation rules") == 1
    assert language_of("") is None and language_of("请用 Wi-Fi 预约") == "zh"


def test_no_instructions_take_the_questions_language_and_the_builders_refusal():
    prompt = system_prompt("", query="停车怎么收费？", insufficient_phrases="Sorry, no idea|资料里没有答案")
    assert "# 引用规则" in prompt and '直接说"资料里没有答案"' in prompt
    assert prompt.endswith(PROMPT_TEXT["zh"]["no_chunks"])


def test_history_is_shown_as_context_with_old_markers_made_harmless():
    messages = prompt_messages("And parking?", "[C:1]\nx", history="User: rooms?\nAssistant: in the app [C:1].")
    system = messages[0]["content"]
    assert "Assistant: in the app (C:1)." in system and messages[1] == {"role": "user", "content": "And parking?"}
    with pytest.raises(ValueError, match="query:"):
        prompt_messages("  ", "ctx")


# --- the package's rules --------------------------------------------------------------------------------------------

NEW_MODULES = ("citations/answer.py", "citations/prompt.py")


def test_the_new_modules_follow_the_package_rules():
    from gcite.authoring.bundle import closure

    modules = closure("citations.answer")  # raises on an import the bundler cannot take
    assert {"citations.answer", "citations.prompt", "citations.stream"} <= {m.name for m in modules}
    defined = {}
    for path in sorted((ROOT / "citations").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            names = (
                [node.name]
                if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                else [
                    t.id
                    for n in ([node] if isinstance(node, ast.Assign) else [])
                    for t in n.targets
                    if isinstance(t, ast.Name)
                ]
            )
            for name in names:
                defined.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    for module in NEW_MODULES:
        clashes = {name: files for name, files in defined.items() if module in files and len(files) > 1}
        assert not clashes, clashes


def test_the_new_modules_compile_under_python_310():
    for module in NEW_MODULES:
        done = subprocess.run(
            [python310(), "-I", "-c", "import sys; compile(sys.stdin.read(), 'm', 'exec')"],
            input=(ROOT / module).read_text(encoding="utf-8"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, f"{module}: {done.stderr}"
