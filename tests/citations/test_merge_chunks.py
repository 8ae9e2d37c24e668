import json
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citations import validate as validate_citations
from citations.merge import main
from citations.neutralise import FOLD_INVISIBLE, FOLD_LOOKALIKES, MARKER_OPENING, neutralise_markers
from tests.support.node_data import FORGED
from tests.support.web_shapes import WEB_SHAPES


def rag_item(content="正文", score=0.5, segment_id="s1", dataset="测试知识库", **doc_meta):
    return {
        "content": content,
        "title": "item-title.md",
        "metadata": {
            "score": score,
            "dataset_name": dataset,
            "dataset_id": "ds1",
            "document_id": "d1",
            "segment_id": segment_id,
            "segment_position": 3,
            "document_name": "meta-name.md",
            "doc_metadata": doc_meta,
        },
    }


def web_item(url="https://example.com/a", content="网页内容", score=0.5, **extra):
    return {"title": "标题", "url": url, "content": content, "score": score, **extra}


def only(result):
    assert result["chunk_count"] == 1, result
    return result["chunk_metadata"][0]


# --- input forms -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("empty", [None, "", "   ", [], "[]", "null", {}])
def test_empty_inputs_give_an_empty_result(empty):
    if empty == {}:
        with pytest.raises(ValueError, match="rag_chunks"):
            main(empty, None)
        return
    result = main(empty, empty)
    assert result["chunk_count"] == 0
    assert result["formatted_chunks"] == ""
    assert result["chunk_metadata"] == []


def test_json_string_and_python_repr_and_envelope_parse_alike():
    items = [rag_item(content="带 None 与 True 的条目", extra=None, flag=True)]
    direct = main(items, None)
    assert main(json.dumps(items, ensure_ascii=False), None) == direct
    assert main(str(items), None) == direct  # what Dify makes of array[object] given to a string parameter
    assert main({"result": items}, None) == direct
    assert main(None, json.dumps([web_item()]))["chunk_count"] == 1
    assert main(None, str([web_item()]))["chunk_count"] == 1


@pytest.mark.parametrize(
    "field,kwargs",
    [
        ("rag_chunks", {"rag_chunks": "{not json"}),
        ("web_chunks", {"web_chunks": "<html>oops"}),
        ("rag_chunks", {"rag_chunks": 42}),
        ("web_chunks", {"web_chunks": "42"}),
        ("web_chunks", {"web_chunks": {"unexpected": 1}}),
        ("rag_chunks", {"rag_chunks": {"foo": []}}),
        ("max_web_results", {"max_web_results": -1}),
        ("max_web_results", {"max_web_results": "many"}),
        ("max_chunks", {"max_chunks": 0}),
        ("max_chunks", {"max_chunks": True}),
    ],
)
def test_bad_input_is_an_error_naming_the_field(field, kwargs):
    with pytest.raises(ValueError, match=field):
        main(**kwargs)


def test_numbers_given_as_text_or_float_are_accepted():
    web = [web_item(url=f"https://e.com/{i}") for i in range(4)]
    assert main(None, web, max_web_results="2")["chunk_count"] == 2
    assert main(None, web, max_web_results=3.0)["chunk_count"] == 3


def test_items_that_are_not_objects_or_have_no_text_are_skipped_and_reported():
    rag = ["text", 3, None, rag_item(content="   "), rag_item(content="ok", segment_id="s9")]
    web = [["nested"], web_item(content=""), {"title": "t", "url": "https://e.com/x", "content": "<b></b>"}]
    result = main(rag, web)
    assert [c["content"] for c in result["chunk_metadata"]] == ["ok"]
    reasons = {(s["source"], s["index"]): s["reason"] for s in result["skipped"]}
    assert reasons[("rag", 0)].startswith("not an object")
    assert reasons[("rag", 3)] == "no text"
    assert reasons[("web", 0)].startswith("not an object")
    assert reasons[("web", 1)] == "no text"
    assert reasons[("web", 2)] == "no text"
    assert len(result["skipped"]) == 7


# --- RAG mapping -----------------------------------------------------------------------------------------


