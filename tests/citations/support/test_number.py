"""The number cue (citations/support/number.py)."""

from citations.support.chunk import ChunkView
from citations.support.number import number_cue, plainest
from citations.support.text import folded
from citations.support.units import content_units
from citations.validate import main


def cite(sentence, chunk, question=""):
    """The citation the node gives a one-sentence answer citing `chunk` as chunk 1."""
    return main(f"{sentence}[C:1]", [{"id": "1", "content": chunk}], question=question)["citations"][0]


def test_number_cue_a_different_number_for_the_same_thing():
    citation = cite("大会议室可容纳60人。", "A座3楼的大会议室可容纳40人，配有投影仪。")
    assert citation["weak"] and {"kind": "number", "claim": "60", "source": "40"} in citation["reasons"]
    assert "number: 60 ≠ 40" in citation["reason"]
    english = cite("Visitors must book 12 days ahead.", "Visitors must book 7 days ahead at the desk.")
    assert {"kind": "number", "claim": "12", "source": "7"} in english["reasons"]


def test_number_cue_the_word_before_a_number():
    view = ChunkView("The office is on floor 7 of the east tower.")
    text = folded("The office is on floor 9 of the east tower.")
    assert number_cue(text, content_units(text), view) == {"kind": "number", "claim": "9", "source": "7"}


def test_no_number_cue_for_a_number_of_another_thing():
    view = ChunkView("The hall seats 40 people.")
    text = folded("The hall has 3 exits.")
    assert number_cue(text, content_units(text), view) is None


def test_the_number_a_reason_shows_is_the_shortest_then_the_lowest():
    assert plainest({"#100", "#9.5"}) == "#9.5" and plainest({"#15", "#12", "#1905"}) == "#12"
    assert plainest({"#12345678901234568", "#12345678901234567"}) == "#12345678901234567"  # the same float
