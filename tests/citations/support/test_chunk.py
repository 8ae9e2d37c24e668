"""The chunk view (citations/support/chunk.py) and quantities (citations/support/quantities.py): paraphrase
tolerance, synonyms and unit conversions."""

import pytest

from citations.support.chunk import ChunkView, expand_chunk, group_units_zh, synonym_groups
from citations.support.negation import NEGATION_CHARACTERS, negated
from citations.support.quantities import converted_numbers
from citations.support.score import cue_units, judge
from citations.support.sentences import sentence_parts
from citations.support.tables import UNIT_SCALE
from citations.support.text import CJK_RUNS, folded
from citations.support.units import content_units, unit_set
from citations.support.weights import DEFAULT_WEIGHTS
from citations.validate import main


def cite(sentence, chunk, question=""):
    """The citation the node gives a one-sentence answer citing `chunk` as chunk 1."""
    return main(f"{sentence}[C:1]", [{"id": "1", "content": chunk}], question=question)["citations"][0]


def score(sentence, chunk):
    text = folded(sentence)
    return judge(text, content_units(sentence), ChunkView(chunk), None, sentence_parts(text))


def test_chinese_synonyms_count_as_the_same_word():
    chunk = "他心里有些生畏。"
    with_table = score("他有点感到害怕。", chunk)[0]
    assert with_table >= DEFAULT_WEIGHTS.threshold
    assert not cite("他有点感到害怕。", chunk)["weak"]


def test_english_synonyms_and_irregular_forms_count_as_the_same_word():
    assert not cite("The movie started shooting in 1990.", "The film began shooting in 1990 in Rome.")["weak"]
    assert not cite("She won the award in 2004.", "In 2004 she wins the national award.")["weak"]


@pytest.mark.parametrize(
    "chunk,sentence",
    [
        ("The shelf is 460 mm deep.", "The shelf is 46 cm deep."),
        ("步行约2公里即可到达。", "步行约2000米即可到达。"),
        ("The parcel weighs 1.5 kg.", "The parcel weighs 1500 g."),
        ("会议每次90分钟。", "会议每次1.5小时。"),
    ],
)
def test_unit_conversions(chunk, sentence):
    assert not cite(sentence, chunk)["weak"]
    assert set(UNIT_SCALE) >= {"mm", "cm", "m", "km", "kg", "g", "公里", "米", "分钟", "小时"}


def test_converted_numbers_round_to_what_a_sentence_would_write():
    assert converted_numbers([("460", "mm")]) >= {"#46", "#0.46"}
    assert "#18" in converted_numbers([("460", "mm")]) or "#18.1" in converted_numbers([("460", "mm")])
    assert converted_numbers([("3", "rooms")]) == set()


CHUNKS = [
    "他心里有些生畏。",
    "该服务不收费，也不要钱。The desk opens early and closes late; purchase a ticket.",
    "The race is 5 km long, 5km in all, 460 mm of rain fell and 46 cm more; it opened on May 1, 2017.",
    "会议室服务时间为每天8:00至18:00，费用每次10元，没有例外。Rooms are not free.",
    "巡更人员每2小时巡查一次B区，未经允许不得入内，非常重要，不仅如此。",
    "İstanbul Straße 三十个人 two hundred people",
]


def test_expand_chunk_adds_the_synonyms_of_the_words_the_chunk_holds():
    """`expand_chunk` (one pass for the table's words of both languages, in place): what the synonym groups of the
    chunk's words add, and nothing from the units it adds itself."""
    groups_zh, long_zh, units_en, _ = synonym_groups()
    for chunk in CHUNKS:
        text = folded(chunk)
        units = unit_set(chunk)
        expected = set(units)
        if CJK_RUNS.search(text):
            for word in [*(groups_zh.keys() & units), *(word for word in long_zh if word in text)]:
                for index in groups_zh[word]:
                    expected |= group_units_zh(index)
        for word_stem in units_en.keys() & units:
            expected |= units_en[word_stem]
        assert expand_chunk(text, set(units)) == expected
        assert ChunkView(chunk).units == expected


def test_a_chunks_negation_characters_are_among_its_units():
    """`ChunkView.negated` looks for a negation character only when one is among its units (and `judge` for the
    sentence's among `cue_units`): the answer is `negated`'s."""
    for chunk in CHUNKS + ["从未", "别去", "勿扰", "莫急", "无人", "not at all"]:
        view = ChunkView(chunk)
        assert view.negated() == negated(view.text)
        said = folded(chunk)
        cues = cue_units().intersection(content_units(chunk))
        assert negated(said, True, not NEGATION_CHARACTERS.isdisjoint(cues)) == negated(said)