def test_rag_item_maps_every_field():
    item = rag_item(
        content="  巡更  ",
        score="0.73",
        document_title="巡更指南",
        document_name="巡更.md",
        source_file_url="oss://kb/巡更.pdf",
    )
    hidden = only(
        main([item], None)
    )  # by default a storage address is not passed on (tests/citations/test_merge_storage_urls.py)
    assert (hidden["url"], hidden["source_file_url"]) == ("", "")
    chunk = only(main([item], None, show_storage_urls=True))
    assert chunk == {
        "id": "1",
        "source_type": "rag",
        "content": "巡更",
        "document_title": "巡更指南",
        "url": "oss://kb/巡更.pdf",
        "score": 0.73,
        "display_subtitle": "测试知识库",
        "document_name": "巡更.md",
        "dataset_name": "测试知识库",
        "site_name": "",
        "site_host": "",
        "source_file_url": "oss://kb/巡更.pdf",
        "segment_position": 3,
        "published_date": "",
        "dataset_id": "ds1",
        "document_id": "d1",
        "segment_id": "s1",
        "provider": "",
    }


@pytest.mark.parametrize(
    "doc_meta,metadata_name,title,expected",
    [
        ({"document_title": "T", "document_name": "N"}, "M", "I", "T"),
        ({"document_title": " ", "document_name": "N"}, "M", "I", "N"),
        ({}, "M", "I", "M"),
        ({}, "", "I", "I"),
        ({}, "", "", ""),
    ],
)
def test_rag_title_fallback_chain(doc_meta, metadata_name, title, expected):
    item = {"content": "x", "title": title, "metadata": {"document_name": metadata_name, "doc_metadata": doc_meta}}
    assert only(main([item], None))["document_title"] == expected


@pytest.mark.parametrize("raw,expected", [(None, 0.0), ("bad", 0.0), ("0.25", 0.25), (float("nan"), 0.0), (True, 0.0)])
def test_rag_score_is_a_float_and_missing_or_bad_is_zero(raw, expected):
    item = rag_item()
    item["metadata"]["score"] = raw
    assert only(main([item], None))["score"] == expected


def test_rag_item_without_metadata_still_counts():
    chunk = only(main([{"content": "only text", "metadata": None}], None))
    assert (chunk["document_title"], chunk["url"], chunk["score"], chunk["segment_position"]) == ("", "", 0.0, 0)


# --- web mapping -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(WEB_SHAPES))
def test_each_provider_shape_is_recognised(name):
    response, expected = WEB_SHAPES[name]
    chunk = only(main(None, response))
    got = {k: chunk["document_title" if k == "title" else k] for k in expected}
    assert got == expected
    assert chunk["source_type"] == "web"


def test_field_priority():
    item = {
        "name": "N",
        "title": "T",
        "href": "https://h.com",
        "link": "https://l.com",
        "url": "https://u.com",
        "content": "",
        "summary": "  ",
        "snippet": "S",
        "body": "B",
        "siteName": "SN",
        "website": "W",
        "source": "SRC",
        "date": "2020-01-01",
        "datePublished": "2021-02-02",
        "rerank_score": 0.9,
        "authority_score": 0.8,
    }
    chunk = only(main(None, [item]))
    assert (chunk["document_title"], chunk["url"], chunk["content"]) == ("T", "https://u.com", "S")
    assert (chunk["site_name"], chunk["published_date"], chunk["score"]) == ("SN", "2021-02-02", 0.8)
    del item["title"], item["url"]
    chunk = only(main(None, [item]))
    assert (chunk["document_title"], chunk["url"]) == ("N", "https://l.com")


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("2025-08-12", "2025-08-12"),
        ("2025-08-12 12:35:55", "2025-08-12"),
        ("2025-08-12T12:35:55+08:00", "2025-08-12"),
        ("2025/8/2", "2025-08-02"),
        ("  3 days ago ", "3 days ago"),
        ("2025-13-45", "2025-13-45"),
        ("Aug 12, 2025", "Aug 12, 2025"),
    ],
)
def test_dates_are_normalised_when_iso_like_and_otherwise_kept(raw, expected):
    assert only(main(None, [web_item(published_date=raw)]))["published_date"] == expected


def test_html_tags_and_entities_are_removed_from_titles_text_and_sites():
    item = {
        "title": "<em>巡检</em> &amp; 标准",
        "url": "https://e.com",
        "snippet": "a <b>bold</b> claim &lt;3 &quot;q&quot;",
        "siteName": "<i>站点</i>",
    }
    chunk = only(main(None, [item]))
    assert chunk["document_title"] == "巡检 & 标准"
    assert chunk["content"] == 'a bold claim <3 "q"'
    assert chunk["site_name"] == "站点"


