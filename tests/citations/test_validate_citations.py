import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citations.markers import MAX_MARKER_LENGTH
from citations.neutralise import MARKER_OPENING, neutralise_markers
from citations.stream import CitationStream
from citations.validate import main
from tests.support.node_data import CHUNKS, MARKERISH


def shown(answer, chunks=CHUNKS):
    return main(answer, chunks)["answer"]


# --- the grammar -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "marker,expected",
    [
        ("[C:1]", "[1]"),
        ("[c:1]", "[1]"),
        ("【C:1】", "[1]"),
        ("［C:1］", "[1]"),
        ("[C：1]", "[1]"),
        ("[ C : 1 ]", "[1]"),
        ("[\u3000C：1\u3000]", "[1]"),
        ("[C:1,2]", "[1][2]"),
        ("[C:1，2]", "[1][2]"),
        ("[C:1、2]", "[1][2]"),
        ("[C:1;2]", "[1][2]"),
        ("[C:1；2]", "[1][2]"),
        ("[C:1, C:2]", "[1][2]"),
        ("[C:1,c：2]", "[1][2]"),
        ("[C:1-3]", "[1][2][3]"),
        ("[C:1–3]", "[1][2][3]"),
        ("[C: 1 - 3 ]", "[1][2][3]"),
        ("[C:1-20]", "".join(f"[{i}]" for i in range(1, 21))),
        ("[C:02]", "[1]"),
        ("[C:1,1]", "[1]"),
    ],
)
def test_markers_the_grammar_accepts(marker, expected):
    assert shown(f"a{marker}b") == f"a{expected}b"


@pytest.mark.parametrize(
    "text",
    [
        "[1]",
        "[C]",
        "[C:]",
        "[C:x]",
        "[C1]",
        "(C:1)",
        "C:1",
        "see [C:1",
        "[C:3-1]",
        "[C:1-21]",
        "[C:1】",
        "【C:1]",
        "[C:1,]",
        "[C:,1]",
        "[C:1 2]",
        "[D:1]",
        "[CC:1]",
        "[C::1]",
        "[C:1.5]",
        "[ref C:1]",
        "`[C:1]`",
        "a `x [C:1] y` b",
        "`open [C:1]",
        "```\n[C:1]\n```",
        "```python\nx = [C:1]\n```",
        "[C:" + ",".join(["1"] * 40) + "]",
    ],
)
def test_text_the_grammar_rejects_is_left_unchanged(text):
    result = main(text, CHUNKS)
    assert result["answer"] == text
    assert result["citations"] == [] and result["invalid_ids"] == []


def test_the_longest_marker_is_64_characters():
    fits = "[C:1" + " " * (MAX_MARKER_LENGTH - 5) + "]"
    assert len(fits) == MAX_MARKER_LENGTH and shown(fits) == "[1]"
    too_long = "[C:1" + " " * (MAX_MARKER_LENGTH - 4) + "]"
    assert len(too_long) == MAX_MARKER_LENGTH + 1 and shown(too_long) == too_long


def test_code_spans_are_decided_left_to_right():
    assert shown("`code` [C:1]") == "`code` [1]"
    assert shown("unclosed ` [C:1]\n[C:2]") == "unclosed ` [C:1]\n[1]"
    assert shown("```\n`\n```\n[C:1]") == "```\n`\n```\n[1]"
    assert shown("x ```[C:1]") == "x ```[C:1]"  # mid-line backticks are inline code, not a fence
    assert shown("``[C:1]``") == "``[1]``"


def test_adjacent_and_nested_brackets():
    assert shown("[C:1][C:2]") == "[1][2]"
    assert shown("[[C:1]]") == "[[1]]"
    assert shown("[C:1 [C:2]") == "[C:1 [1]"


# --- numbering -------------------------------------------------------------------------------------------


