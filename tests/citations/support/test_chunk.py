"""The chunk view (citations/support/chunk.py) and quantities (citations/support/quantities.py): paraphrase
tolerance, synonyms and unit conversions."""

import pytest

from citations.support.chunk import ChunkView
from citations.support.quantities import converted_numbers
from citations.support.score import judge
from citations.support.sentences import sentence_parts
from citations.support.tables import UNIT_SCALE
from citations.support.text import folded
from citations.support.units import content_units
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
