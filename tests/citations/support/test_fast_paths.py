"""The support check's fast paths (issue 25) give what the full work gives: each shortcut rests on a fact checked
here (docs/support-check.md, "Cost")."""

import re
import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citations.support.measure import short_measure
from citations.support.negation import NEGATION_HINT_EN, negated_en, negated_zh
from citations.support.quantities import NUMBER_AFTER, number_before, thing_key, unit_name
from citations.support.roles import ROLE_HINTS, role_patterns
from citations.support.score import cue_word_forms
from citations.support.sentences import PART_SPLIT, SENTENCE_END, full_stop_ends, sentence_parts
from citations.support.tables import ANTONYMS_EN, ROLE_VERBS, SCOPE_EN
from citations.support.text import CJK, CJK_RUNS, COMMON_COMPATIBILITY, LATIN, WORD_TOKENS, holds_any, nfkc
from citations.support.units import (
    CODE_HINT,
    NUMBER_TOKENS,
    THOUSANDS,
    ZH_MEASURE,
    ZH_NUMBER,
    code_tokens,
    word_kinds,
    word_unit,
)
from citations.support.words import words_of, words_saying

COMPAT_TEXT = st.lists(
    st.sampled_from(
        [char for char, _ in COMMON_COMPATIBILITY]
        + list("a1 ,.。、“”—éÅ")
        + [
            "\u0301",
            "\u0308",
            "\u0327",
            "\u3099",
            "ｶ",
            "ﾞ",
            "①",
            "ﬁ",
            "㎏",
            "Ａ",
            "\u212b",
            "\u1100",
            "\u1161",
            "가",
            "巡更",
            "…",
            "\u00a0",
        ]
    ),
    max_size=12,
).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(COMPAT_TEXT)
def test_nfkc_is_unicodedatas_nfkc(text):
    assert nfkc(text) == unicodedata.normalize("NFKC", text)


def test_nfkc_with_every_combining_mark_after_a_replaced_character():
    for char, _ in COMMON_COMPATIBILITY:
        for mark in map(chr, range(0x300, 0x370)):
            assert nfkc(f"巡{char}{mark}a") == unicodedata.normalize("NFKC", f"巡{char}{mark}a")