def test_renumbering_by_first_appearance_and_counts():
    result = main("a[C:7] b[C:3] c[C:7] d[C:12,3]", CHUNKS)
    assert result["answer"] == "a[1] b[2] c[1] d[2][3]"
    assert [(c["index"], c["id"], c["count"]) for c in result["citations"]] == [(1, "7", 2), (2, "3", 2), (3, "12", 1)]
    assert result["id_map"] == {"7": 1, "3": 2, "12": 3}
    assert result["citations"][0] == {
        "index": 1,
        "id": "7",
        "count": 2,
        "document_title": "Doc 7",
        "source_type": "rag",
        "url": "https://e.com/7",
        "display_subtitle": "sub 7",
        "site_name": "",
        "published_date": "",
        "support": None,
        "weak": False,
        "reasons": [],
        "reason": "",
    }


def test_invalid_ids_get_no_number_and_disappear():
    result = main("a[C:99] b[C:2] c[C:98,2,99] d[C:0]", CHUNKS)
    assert result["answer"] == "a b[1] c[1] d"
    assert result["invalid_ids"] == ["99", "98", "0"]
    assert result["id_map"] == {"2": 1}


@pytest.mark.parametrize(
    "answer,phrases,status",
    [
        ("巡更需打卡[C:1]。", "根据现有资料无法确定", "cited"),
        ("巡更需打卡。", "根据现有资料无法确定", "uncited"),
        ("根据现有资料无法确定。", "根据现有资料无法确定", "insufficient_evidence"),
        ("部分[C:1]，其余资料不足。", "无法确定|资料不足", "insufficient_evidence"),
        ("I cannot tell.", "no idea\nI cannot tell", "insufficient_evidence"),
        ("only invalid [C:99]", "根据现有资料无法确定", "uncited"),
    ],
)
def test_status(answer, phrases, status):
    result = main(answer, CHUNKS, phrases)
    assert result["status"] == status
    if status == "insufficient_evidence" and "[C:1]" in answer:
        assert result["citations"]  # still reported