def test_a_result_without_title_is_titled_by_site_then_host():
    assert (
        only(main(None, [{"url": "https://www.zhihu.com/q", "content": "x", "site_name": "知乎"}]))["document_title"]
        == "知乎"
    )
    assert only(main(None, [{"url": "https://www.zhihu.com/q", "content": "x"}]))["document_title"] == "zhihu.com"


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "data:text/html,<script>", "ftp://e.com/f", "//e.com/x", "http://"]
)
def test_only_http_urls_count(url):
    chunk = only(main(None, [{"title": "t", "url": url, "content": "x", "site_name": "S"}]))
    assert (chunk["url"], chunk["site_host"], chunk["source_file_url"], chunk["document_name"]) == ("", "", "", "")
    assert chunk["display_subtitle"] == "S"


def test_max_web_results_keeps_the_first_usable_distinct_results_in_provider_order():
    web = [
        web_item(url="https://e.com/1", score=0.1),
        web_item(url="https://e.com/2", content=""),
        web_item(url="https://e.com/1/", score=0.05),
        web_item(url="https://e.com/3", score=0.9),
        web_item(url="https://e.com/4", score=0.95),
    ]
    result = main(None, web, max_web_results=2)
    assert [c["url"] for c in result["chunk_metadata"]] == ["https://e.com/3", "https://e.com/1"]
    assert main(None, web, max_web_results=0)["chunk_count"] == 0
    assert {"source": "web", "index": 4, "reason": "over max_web_results"} in result["skipped"]


def test_the_seed_default_keeps_five_web_results():
    web = [web_item(url=f"https://e.com/{i}") for i in range(10)]
    assert main(None, web)["chunk_count"] == 5


def test_provider_is_kept_when_present():
    assert only(main(None, [web_item(provider="tavily")]))["provider"] == "tavily"
    assert only(main(None, [web_item()]))["provider"] == ""


@pytest.mark.parametrize(
    "site,date,url,expected",
    [
        ("知乎", "2025-08-12", "https://www.zhihu.com/q", "知乎 · 2025-08-12"),
        ("", "2025-08-12", "https://www.zhihu.com/q", "zhihu.com · 2025-08-12"),
        ("知乎", "", "https://www.zhihu.com/q", "知乎"),
        ("", "", "https://example.com/q", "example.com"),
        ("", "2025-08-12", "", "2025-08-12"),
        ("", "", "", ""),
    ],
)
def test_web_subtitle_fallback_chain(site, date, url, expected):
    chunk = only(main(None, [{"title": "t", "url": url, "content": "x", "site_name": site, "published_date": date}]))
    assert chunk["display_subtitle"] == expected


# --- order, duplicates, caps ---------------------------------------------------------------------------


def test_rag_first_then_score_descending_ties_in_input_order():
    rag = [
        rag_item(content="r-low", score=0.2, segment_id="a"),
        rag_item(content="r-tie1", score=0.5, segment_id="b"),
        rag_item(content="r-tie2", score=0.5, segment_id="c"),
    ]
    web = [
        web_item(url="https://e.com/1", content="w-high", score=0.99),
        web_item(url="https://e.com/2", content="w-low", score=0.1),
    ]
    result = main(rag, web)
    assert [c["content"] for c in result["chunk_metadata"]] == ["r-tie1", "r-tie2", "r-low", "w-high", "w-low"]
    assert [c["id"] for c in result["chunk_metadata"]] == ["1", "2", "3", "4", "5"]


def test_duplicates_are_merged_keeping_the_higher_score():
    rag = [
        rag_item(content="first", score=0.2, segment_id="same"),
        rag_item(content="second", score=0.7, segment_id="same"),
        rag_item(content="other", score=0.1, segment_id="other"),
    ]
    web = [
        web_item(url="https://e.com/p#top", content="w1", score=0.9),
        web_item(url="https://e.com/p/", content="w2", score=0.3),
        web_item(url="https://e.com/q", content="w3", score=0.1),
    ]
    contents = [c["content"] for c in main(rag, web)["chunk_metadata"]]
    assert contents == ["second", "other", "w1", "w3"]


