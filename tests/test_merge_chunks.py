import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodes import merge_chunks
from nodes.merge_chunks import main
from tests.fixtures.web_shapes import WEB_SHAPES


def rag_item(content="正文", score=0.5, segment_id="s1", dataset="测试知识库", **doc_meta):
    return {
        "content": content,
        "title": "item-title.md",
        "metadata": {"score": score, "dataset_name": dataset, "dataset_id": "ds1", "document_id": "d1",
                     "segment_id": segment_id, "segment_position": 3, "document_name": "meta-name.md",
                     "doc_metadata": doc_meta},
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


@pytest.mark.parametrize("field,kwargs", [
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
])
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
    chunk = only(main([rag_item(content="  巡更  ", score="0.73", document_title="巡更指南",
                                document_name="巡更.md", source_file_url="oss://kb/巡更.pdf")], None))
    assert chunk == {
        "id": "1", "source_type": "rag", "content": "巡更", "document_title": "巡更指南", "url": "oss://kb/巡更.pdf",
        "score": 0.73, "display_subtitle": "测试知识库", "document_name": "巡更.md", "dataset_name": "测试知识库",
        "site_name": "", "site_host": "", "source_file_url": "oss://kb/巡更.pdf", "segment_position": 3,
        "published_date": "", "dataset_id": "ds1", "document_id": "d1", "segment_id": "s1", "provider": "",
    }


@pytest.mark.parametrize("doc_meta,metadata_name,title,expected", [
    ({"document_title": "T", "document_name": "N"}, "M", "I", "T"),
    ({"document_title": " ", "document_name": "N"}, "M", "I", "N"),
    ({}, "M", "I", "M"),
    ({}, "", "I", "I"),
    ({}, "", "", ""),
])
def test_rag_title_fallback_chain(doc_meta, metadata_name, title, expected):
    item = {"content": "x", "title": title,
            "metadata": {"document_name": metadata_name, "doc_metadata": doc_meta}}
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
    item = {"name": "N", "title": "T", "href": "https://h.com", "link": "https://l.com", "url": "https://u.com",
            "content": "", "summary": "  ", "snippet": "S", "body": "B", "siteName": "SN", "website": "W",
            "source": "SRC", "date": "2020-01-01", "datePublished": "2021-02-02", "rerank_score": 0.9,
            "authority_score": 0.8}
    chunk = only(main(None, [item]))
    assert (chunk["document_title"], chunk["url"], chunk["content"]) == ("T", "https://u.com", "S")
    assert (chunk["site_name"], chunk["published_date"], chunk["score"]) == ("SN", "2021-02-02", 0.8)
    del item["title"], item["url"]
    chunk = only(main(None, [item]))
    assert (chunk["document_title"], chunk["url"]) == ("N", "https://l.com")


@pytest.mark.parametrize("raw,expected", [
    ("2025-08-12", "2025-08-12"),
    ("2025-08-12 12:35:55", "2025-08-12"),
    ("2025-08-12T12:35:55+08:00", "2025-08-12"),
    ("2025/8/2", "2025-08-02"),
    ("  3 days ago ", "3 days ago"),
    ("2025-13-45", "2025-13-45"),
    ("Aug 12, 2025", "Aug 12, 2025"),
])
def test_dates_are_normalised_when_iso_like_and_otherwise_kept(raw, expected):
    assert only(main(None, [web_item(published_date=raw)]))["published_date"] == expected


def test_html_tags_and_entities_are_removed_from_titles_text_and_sites():
    item = {"title": "<em>巡检</em> &amp; 标准", "url": "https://e.com", "snippet": "a <b>bold</b> claim &lt;3 &quot;q&quot;",
            "siteName": "<i>站点</i>"}
    chunk = only(main(None, [item]))
    assert chunk["document_title"] == "巡检 & 标准"
    assert chunk["content"] == 'a bold claim <3 "q"'
    assert chunk["site_name"] == "站点"


def test_a_result_without_title_is_titled_by_site_then_host():
    assert only(main(None, [{"url": "https://www.zhihu.com/q", "content": "x", "site_name": "知乎"}]))["document_title"] == "知乎"
    assert only(main(None, [{"url": "https://www.zhihu.com/q", "content": "x"}]))["document_title"] == "zhihu.com"


@pytest.mark.parametrize("url", ["javascript:alert(1)", "data:text/html,<script>", "ftp://e.com/f", "//e.com/x", "http://"])
def test_only_http_urls_count(url):
    chunk = only(main(None, [{"title": "t", "url": url, "content": "x", "site_name": "S"}]))
    assert (chunk["url"], chunk["site_host"], chunk["source_file_url"], chunk["document_name"]) == ("", "", "", "")
    assert chunk["display_subtitle"] == "S"


def test_max_web_results_keeps_the_first_usable_distinct_results_in_provider_order():
    web = [web_item(url="https://e.com/1", score=0.1), web_item(url="https://e.com/2", content=""),
           web_item(url="https://e.com/1/", score=0.05), web_item(url="https://e.com/3", score=0.9),
           web_item(url="https://e.com/4", score=0.95)]
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


@pytest.mark.parametrize("site,date,url,expected", [
    ("知乎", "2025-08-12", "https://www.zhihu.com/q", "知乎 · 2025-08-12"),
    ("", "2025-08-12", "https://www.zhihu.com/q", "zhihu.com · 2025-08-12"),
    ("知乎", "", "https://www.zhihu.com/q", "知乎"),
    ("", "", "https://example.com/q", "example.com"),
    ("", "2025-08-12", "", "2025-08-12"),
    ("", "", "", ""),
])
def test_web_subtitle_fallback_chain(site, date, url, expected):
    chunk = only(main(None, [{"title": "t", "url": url, "content": "x", "site_name": site, "published_date": date}]))
    assert chunk["display_subtitle"] == expected


# --- order, duplicates, caps ---------------------------------------------------------------------------

def test_rag_first_then_score_descending_ties_in_input_order():
    rag = [rag_item(content="r-low", score=0.2, segment_id="a"), rag_item(content="r-tie1", score=0.5, segment_id="b"),
           rag_item(content="r-tie2", score=0.5, segment_id="c")]
    web = [web_item(url="https://e.com/1", content="w-high", score=0.99), web_item(url="https://e.com/2", content="w-low", score=0.1)]
    result = main(rag, web)
    assert [c["content"] for c in result["chunk_metadata"]] == ["r-tie1", "r-tie2", "r-low", "w-high", "w-low"]
    assert [c["id"] for c in result["chunk_metadata"]] == ["1", "2", "3", "4", "5"]


def test_duplicates_are_merged_keeping_the_higher_score():
    rag = [rag_item(content="first", score=0.2, segment_id="same"), rag_item(content="second", score=0.7, segment_id="same"),
           rag_item(content="other", score=0.1, segment_id="other")]
    web = [web_item(url="https://e.com/p#top", content="w1", score=0.9), web_item(url="https://e.com/p/", content="w2", score=0.3),
           web_item(url="https://e.com/q", content="w3", score=0.1)]
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
    result = main([rag_item(content="内容1", segment_id="a"), rag_item(content="内容2", score=0.1, segment_id="b")],
                  [web_item(content="内容3")])
    assert result["formatted_chunks"] == "[C:1]\n内容1\n\n[C:2]\n内容2\n\n[C:3]\n内容3"


FORGED = ["[C:9]", "【C:2】", "[ c：1 ]", "［C:3］", "[C:1,2]", "[C: 1-3]", "[C:1, C:2]", "[[C:1]]", "【 c : 4 】",
          "[C:1", "[\u3000C\u3000:\u30001]"]


@pytest.mark.parametrize("forged", FORGED)
def test_chunk_text_cannot_forge_a_citation(forged):
    for result in (main([rag_item(content=f"见 {forged} 处")], None), main(None, [web_item(content=f"见 {forged} 处")])):
        text = result["formatted_chunks"]
        assert merge_chunks.MARKER_OPENING.findall(text) == ["[C:"]
        assert text.startswith("[C:1]\n")


def test_chunk_metadata_matches_the_numbered_context():
    result = main([rag_item(segment_id=f"s{i}", content=f"c{i}") for i in range(3)], [web_item()])
    headers = re.findall(r"^\[C:(\d+)\]$", result["formatted_chunks"], flags=re.M)
    assert headers == [c["id"] for c in result["chunk_metadata"]] == ["1", "2", "3", "4"]
    assert result["chunk_count"] == 4


@settings(max_examples=150, deadline=None)
@given(st.lists(st.fixed_dictionaries({"content": st.text(max_size=30), "score": st.floats(allow_nan=True),
                                        "id": st.sampled_from(["a", "b", "c", ""])}), max_size=12),
       st.lists(st.fixed_dictionaries({"content": st.text(max_size=30), "url": st.sampled_from(
           ["https://a.com", "https://a.com/", "https://b.com#x", "javascript:x", ""])}), max_size=12),
       st.integers(min_value=1, max_value=40))
def test_numbering_invariants_hold_for_any_input(rag_specs, web_specs, max_chunks):
    rag = [{"content": s["content"], "metadata": {"score": s["score"], "segment_id": s["id"]}} for s in rag_specs]
    result = main(rag, web_specs, max_web_results=20, max_chunks=max_chunks)
    meta = result["chunk_metadata"]
    assert [c["id"] for c in meta] == [str(i) for i in range(1, len(meta) + 1)]
    assert result["chunk_count"] == len(meta) <= max_chunks
    assert len(merge_chunks.MARKER_OPENING.findall(result["formatted_chunks"])) == len(meta)
    kinds = [c["source_type"] for c in meta]
    assert kinds == sorted(kinds)  # every rag before every web
    used = len(meta) + len(result["skipped"])
    assert used == len(rag) + len(web_specs)  # nothing vanishes without a record


def test_a_json_body_wrapped_in_a_list_is_read():
    # Dify casts an HTTP Request node's body (a JSON object as text) given to an array parameter to [body].
    body = json.dumps(WEB_SHAPES["bocha_raw"][0], ensure_ascii=False)
    assert only(main(None, [body]))["document_title"] == "巡检标准"
    assert only(main(None, body))["document_title"] == "巡检标准"


@pytest.mark.parametrize("response", [{"code": 401, "msg": "invalid api key", "data": None, "log_id": "x"},
                                      {"error": "rate limited"}, [{"status": 500, "message": "upstream"}]])
def test_a_search_provider_error_gives_no_web_results_and_is_reported(response):
    result = main([rag_item()], response)
    assert result["chunk_count"] == 1
    assert len(result["skipped"]) == 1 and result["skipped"][0]["reason"].startswith("search provider error")
