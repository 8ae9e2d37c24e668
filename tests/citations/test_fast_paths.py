"""The nodes' fast paths (issue 25) give what the full work gives: each shortcut rests on a fact checked here."""

import json
from urllib.parse import urlsplit, urlunsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citations import filter as filter_chunks
from citations import merge as merge_chunks
from citations import neutralise
from citations.dify_inputs import load_json, read_int


@pytest.mark.parametrize("node", [neutralise])
def test_the_characters_left_unfolded_fold_to_themselves(node):
    # MAY_FOLD leaves out ASCII (never folded), the CJK unified ideographs and the Hangul syllables.
    for low, high in ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3)):
        for code in range(low, high + 1):
            char = chr(code)
            assert not node.MAY_FOLD.match(char)
            assert node.fold_char(char) == char, hex(code)
    assert node.MAY_FOLD.match("\u0301") and node.MAY_FOLD.match("Ｃ") and not node.MAY_FOLD.match("C")


@pytest.mark.parametrize("node", [neutralise])
def test_every_character_that_folds_into_an_opening_bracket_is_neutralised(node):
    # The quick return ("no opening bracket, as written or folded") must miss none of them.
    openers = [
        chr(code)
        for code in range(0x80, 0x10000)
        if not 0xD800 <= code <= 0xDFFF and ("[" in node.fold_char(chr(code)) or "【" in node.fold_char(chr(code)))
    ]
    assert {"［", "⁅", "︻", "﹇"} <= set(openers)
    for opener in openers:
        text = f"见 {opener}C:1］ 与 {opener}Ｃ：２】"
        out = node.neutralise_markers(text)
        assert (
            out != text
            and "".join(map(node.fold_char, out)).count("(") + "".join(map(node.fold_char, out)).count("（") >= 2
        ), repr(opener)
    assert (
        node.neutralise_markers("普通文本，没有括号。Plain text (C: none).")
        == "普通文本，没有括号。Plain text (C: none)."
    )


def reference_web_address(value):
    """web_url, host_of and url_identity as they read a URL before the fast path: strip, drop tabs and line
    breaks, then urlsplit."""
    value = merge_chunks.URL_IGNORED.sub("", value.strip())
    if len(value) > merge_chunks.MAX_URL_CHARS:
        return "", "", ""
    try:
        parts = urlsplit(value)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            return "", "", ""
        host = parts.hostname
    except ValueError:
        return "", "", ""
    host = host[4:] if host.startswith("www.") else host
    return (
        value,
        host,
        urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, "")),
    )


URL_PARTS = st.sampled_from(
    [
        "http",
        "https",
        "HTTP",
        "Https",
        "ftp",
        "oss",
        "javascript",
        ":",
        "://",
        "//",
        "/",
        "www.",
        "a.b",
        "例子.中国",
        "[::1]",
        "[",
        "]",
        "@",
        "?q=1",
        "#f",
        ":80",
        " ",
        "\t",
        "\n",
        "\x01",
        "\x00",
        "\u3000",
        "x",
        "/p/",
        "%20",
        "ex-1.COM",
        ".",
        "-",
        ":8080",
        ":",
        "?",
        "#",
        "Ａ",
        "é",
        "\\",
    ]
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(URL_PARTS, max_size=10).map("".join))
def test_a_url_split_once_reads_as_it_did_split_three_times(value):
    assert merge_chunks.web_address(value) == reference_web_address(value)
    assert merge_chunks.web_url(value) == reference_web_address(value)[0]


def test_a_document_read_once_gives_each_chunk_the_same_fields():
    doc = {"document_name": "a.md", "document_title": " 标题  v1 ", "source_file_url": "https://kb.example.com/a.pdf"}
    items = [{"content": f"c{n}", "metadata": {"segment_id": f"s{n}", "doc_metadata": dict(doc)}} for n in range(3)]
    # Values equal as Python values but different as text are not taken for one another (1 == 1.0 == True).
    items += [
        {"content": "d", "metadata": {"segment_id": "t1", "doc_metadata": {"document_title": 1}}},
        {"content": "e", "metadata": {"segment_id": "t2", "doc_metadata": {"document_title": 1.0}}},
        {"content": "f", "metadata": {"segment_id": "t3", "doc_metadata": {"document_title": True}}},
        {"content": "g", "metadata": {"segment_id": "t4", "doc_metadata": {"document_title": [1]}}},
    ]
    chunks = merge_chunks.main(items, None)["chunk_metadata"]
    assert [c["document_title"] for c in chunks] == ["标题 v1"] * 3 + ["1", "1.0", "", ""]
    assert {c["url"] for c in chunks[:3]} == {"https://kb.example.com/a.pdf"}


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=True),
    st.sampled_from(
        [
            "x",
            "X",
            " x ",
            "2025-01-01",
            "2024-12-31T10:00:00Z",
            "3",
            "a,b",
            '["x", "y"]',
            '["X"]',
            "[bad",
            "[1e999]",
            "",
            "[]",
            "nan",
        ]
    ),
    st.lists(st.sampled_from(["x", "y", 1]), max_size=3),
)
LEAVES = st.one_of(
    st.builds(
        lambda f, op: {"field": f, "op": op}, st.sampled_from("abc"), st.sampled_from(filter_chunks.PRESENCE_OPS)
    ),
    st.builds(
        lambda f, op, v: {"field": f, "op": op, "value": v},
        st.sampled_from("abc"),
        st.sampled_from(filter_chunks.SCALAR_OPS),
        st.sampled_from(["x", "X", 1, 2.5, "2025"]),
    ),
    st.builds(
        lambda f, op, v: {"field": f, "op": op, "value": v},
        st.sampled_from("abc"),
        st.sampled_from(filter_chunks.LIST_OPS),
        st.lists(st.sampled_from(["x", "X", "a", 1, 2.0]), max_size=3),
    ),
    st.builds(
        lambda f, op, v: {"field": f, "op": op, "value": v},
        st.sampled_from("abc"),
        st.sampled_from(filter_chunks.NUMBER_OPS),
        st.sampled_from([0, 1, 2.5, -1]),
    ),
    st.builds(
        lambda f, op, v: {"field": f, "op": op, "value": v},
        st.sampled_from("abc"),
        st.sampled_from(filter_chunks.DATE_OPS),
        st.sampled_from(["2025-01-01", 1.7e9]),
    ),
)
CONDITIONS = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.builds(lambda c: {"not": c}, inner),
        st.builds(lambda cs: {"all": cs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda cs: {"any": cs}, st.lists(inner, min_size=1, max_size=3)),
    ),
    max_leaves=6,
)


