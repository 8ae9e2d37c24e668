"""The support check's word tables (citations/support/tables.py), tested as data: each table holds what it promises."""

import pytest

from citations.support.tables import (
    ABBREVIATIONS,
    ANTONYMS_EN,
    ANTONYMS_ZH,
    COMPOUNDS_ZH,
    EN_NUMBERS,
    GENERIC_WORDS,
    GENERIC_ZH,
    MEASURE_WORDS,
    MONTH_NAMES,
    MONTHS,
    NEGATION_SKIP,
    NOT_NEGATIONS,
    ROLE_VERBS,
    SCOPE_EN,
    SCOPE_ZH,
    STOP_CHARS,
    STOP_WORDS,
    SYNONYMS_EN,
    SYNONYMS_ZH,
    UNIT_SCALE,
    ZH_DIGITS,
    groups,
    scales,
)
from citations.support.text import CJK_RUNS
from citations.support.units import stem

NEGATION_CHARACTERS = "不没无非未别勿莫"


def duplicates(items):
    seen, twice = set(), []
    for item in items:
        if item in seen:
            twice.append(item)
        seen.add(item)
    return twice


@pytest.mark.parametrize("table", [ANTONYMS_ZH, ANTONYMS_EN])
def test_antonym_tables_are_pairs_of_different_words(table):
    assert all(len(pair) == 2 and pair[0] != pair[1] for pair in table)
    assert ("首", "末") in ANTONYMS_ZH and ("before", "after") in ANTONYMS_EN and ("more", "less") in ANTONYMS_EN


@pytest.mark.parametrize("table", [ANTONYMS_ZH, ANTONYMS_EN])
def test_no_antonym_pair_twice_in_either_order(table):
    assert duplicates(frozenset(pair) for pair in table) == []


def test_no_two_antonyms_are_synonyms():
    # a chunk holding one word of a synonym group holds the others: antonyms in one group would back each other
    zh_groups = [set(group) for group in SYNONYMS_ZH]
    assert [pair for pair in ANTONYMS_ZH if any(set(pair) <= group for group in zh_groups)] == []
    en_groups = [set(group) | set(map(stem, group)) for group in SYNONYMS_EN]  # the chunk's side holds stems
    assert [
        pair
        for pair in ANTONYMS_EN
        if any({stem(pair[0]), stem(pair[1])} <= group or set(pair) <= group for group in en_groups)
    ] == []


def test_synonym_tables_have_groups_of_two_or_more():
    assert all(len(group) >= 2 for group in SYNONYMS_ZH + SYNONYMS_EN)


@pytest.mark.parametrize("table", [SYNONYMS_ZH, SYNONYMS_EN])
def test_no_synonym_group_twice_and_no_word_twice_in_a_group(table):
    assert duplicates(frozenset(group) for group in table) == []
    assert [group for group in table if len(set(group)) != len(group)] == []


def test_words_are_written_as_the_check_reads_them():
    # English: casefolded, as the rules compare them; Chinese: CJK characters only
    for word in (
        *STOP_WORDS,
        *GENERIC_WORDS,
        *SCOPE_EN,
        *NEGATION_SKIP,
        *ABBREVIATIONS,
        *MONTHS,
        *MONTH_NAMES,
        *ROLE_VERBS,
        *(w for pair in ANTONYMS_EN for w in pair),
        *(w for g in SYNONYMS_EN for w in g),
    ):
        assert word == word.casefold() and word.isascii() and word.isalpha(), word
    for word in (
        *GENERIC_ZH,
        *SCOPE_ZH,
        *NOT_NEGATIONS,
        *COMPOUNDS_ZH,
        *(w for pair in ANTONYMS_ZH for w in pair),
        *(w for g in SYNONYMS_ZH for w in g),
    ):
        assert CJK_RUNS.fullmatch(word), word
    assert all(name == name.casefold() for name in UNIT_SCALE)  # a number's unit is looked up casefolded


def test_stop_characters_are_single_chinese_characters():
    # `content_units` finds a sentence's stop characters among the characters of its Chinese runs
    assert all(len(char) == 1 and CJK_RUNS.fullmatch(char) for char in STOP_CHARS)
    assert all(len(char) == 1 for char in MEASURE_WORDS) and set(ZH_DIGITS) <= set("零一二两三四五六七八九")


def test_generic_words_are_content_words_and_chinese_ones_are_bigrams():
    assert duplicates(GENERIC_WORDS) == [] and STOP_WORDS.isdisjoint(GENERIC_WORDS)
    assert all(len(word) == 2 for word in GENERIC_ZH)  # they weigh a bigram: a longer word would never match one


def test_compounds_hold_a_one_character_antonym_and_not_negations_a_negation_character():
    one_character = {word for pair in ANTONYMS_ZH for word in pair if len(word) == 1}
    assert all(any(char in one_character for char in word) for word in COMPOUNDS_ZH)
    assert all(any(char in NEGATION_CHARACTERS for char in word) for word in NOT_NEGATIONS)
    assert duplicates(COMPOUNDS_ZH) == [] and duplicates(NOT_NEGATIONS) == []


def test_every_unit_kind_has_units_to_convert_between_and_sizes_in_its_base_unit():
    kinds = {kind for kind, _ in UNIT_SCALE.values()}
    assert kinds == {"m", "kg", "l", "s"}
    for kind in kinds:  # the size is in the unit the kind is named after (s: seconds, though none is listed)
        sizes = {size for k, size in UNIT_SCALE.values() if k == kind}
        assert len(sizes) >= 2 and all(size > 0 for size in sizes), kind
        assert kind not in UNIT_SCALE or UNIT_SCALE[kind] == (kind, 1.0)
    assert UNIT_SCALE["km"] == ("m", 1000.0) and UNIT_SCALE["斤"] == ("kg", 0.5) and UNIT_SCALE["周"] == ("s", 604800.0)


def test_months_and_number_words():
    assert len(MONTHS) == 12 and all(len(month) == 3 for month in MONTHS) and duplicates(MONTHS) == []
    assert all(any(name.startswith(month) for name in MONTH_NAMES) for month in MONTHS)
    assert EN_NUMBERS["zero"] == 0 and EN_NUMBERS["nineteen"] == 19 and EN_NUMBERS["ninety"] == 90
    assert len(EN_NUMBERS) == 28 and sorted(EN_NUMBERS.values()) == list(range(20)) + list(range(20, 100, 10))


def test_abbreviation_table():
    assert {"co", "inc", "ltd", "mr", "dr", "vs", "v", "no", "jan", "eg", "ie", "c"} <= ABBREVIATIONS
    assert all("." not in word for word in ABBREVIATIONS)  # read without their dots


def test_tables_written_as_strings_read_as_written():
    assert groups("a/b c/d/e") == (("a", "b"), ("c", "d", "e"))
    assert scales({"m": "mm 0.001 m 1", "s": "h 3600"}) == {"mm": ("m", 0.001), "m": ("m", 1.0), "h": ("s", 3600.0)}