def test_chunk_metadata_as_json_text_and_unknown_list():
    assert main("x[C:2]", json.dumps(CHUNKS))["id_map"] == {"2": 1}
    unknown = main("x[C:42] y[C:5]", None)
    assert unknown["answer"] == "x[1] y[2]" and unknown["invalid_ids"] == []
    assert unknown["citations"][0] == {
        "index": 1,
        "id": "42",
        "count": 1,
        "document_title": "",
        "source_type": "",
        "url": "",
        "display_subtitle": "",
        "site_name": "",
        "published_date": "",
        "support": None,
        "weak": False,
        "reasons": [],
        "reason": "",
    }
    assert main("x[C:1]", [])["invalid_ids"] == ["1"]


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"answer": 5}, "answer"),
        ({"answer": "x", "chunk_metadata": "{bad"}, "chunk_metadata"),
        ({"answer": "x", "chunk_metadata": {"a": 1}}, "chunk_metadata"),
        ({"answer": "x", "chunk_metadata": [{"id": "one"}]}, r"chunk_metadata\[0\]"),
        ({"answer": "x", "chunk_metadata": ["s"]}, r"chunk_metadata\[0\]"),
        ({"answer": "x", "insufficient_phrases": 3}, "insufficient_phrases"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        main(**kwargs)


# --- references ------------------------------------------------------------------------------------------


def chunk(i, **fields):
    return {
        "id": str(i),
        "document_title": f"Doc {i}",
        "source_type": "web",
        "url": "",
        "display_subtitle": "",
        **fields,
    }


def test_references_list_only_cited_sources_in_display_order():
    chunks = [
        chunk(1, url="https://a.com/x"),
        chunk(2, url="https://b.com", display_subtitle="知乎 · 2025-08-12"),
        chunk(3),
    ]
    result = main("b[C:2] a[C:1] b[C:2]", chunks)
    assert result["references_markdown"] == (
        "1. [Doc 2](https://b.com) — 知乎 · 2025-08-12\n2. [Doc 1](https://a.com/x)"
    )
    assert result["references_by_marker_markdown"] == (
        "- [C:2] [Doc 2](https://b.com) — 知乎 · 2025-08-12\n- [C:1] [Doc 1](https://a.com/x)"
    )


def test_titles_and_subtitles_cannot_inject_markdown_or_html():
    evil = chunk(
        1,
        document_title="x](javascript:alert(1)) <img src=x onerror=alert(1)> *b*",
        display_subtitle="[y](http://evil) <script>",
        url="https://ok.com/a b)c",
    )
    line = main("[C:1]", [evil])["references_markdown"]
    assert "<" not in line and ">" not in line.replace("&gt;", "")
    assert line.count("](") == 1  # the one real link
    assert "(https://ok.com/a%20b%29c)" in line
    assert "[x\\]\\(javascript:alert\\(1\\)\\)" in line


@pytest.mark.parametrize(
    "url,link,text",
    [
        ("https://ok.com", True, None),
        ("http://ok.com", True, None),
        ("oss://kb/巡更.pdf", False, "oss://kb/巡更.pdf"),
        ("javascript:alert(1)", False, None),
        ("data:text/html,hi", False, None),
        ("", False, None),
    ],
)
def test_only_http_urls_become_links(url, link, text):
    line = main("[C:1]", [chunk(1, url=url)])["references_markdown"]
    assert ("](" in line) == link
    assert "javascript" not in line and "data:" not in line
    if text:
        assert line.endswith(" — " + text)


# --- streaming -------------------------------------------------------------------------------------------


def feed_all(answer, cuts, chunks=CHUNKS):
    stream = CitationStream(chunks)
    pieces, bounds = [], [0, *sorted(cuts), len(answer)]
    for a, b in zip(bounds, bounds[1:]):
        pieces.append(stream.feed(answer[a:b]))
        assert len(stream.pending) < MAX_MARKER_LENGTH
    pieces.append(stream.finish())
    return pieces, stream


def test_a_marker_split_across_deltas_is_never_shown_in_part():
    stream = CitationStream(CHUNKS)
    assert stream.feed("巡更需打卡[") == "巡更需打卡"
    assert stream.feed("C") == ""
    assert stream.feed("：1") == ""
    assert stream.feed("]。") == "[1]。"


def test_a_bracket_that_never_closes_is_released_as_text():
    stream = CitationStream(CHUNKS)
    assert stream.feed("a [") == "a"  # the space waits: a removed marker and punctuation may follow
    assert stream.feed("C:1 and more") == " [C:1 and more"
    stream = CitationStream(CHUNKS)
    assert stream.feed("tail [C:1") == "tail"
    assert stream.finish() == " [C:1"
    assert stream.result()["answer"] == "tail [C:1"


def test_new_citations_are_announced_by_the_feed_that_brings_them():
    stream = CitationStream(CHUNKS)
    stream.feed("a [C:4")
    assert stream.new_citations() == []
    stream.feed("] b [C:4] [C:9]")
    assert [(c["index"], c["id"], c["document_title"]) for c in stream.new_citations()] == [
        (1, "4", "Doc 4"),
        (2, "9", "Doc 9"),
    ]
    stream.feed(" c [C:4]")
    assert stream.new_citations() == []


def test_stream_result_equals_main():
    answer = "根据现有资料无法确定。但[C:3]与【C：1-2】，`[C:1]` [C:99]"
    pieces, stream = feed_all(answer, [3, 9, 10, 20])
    expected = main(answer, CHUNKS)
    assert "".join(pieces) == expected["answer"]
    assert stream.result() == expected


@settings(max_examples=400, deadline=None)
@given(
    st.lists(MARKERISH, max_size=60).map("".join),
    st.lists(st.integers(min_value=0, max_value=400), max_size=12),
    st.booleans(),
)
def test_streaming_equals_batch_for_any_answer_and_any_split(answer, cuts, known):
    chunks = CHUNKS[:5] if known else None
    cuts = [c for c in cuts if c <= len(answer)]
    pieces, stream = feed_all(answer, cuts, chunks)
    expected = main(answer, chunks)
    assert "".join(pieces) == expected["answer"]
    got = stream.result()
    for key in ("citations", "id_map", "invalid_ids", "status", "answer", "answer_without_markers"):
        assert got[key] == expected[key]


# --- the merge node's neutralisation agrees with this grammar ---------------------------------------------


@settings(max_examples=400, deadline=None)
@given(st.lists(MARKERISH | st.sampled_from(["\u3000", "\u00a0", "\t"]), max_size=40).map("".join))
def test_merge_neutralises_everything_the_validator_would_read_as_a_marker(text):
    neutral = neutralise_markers(text)
    result = main(neutral, None)
    assert result["citations"] == [] and result["answer"] == neutral
    if main(text, None)["citations"]:
        assert MARKER_OPENING.search(text)


def test_answer_without_markers_drops_every_marker_and_keeps_the_rest():
    result = main("a[C:1] b【C：2,99】 `[C:1]` [1] [C:7", CHUNKS)
    assert result["answer_without_markers"] == "a b `[C:1]` [1] [C:7"


# --- structured pieces: text and citations, for front ends that draw citations themselves ------------------


def stream_pieces(answer, cuts, chunks):
    stream = CitationStream(chunks)
    pieces, start = [], 0
    for cut in sorted(cuts) + [len(answer)]:
        pieces += stream.feed_pieces(answer[start:cut])
        start = cut
    return pieces + stream.finish_pieces(), stream


def test_pieces_carry_numbers_ids_and_what_is_new():
    pieces, _ = stream_pieces("A[C:4] b[C:9,4] c[C:99]", [2, 9], CHUNKS[:10])
    assert pieces == [
        {"type": "text", "text": "A"},
        {"type": "cite", "numbers": [1], "ids": ["4"], "new": [1]},
        {"type": "text", "text": " b"},
        {"type": "cite", "numbers": [1, 2], "ids": ["4", "9"], "new": [2]},
        {"type": "text", "text": " c"},
    ]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(MARKERISH, max_size=60).map("".join),
    st.lists(st.integers(min_value=0, max_value=400), max_size=12),
    st.booleans(),
)
def test_pieces_stream_equals_batch_for_any_answer_and_any_split(answer, cuts, known):
    chunks = CHUNKS[:5] if known else None
    cuts = [c for c in cuts if c <= len(answer)]
    streamed, stream = stream_pieces(answer, cuts, chunks)
    whole, _ = stream_pieces(answer, [], chunks)
    expected = main(answer, chunks)
    assert "".join(p["text"] for p in streamed if p["type"] == "text") == expected["answer_without_markers"]
    assert [p for p in streamed if p["type"] == "cite"] == [p for p in whole if p["type"] == "cite"]
    assert [n for p in streamed if p["type"] == "cite" for n in p["new"]] == [c["index"] for c in expected["citations"]]
    assert stream.result()["citations"] == expected["citations"]