def test_max_chunks_caps_after_ordering_and_defaults_to_thirty():
    rag = [rag_item(content=f"r{i}", score=i / 100, segment_id=f"s{i}") for i in range(40)]
    result = main(rag, None)
    assert result["chunk_count"] == 30
    assert result["chunk_metadata"][0]["content"] == "r39"
    assert result["chunk_metadata"][-1]["content"] == "r10"
    capped = main(rag, [web_item()], max_chunks=3)
    assert [c["content"] for c in capped["chunk_metadata"]] == ["r39", "r38", "r37"]
    assert len(capped["skipped"]) == 30  # the Code node's array limit: 29 entries, then one that counts the rest
    assert capped["skipped"][-1] == {"source": "all", "index": -1, "reason": "and 9 more items not used"}
    few = main(rag[:5], [web_item()], max_chunks=5)
    assert few["skipped"] == [{"source": "web", "index": 0, "reason": "over max_chunks"}]


# --- output format -------------------------------------------------------------------------------------


def test_formatted_chunks_has_the_seed_format_exactly():
    result = main(
        [rag_item(content="内容1", segment_id="a"), rag_item(content="内容2", score=0.1, segment_id="b")],
        [web_item(content="内容3")],
    )
    assert result["formatted_chunks"] == "[C:1]\n内容1\n\n[C:2]\n内容2\n\n[C:3]\n内容3"


@pytest.mark.parametrize("forged", FORGED)
def test_chunk_text_cannot_forge_a_citation(forged):
    for result in (
        main([rag_item(content=f"见 {forged} 处")], None),
        main(None, [web_item(content=f"见 {forged} 处")]),
    ):
        text = result["formatted_chunks"]
        assert MARKER_OPENING.findall(text) == ["[C:"]
        assert text.startswith("[C:1]\n")


def test_chunk_metadata_matches_the_numbered_context():
    result = main([rag_item(segment_id=f"s{i}", content=f"c{i}") for i in range(3)], [web_item()])
    headers = re.findall(r"^\[C:(\d+)\]$", result["formatted_chunks"], flags=re.M)
    assert headers == [c["id"] for c in result["chunk_metadata"]] == ["1", "2", "3", "4"]
    assert result["chunk_count"] == 4


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "content": st.text(max_size=30),
                "score": st.floats(allow_nan=True),
                "id": st.sampled_from(["a", "b", "c", ""]),
            }
        ),
        max_size=12,
    ),
    st.lists(
        st.fixed_dictionaries(
            {
                "content": st.text(max_size=30),
                "url": st.sampled_from(["https://a.com", "https://a.com/", "https://b.com#x", "javascript:x", ""]),
            }
        ),
        max_size=12,
    ),
    st.integers(min_value=1, max_value=40),
)
def test_numbering_invariants_hold_for_any_input(rag_specs, web_specs, max_chunks):
    rag = [{"content": s["content"], "metadata": {"score": s["score"], "segment_id": s["id"]}} for s in rag_specs]
    result = main(rag, web_specs, max_web_results=20, max_chunks=max_chunks)
    meta = result["chunk_metadata"]
    assert [c["id"] for c in meta] == [str(i) for i in range(1, len(meta) + 1)]
    assert result["chunk_count"] == len(meta) <= max_chunks
    assert len(MARKER_OPENING.findall(result["formatted_chunks"])) == len(meta)
    kinds = [c["source_type"] for c in meta]
    assert kinds == sorted(kinds)  # every rag before every web
    used = len(meta) + len(result["skipped"])
    assert used == len(rag) + len(web_specs)  # nothing vanishes without a record


def test_a_json_body_wrapped_in_a_list_is_read():
    # Dify casts an HTTP Request node's body (a JSON object as text) given to an array parameter to [body].
    body = json.dumps(WEB_SHAPES["bocha_raw"][0], ensure_ascii=False)
    assert only(main(None, [body]))["document_title"] == "巡检标准"
    assert only(main(None, body))["document_title"] == "巡检标准"


@pytest.mark.parametrize(
    "response",
    [
        {"code": 401, "msg": "invalid api key", "data": None, "log_id": "x"},
        {"error": "rate limited"},
        [{"status": 500, "message": "upstream"}],
    ],
)
def test_a_search_provider_error_gives_no_web_results_and_is_reported(response):
    result = main([rag_item()], response)
    assert result["chunk_count"] == 1
    assert len(result["skipped"]) == 1 and result["skipped"][0]["reason"].startswith("search provider error")


# --- hostile input (issue: hardening) -------------------------------------------------------------------