def outcome(function):
    try:
        return function()
    except filter_chunks.Uncomparable as error:
        return ("uncomparable", str(error))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CONDITIONS, st.lists(st.dictionaries(st.sampled_from("abc"), VALUES), min_size=1, max_size=6), st.booleans())
def test_the_condition_built_once_holds_where_the_condition_read_each_time_holds(condition, docs, case_sensitive):
    filter_chunks.check_condition(condition, "condition")
    built = filter_chunks.evaluator(condition, case_sensitive)
    for doc in docs + docs:  # twice: the second time from what each leaf remembered of the text values
        assert outcome(lambda doc=doc: built(doc)) == outcome(
            lambda doc=doc: filter_chunks.holds(condition, doc, case_sensitive)
        )


def test_an_acl_text_judged_once_gives_every_chunk_its_verdict():
    items = [
        {"content": "c", "metadata": {"segment_id": f"s{n}", "doc_metadata": {"access_roles": acl}}}
        for n, acl in enumerate([",a,", ",b,", ",a,", ",b,", "[bad", "[bad", ","])
    ]
    out = filter_chunks.main(items, "a")
    assert [c["metadata"]["segment_id"] for c in out["chunks"]] == ["s0", "s2"]
    assert [(d["segment_id"], d["reason"]) for d in out["dropped"]] == [
        ("s1", "no_matching_role"),
        ("s3", "no_matching_role"),
        ("s4", "malformed_acl"),
        ("s5", "malformed_acl"),
        ("s6", "malformed_acl"),
    ]


def test_the_shared_json_decoder_reads_as_json_loads():
    for text in ['{"a": [1, 2.5, "x"]}', "1" * 150, "\ufeff[]", "[1e999]", "{bad"]:
        try:
            expected = json.loads(text, parse_int=read_int)
        except ValueError as error:
            expected = (type(error), str(error))
        try:
            got = load_json(text)
        except ValueError as error:
            got = (type(error), str(error))
        assert got == expected or (got != got and expected != expected), text


def envelope_read_in_full(obj):
    """envelope_results without its quick check: the tool envelope, then every provider path."""
    if isinstance(obj.get(merge_chunks.TOOL_ENVELOPE_KEY), list):
        return obj[merge_chunks.TOOL_ENVELOPE_KEY]
    for path in merge_chunks.WEB_RESULT_PATHS:
        found = merge_chunks.dig(obj, path)
        if isinstance(found, list):
            return found
    return None


def dicts_in(value):
    if isinstance(value, dict):
        yield value
        value = list(value.values())
    if isinstance(value, list):
        for element in value:
            yield from dicts_in(element)


KEYS = st.sampled_from(
    [
        "title",
        "url",
        "content",
        "data",
        "value",
        "items",
        "web",
        "results",
        "webPages",
        "json",
        "references",
        "organic",
        "search_results",
        "organic_results",
        "x",
        1,
    ]
)
NESTED = st.recursive(
    st.one_of(st.none(), st.text(max_size=3), st.integers()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(KEYS, NESTED, max_size=5))
def test_the_quick_envelope_check_misses_no_envelope(obj):
    assert merge_chunks.envelope_results(obj) is envelope_read_in_full(obj)


def test_every_provider_shape_is_found_past_the_quick_envelope_check():
    from tests.support.web_shapes import WEB_SHAPES

    for name, (response, _) in WEB_SHAPES.items():
        for obj in dicts_in(response):
            assert merge_chunks.envelope_results(obj) is envelope_read_in_full(obj), name


def test_no_character_folds_into_whitespace():
    # holds_phrase: a phrase's word (no whitespace) found in normal_text(text) stands within one folded word of text
    for code in range(0x110000):
        char = chr(code)
        if not 0xD800 <= code <= 0xDFFF:
            assert char.isspace() or not any(c.isspace() for c in char.casefold()), hex(code)


PHRASE_ALPHABET = st.sampled_from(list("aAbBßSsſKkΣσςİi 根据无法\t\n\u3000Ａ"))


@settings(max_examples=400, deadline=None)
@given(st.text(PHRASE_ALPHABET, max_size=30), st.lists(st.text(PHRASE_ALPHABET, max_size=6), max_size=3))
def test_the_quick_phrase_test_answers_as_normal_text_does(text, phrases):
    from citations.phrases import holds_phrase, normal_text

    said = normal_text(text)
    assert holds_phrase(text, phrases) == any(phrase in said for phrase in phrases)
    normal = [normal_text(phrase) for phrase in phrases]
    assert holds_phrase(text, normal) == any(phrase in said for phrase in normal)