# --- hostile inputs (issue 10) ----------------------------------------------------------------------------


def test_non_text_chunk_fields_are_shown_as_text_or_left_out():
    result = main("[C:1]", [{"id": "1", "url": 5}])
    assert result["citations"][0]["url"] == "" and result["references_markdown"] == "1. C:1"
    odd = {
        "id": "1",
        "document_title": 2024,
        "display_subtitle": 1.5,
        "site_name": {"a": 1},
        "source_type": True,
        "published_date": ["2024"],
        "url": ["https://a.b"],
    }
    citation = main("[C:1]", [odd])["citations"][0]
    assert (
        citation["document_title"],
        citation["display_subtitle"],
        citation["site_name"],
        citation["source_type"],
        citation["published_date"],
        citation["url"],
    ) == ("2024", "1.5", "", "", "", "")
    assert main("[C:1]", [{"id": "1", "document_title": float("nan")}])["citations"][0]["document_title"] == ""


@pytest.mark.parametrize(
    "answer,chunks,plain",
    [
        ("[C:3\u00a0[C:1,C:2]]", None, "[C:3\u00a0…]"),
        ("【C:3 [C:1] , 4】", None, "【C:3 … , 4】"),
        ("[C [C:1]:5]", None, "[C …:5]"),
        ("[C:3 [C:4 [C:1]]]", None, "[C:3 [C:4 …]]"),
        ("[C:1]```\n```\n[C:5]", None, "…```\n```\n[C:5]"),
        ("```\n```[C:1]`[C:5]", None, "```\n```…`[C:5]"),
        ("[C:1]`code` b", None, "…`code` b"),
    ],
)
def test_removing_markers_never_creates_one(answer, chunks, plain):
    result = main(answer, chunks)
    assert result["answer_without_markers"] == plain
    assert main(plain, None)["citations"] == []