def test_an_integer_past_float_range_is_a_score_of_zero_not_a_crash():
    result = main(None, '[{"url":"http://a.b","content":"x","score":1' + "0" * 400 + "}]")
    assert only(result)["score"] == 0.0
    item = rag_item()
    item["metadata"].update(score=10**400, segment_position=10**30)
    chunk = only(main([item], None))
    assert (chunk["score"], chunk["segment_position"]) == (0.0, 0)  # a Code node's numbers stay within ±2**63
    assert only(main([{"content": "x", "title": 10**5000}], None))["document_title"] == ""  # too long to print


@pytest.mark.parametrize("field", ["rag_chunks", "web_chunks"])
@pytest.mark.parametrize("text", ["[" * 2000 + "]" * 2000, '{"a":' * 5000 + "1" + "}" * 5000])
def test_json_nested_too_deeply_is_an_error_naming_the_input(field, text):
    with pytest.raises(ValueError, match=f"{field}: JSON nested too deeply"):
        main(**{field: text})


@pytest.mark.parametrize("value", ["¹", "١", "３", "1e3", "-1", "", " ", float("inf"), float("nan"), 2.5, "9" * 30])
def test_max_chunks_is_ascii_digits_or_a_whole_number(value):
    with pytest.raises(ValueError, match="max_chunks: expected a whole number >= 1"):
        main([], None, max_chunks=value)


def test_max_chunks_in_text_or_float_forms():
    rag = [rag_item(content=f"r{i}", segment_id=f"s{i}") for i in range(5)]
    assert [main(rag, None, max_chunks=v)["chunk_count"] for v in (" 3 ", "+2", 4.0)] == [3, 2, 4]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("见 [C:9] 处", "见 (C:9) 处"),
        ("【C:2】", "（C:2）"),
        ("［C:3］", "（C:3）"),
        ("[C:1,2]", "(C:1,2)"),
        ("[[C:1]]", "[(C:1)]"),
        ("[C:1", "(C:1"),
        ("[C:1 [C:2]]", "(C:1 (C:2)]"),
        ("[C: see 【x】 ]", "(C: see 【x】 ]"),
        ("[C:1】", "(C:1】"),
        ("[1] [C] (C:1)", "[1] [C] (C:1)"),
    ],
)
def test_a_neutralised_marker_is_balanced(text, expected):
    assert neutralise_markers(text) == expected


LOOKALIKE_PARTS = {
    "open": ["[", "［", "﹇", "【", "︻", "⁅"],
    "c": ["C", "c", "Ｃ", "ｃ", "𝐂", "𝒄", "ℂ", "Ⅽ", "ⅽ", "Ç", "Ć", "Ⓒ", "ᶜ", "С", "с"],
    "colon": [":", "：", "﹕", "︓", "∶"],
    "gap": [
        "",
        " ",
        "\u2003",
        "\u2009",
        "\u200b",
        "\u200d",
        "\ufeff",
        "\u00ad",
        "\u2060",
        "\u0301",
        "\u20dd",
        "\u0903",
        "\u3000",
        "\u00a0",
        "\u180e",
        "\u034f",
        "\ufe0f",
        "\u3164",
    ],
    "id": ["1", "99", "９", "𝟗", "١", "12-14", "1,2", "C:3"],
    "close": ["]", "］", "﹈", "】", "︼", "⁆", ""],
}


def part(name):
    return st.sampled_from(LOOKALIKE_PARTS[name])


LOOKALIKE = st.tuples(
    part("open"),
    st.lists(part("gap"), max_size=3).map("".join),
    part("c"),
    st.lists(part("gap"), max_size=3).map("".join),
    part("colon"),
    st.lists(part("gap"), max_size=2).map("".join),
    part("id"),
    part("close"),
).map("".join)
NOISE = st.text(alphabet=st.sampled_from(list("ab 文,，]】［【(") + ["\n", "ﬀ", "㈱", "\u200b", "\u0301"]), max_size=6)