# each pattern as it reads most plainly, against the form shipped (written to start with a character set; a full stop
# before a character beyond ASCII is kept by `full_stop_ends` rather than by the pattern)
PLAIN_PATTERNS = {
    "THOUSANDS": r"(?<=\d),(?=\d{3}(?!\d))",
    "SENTENCE_END": rf"(?:[。！？!?；;]+|\.(?=\s|$|[{CJK}])|…+(?=\s|$))[”’\"'）)】」』]*",
    "PART_SPLIT": r"[，；：]|(?<!\d)[,:](?!\d)|;|\s(?:and|but|while|whereas|although|though|which|who|whose|where)\s"
    r"|但是|但|并且|而且|同时",
    "SHORT_MEASURE": r"\d\s?(?:m|g|t|l|h|in)\b|\bmay\b",
    "NEGATED_ZH": "没有|[不没无非未别勿莫]",
    "CJK_RUNS": f"[{CJK}]+",
    "NUMBER_TOKENS": r"\d+(?:\.\d+)?",
    "WORD_TOKENS": "[A-Za-z\u00c0-\u024f]+",
    "ZH_NUMBER": "[零一二两三四五六七八九十百千]+(?=[个天次楼层人元分年月日点号周岁小倍位条])",
    "NUMBER_BEFORE": r"([A-Za-z]+)\s+(\d+(?:\.\d+)?)",  # issue 34: shipped from a word's start only (linear)
    "ROLES_THAN": r"([a-z0-9]+) (?:is |are |was |were )?[a-z]+er than ([a-z0-9]+)",
    "ROLES_VERB": r"([a-z0-9]+) (?:defeated|beat|overtook|succeeded|replaced) ([a-z0-9]+)",
}
# what follows a number is read by `thing_key` and `unit_name`: NUMBER_AFTER may take more than the Chinese
# characters after it, never anything these read differently
NUMBER_AFTER_PLAIN = rf"(\d+(?:\.\d+)?)\s*(%|[A-Za-z]+|[{CJK}]{{1,2}})?"
SHIPPED = {
    "THOUSANDS": THOUSANDS.finditer,
    "SENTENCE_END": lambda text: (
        end for end in SENTENCE_END.finditer(text) if end.group()[0] != "." or full_stop_ends(text, end.start())
    ),
    "PART_SPLIT": PART_SPLIT.finditer,
    "SHORT_MEASURE": lambda text: short_measure().finditer(text),
    "NEGATED_ZH": lambda text: negated_zh().finditer(text),
    "CJK_RUNS": CJK_RUNS.finditer,
    "NUMBER_TOKENS": NUMBER_TOKENS.finditer,
    "WORD_TOKENS": WORD_TOKENS.finditer,
    # issue 34: runs of numerals, kept before a measure word (`zh_numbers`): linear on a long run without one
    "ZH_NUMBER": lambda text: (
        m for m in ZH_NUMBER.finditer(text) if m.end() < len(text) and text[m.end()] in ZH_MEASURE
    ),
    "NUMBER_BEFORE": lambda text: number_before().finditer(text),
    "ROLES_THAN": lambda text: role_patterns()[1].finditer(text),
    "ROLES_VERB": lambda text: role_patterns()[2].finditer(text),
}
PATTERN_TEXT = st.lists(
    st.sampled_from(
        list("ab é0123456789١ ,:;.…。！？!?；，：但是并且而同时没有不非三十个人%天”）\n\t_\u3000\u4dc0丽ｶ米、")
        + ["公里", "小时", "km", "5 miles", " than ", "taller", " beat ", " is ", "7"]
        + [
            " and ",
            " but ",
            " where ",
            " may ",
            "may",
            "1,000",
            "12,345",
            "2.5",
            "3m",
            "5 in",
            "……",
            "但是",
            "同时",
            "没有",
            "十二个",
            "Straße",
            "巡更",
            "8:00",
        ]
    ),
    max_size=16,
).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PATTERN_TEXT)
def test_the_patterns_match_as_their_plain_forms(text):
    for name, plain in PLAIN_PATTERNS.items():
        shipped = SHIPPED[name]
        assert [(m.span(), m.groups()) for m in shipped(text)] == [
            (m.span(), m.groups()) for m in re.finditer(plain, text)
        ], name
    assert PART_SPLIT.split(text) == re.split(PLAIN_PATTERNS["PART_SPLIT"], text)
    assert [
        (m.start(), m.group(1), thing_key(m.group(2) or ""), unit_name(m.group(2) or ""))
        for m in NUMBER_AFTER.finditer(text)
    ] == [
        (m.start(), m.group(1), thing_key(m.group(2) or ""), unit_name(m.group(2) or ""))
        for m in re.finditer(NUMBER_AFTER_PLAIN, text)
    ]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(
            [
                "no",
                "not",
                "none",
                "nor",
                "never",
                "neither",
                "nobody",
                "nothing",
                "without",
                "cannot",
                "can't",
                "hasn’t",
                "n't",
                "a",
                "b2",
                "2b",
                "x",
                "7",
                "١",
                "B١٢",
                " ",
                "-",
                ".",
                "é",
                "巡",
                "_",
                "know",
                "one",
                "within",
            ]
        ),
        max_size=10,
    ).map("".join)
)
def test_the_hints_are_found_wherever_their_patterns_match(text):
    if code_tokens().search(text):
        assert CODE_HINT.search(text)
        assert WORD_TOKENS.search(text)  # `content_units` looks for codes only in a text with words
    if negated_en().search(text):
        assert NEGATION_HINT_EN.search(text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(["Desk", "desk", "DESKS", "ſix", "İstanbul", "Straße", "STRASSE", "Éa", "the", "a", "Opening"])
    )
)
def test_a_words_unit_as_written_is_its_casefolded_unit(words):
    # `unit_set` reads each distinct word as written (`word_kinds`) instead of each distinct casefolded word
    assert {word_kinds(word)[0] for word in set(words)} == set(map(word_unit, {word.casefold() for word in words}))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PATTERN_TEXT)
def test_judge_reads_a_sentences_words_once_for_the_parts_and_the_cue_words(text):
    said = text.casefold()
    latin = LATIN.search(said) is not None
    tokens = WORD_TOKENS.findall(said) if latin else ()  # as `judge` reads them
    assert sentence_parts(said, tokens) == sentence_parts(said)
    if latin:  # the words the scope and antonym rules read: all of them, or none when they say no word of theirs
        words = words_saying(said, cue_word_forms(), tokens)
        assert words == words_of(said) or (not words and SCOPE_EN.union(*ANTONYMS_EN).isdisjoint(words_of(said)))
    # ROLE_HINTS held: what the pattern they replace found; every role pattern's match holds 比 or one of its words
    assert holds_any(said, ROLE_HINTS) == bool(re.search("than|" + "|".join(ROLE_VERBS), said))
    if any(pattern.search(said) for pattern in role_patterns()):
        assert "比" in said or (latin and holds_any(said, ROLE_HINTS))