def test_an_invalid_marker_removed_from_the_answer_never_leaves_a_marker():
    result = main("[C:3 [C:99]]", CHUNKS)
    assert result["answer"] == "[C:3 …]" and main(result["answer"], None)["citations"] == []


@pytest.mark.parametrize(
    "answer,plain",
    [
        ("It takes 15 days [C:1], then 3 days [C:2].", "It takes 15 days, then 3 days."),
        ("需要 15 天 [C:1]，然后 3 天【C：2】。", "需要 15 天，然后 3 天。"),
        ("see [C:1] more", "see more"),
        ("see [C:1][C:2] more", "see more"),
        ("see [C:1] [C:2] more", "see more"),
        ("see [C:1]more", "see more"),
        ("end [C:1]\nnext", "end\nnext"),
        ("end [C:1]", "end"),
        ("trailing space kept  ", "trailing space kept  "),
        ("a [b] c", "a [b] c"),
    ],
)
def test_no_stray_space_where_a_marker_was_removed(answer, plain):
    assert main(answer, None)["answer_without_markers"] == plain


def test_the_answer_keeps_the_space_before_a_shown_number_and_drops_it_for_a_removed_one():
    assert main("It takes 15 days [C:1], then 3 days [C:99].", CHUNKS)["answer"] == "It takes 15 days [1], then 3 days."


@pytest.mark.parametrize(
    "title,line",
    [
        ("# H", "1. \\# H"),
        ("- x", "1. \\- x"),
        ("---", "1. \\---"),
        ("+ y", "1. \\+ y"),
        ("1. x", "1. 1\\. x"),
        ("2) x", "1. 2\\) x"),
        ("=== ", "1. \\==="),
        ("Plain", "1. Plain"),
    ],
)
def test_titles_never_start_a_markdown_block(title, line):
    assert main("[C:1]", [chunk(1, document_title=title)])["references_markdown"] == line


def test_a_whole_float_id_is_that_integer_and_other_ids_are_errors_naming_the_input():
    assert main("x[C:1]", [{"id": 1.0}])["id_map"] == {"1": 1}
    assert main("x", [{"id": 1.0}])["invalid_ids"] == []
    for bad in (1.5, float("nan"), True, None, "1.0", "-1", [1]):
        with pytest.raises(ValueError, match=r"chunk_metadata\[0\]\.id"):
            main("x", [{"id": bad}])


@pytest.mark.parametrize(
    "text", ["[" * 100_000, '[{"id": "1", "x": ' + "[" * 50_000 + "]" * 50_000 + "}]", '{"a":' * 50_000]
)
def test_deeply_nested_json_is_an_error_naming_the_input(text):
    with pytest.raises(ValueError, match="chunk_metadata"):
        main("x", text)


MARKER_PARTS = st.sampled_from(
    [
        "[",
        "]",
        "【",
        "】",
        "［",
        "］",
        "C",
        ":",
        "：",
        ",",
        "-",
        " ",
        "\u00a0",
        "`",
        "```",
        "\n",
        "1",
        "2",
        "99",
        "x",
        ".",
        "，",
        "。",
        "[C:1]",
        "[C:99]",
        "[C:2,3]",
    ]
)


@settings(max_examples=600, deadline=None)
@given(
    st.lists(MARKER_PARTS, max_size=50).map("".join),
    st.lists(st.integers(min_value=0, max_value=300), max_size=10),
    st.booleans(),
)
def test_outputs_hold_no_marker_and_stream_equals_batch(answer, cuts, known):
    chunks = CHUNKS[:5] if known else None
    result = main(answer, chunks)
    assert main(result["answer_without_markers"], None)["citations"] == []
    assert main(result["answer"], None)["citations"] == []
    cuts = [c for c in cuts if c <= len(answer)]
    streamed, _ = stream_pieces(answer, cuts, chunks)
    assert "".join(p["text"] for p in streamed if p["type"] == "text") == result["answer_without_markers"]
    text, _ = feed_all(answer, cuts, chunks)
    assert "".join(text) == result["answer"]