def fold(text):
    """The look-alike model of the issue: NFKD, drop Cf/Mn/Mc/Me, NFKC (written independently of the node)."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Mn", "Mc", "Me"))
    return unicodedata.normalize("NFKC", text)


@settings(max_examples=600, deadline=None)
@given(st.lists(LOOKALIKE | NOISE, min_size=1, max_size=6).map("".join))
def test_no_look_alike_marker_survives_in_merged_chunk_text(text):
    result = main([rag_item(content="x" + text)], [web_item(content="y" + text)])
    for chunk in result["chunk_metadata"]:
        for form in (chunk["content"], fold(chunk["content"])):
            assert validate_citations.main(form, None)["citations"] == [], (text, form)
    cited = validate_citations.main(fold(result["formatted_chunks"]), None)["citations"]
    assert [c["id"] for c in cited] == [c["id"] for c in result["chunk_metadata"]]  # only the headers


@settings(max_examples=300, deadline=None)
@given(st.lists(LOOKALIKE | NOISE | st.text(max_size=8), max_size=6).map("".join))
def test_neutralising_changes_only_brackets_and_only_where_a_marker_opens(text):
    neutral = neutralise_markers(text)
    assert neutralise_markers(neutral) == neutral
    assert neutralise_markers(text) == neutral  # the memory node carries the same code
    homoglyphs_too = fold(text).translate(FOLD_LOOKALIKES)
    homoglyphs_too = "".join(c for c in homoglyphs_too if c not in FOLD_INVISIBLE)
    if not MARKER_OPENING.search(homoglyphs_too):
        assert neutral == text
    changed = [(a, b) for a, b in zip(text, neutral) if a != b] if len(text) == len(neutral) else None
    if changed is not None:
        assert all(b in "()（）" for _, b in changed)


def test_the_official_tavily_tools_failure_text_is_reported_in_skipped():
    # The official Tavily tool reports a failed search as text, with `json` [{"data": []}].
    for json_output in ([{"data": []}], [], None, ""):
        result = main([rag_item()], json_output, web_text="Tavily API error: 432 Client Error: plan usage limit")
        assert result["chunk_count"] == 1
        assert result["skipped"] == [
            {
                "source": "web",
                "index": -1,
                "reason": "search provider error: Tavily API error: 432 Client Error: plan usage limit",
            }
        ]
    assert main([rag_item()], [{"data": []}], web_text="  ")["skipped"] == []
    assert main([rag_item()], [{"data": []}])["skipped"] == []
    ok = main(None, [web_item()], web_text="1. 标题 https://example.com/a ...")  # a successful search's text
    assert ok["chunk_count"] == 1 and ok["skipped"] == []
    long = main(None, [{"data": []}], web_text="x\n" * 1000)["skipped"][0]["reason"]
    assert len(long) <= 330 and "\n" not in long
    with pytest.raises(ValueError, match="web_text"):
        main(None, None, web_text={"text": "x"})


def test_a_huge_chunk_is_cut_and_the_cut_is_reported():
    result = main([rag_item(content="字" * 20000 + "[C:1]")], [web_item(content="w" * 5_000_000)])
    assert [len(c["content"]) for c in result["chunk_metadata"]] == [12000, 12000]
    assert [s["reason"] for s in result["skipped"]] == ["content cut at 12000 characters"] * 2
    assert len(result["formatted_chunks"]) < 400_000 / 15


def test_titles_and_urls_stay_one_bounded_line():
    chunk = only(
        main(
            None,
            [
                {
                    "title": "t\n" * 10000,
                    "url": "https://e.com/" + "a" * 5000,
                    "content": "x",
                    "site_name": "s" * 1000,
                    "date": "d" * 1000,
                }
            ],
        )
    )
    assert len(chunk["document_title"]) == 300 and "\n" not in chunk["document_title"]
    assert chunk["url"] == "" and len(chunk["site_name"]) == 300 and len(chunk["display_subtitle"]) <= 300


def test_the_merge_tool_takes_the_search_text_as_web_text():
    from tests.support import sdk

    reg = sdk.registration()
    failed = sdk.invoke(
        reg,
        "merge_chunks",
        {"rag_chunks": [rag_item()], "web_chunks": [{"data": []}], "web_text": "Tavily error: invalid API key"},
    )
    assert failed["skipped"] == [
        {"source": "web", "index": -1, "reason": "search provider error: Tavily error: invalid API key"}
    ]
    assert sdk.invoke(reg, "merge_chunks", {"web_chunks": [web_item()], "web_text": "results …"})["skipped"] == []


@pytest.mark.parametrize(
    "url,expected",
    [
        ("http\t\ts://example.com/p", "https://example.com/p"),
        ("https://exa\nmple.com/\r", "https://example.com/"),
        ("java\tscript:alert(1)", ""),
    ],
)
def test_a_url_is_kept_as_a_browser_reads_it(url, expected):
    assert only(main(None, [{"title": "t", "url": url, "content": "x"}]))["url"] == expected