def test_the_plugin_tool_shows_non_text_fields_as_text_or_leaves_them_out():
    from tests.support import sdk

    variables = sdk.invoke(
        sdk.registration(),
        "validate_citations",
        {"answer": "[C:1]", "chunk_metadata": [{"id": "1", "url": 5, "document_title": 7}]},
    )
    assert variables["citations"][0]["url"] == "" and variables["references_markdown"] == "1. 7"


# --- every list is capped for Dify's Code-node limits (issue 9) ------------------------------------------


def test_forty_unknown_ids_are_capped_with_a_count_of_the_rest():
    result = main("a[C:4-23][C:24-43]", CHUNKS[:3])
    assert len(result["invalid_ids"]) == 30
    assert result["invalid_ids"][:29] == [str(i) for i in range(4, 33)]
    assert result["invalid_ids"][29] == "…and 11 more"
    assert len(main("a[C:4-23][C:24-33]", CHUNKS[:3])["invalid_ids"]) == 30  # exactly 30: nothing to count
    assert main("a[C:4-23][C:24-33]", CHUNKS[:3])["invalid_ids"][-1] == "33"


def test_more_than_thirty_citations_end_with_a_summary_entry():
    chunks = [{"id": str(i), "document_title": f"D{i}"} for i in range(1, 41)]
    answer = "".join(f"s{i}[C:{i}]" for i in range(1, 41)) + "[C:40]"
    result = main(answer, chunks)
    assert len(result["citations"]) == 30
    assert [c["id"] for c in result["citations"][:29]] == [str(i) for i in range(1, 30)]
    summary = result["citations"][29]
    assert (summary["index"], summary["id"], summary["count"]) == (0, "", 12)
    assert "11 more" in summary["document_title"] and set(summary) == set(result["citations"][0])
    assert len(result["id_map"]) == 40 and result["references_markdown"].count("\n") == 39
    assert main(answer, chunks, max_list_items=None)["citations"][29]["id"] == "30"


def test_the_stream_and_the_plugin_tool_keep_longer_lists():
    stream = CitationStream(CHUNKS[:3])
    stream.feed("a[C:4-23][C:24-43]")
    assert len(stream.result()["invalid_ids"]) == 40
    from tests.support import sdk

    variables = sdk.invoke(
        sdk.registration(), "validate_citations", {"answer": "a[C:4-23][C:24-43]", "chunk_metadata": CHUNKS[:3]}
    )
    assert len(variables["invalid_ids"]) == 40


@pytest.mark.parametrize("bad", [0, 1, "30", 2.5, True])
def test_max_list_items_must_be_a_whole_number(bad):
    with pytest.raises(ValueError, match="max_list_items"):
        main("x", None, max_list_items=bad)


# --- the refusal phrases (issue 14) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "根据现有资料无法确定。",
        "根据现有资料无法确定",
        "抱歉，根据现有资料无法确定！",
        "The available sources do not answer this question.",
        "the available sources do not answer this question",
        "THE AVAILABLE SOURCES DO NOT ANSWER THIS QUESTION!",
        "Sorry. The available  sources do\nnot answer this question…",
    ],
)
def test_the_default_phrases_recognise_both_refusals(answer):
    assert main(answer, CHUNKS)["status"] == "insufficient_evidence"
    stream = CitationStream(CHUNKS)
    for part in answer:
        stream.feed(part)
    assert stream.result()["status"] == "insufficient_evidence"


@pytest.mark.parametrize(
    "answer",
    [
        "The available sources answer this question [C:1].",
        "根据现有资料可以确定[C:1]。",
        "The sources do not answer this question.",
    ],
)
def test_answers_that_are_not_refusals(answer):
    assert main(answer, CHUNKS)["status"] != "insufficient_evidence"


def test_a_phrase_given_with_trailing_punctuation_still_matches():
    assert main("No data here", CHUNKS, "no data here.")["status"] == "insufficient_evidence"
    assert main("无可奉告", CHUNKS, "无可奉告。|x")["status"] == "insufficient_evidence"


def test_a_url_holding_a_lone_surrogate_is_still_a_safe_link():
    result = main("x [C:1]", [{"id": "1", "document_title": "T", "url": "https://a.example/p\udcff"}])
    assert result["references_markdown"].endswith("[T](https://a.example/p%EF%BF%BD)")
