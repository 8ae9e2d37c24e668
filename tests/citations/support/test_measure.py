"""The measure cue: another month or unit for the same number (citations/support/measure.py)."""

from citations.support.chunk import ChunkView
from citations.support.measure import measure_cue, month_numbers, names_a_month
from citations.support.text import folded
from citations.validate import main


def cite(sentence, chunk, question=""):
    """The citation the node gives a one-sentence answer citing `chunk` as chunk 1."""
    return main(f"{sentence}[C:1]", [{"id": "1", "content": chunk}], question=question)["citations"][0]


def kinds(citation):
    return [reason["kind"] for reason in citation["reasons"]]


def test_measure_cue_another_month_or_unit_for_the_same_number():
    assert measure_cue(folded("It opened on March 1, 2017."), ChunkView("It opened on May 1, 2017.")) == {
        "kind": "number",
        "claim": "mar 1",
        "source": "may 1",
    }
    assert measure_cue(folded("The race is 5 km long."), ChunkView("The race is 5 miles long.")) == {
        "kind": "number",
        "claim": "5 km",
        "source": "5 miles",
    }
    assert "number" in kinds(cite("步行约2公里。", "步行约2米即可到达。"))
    assert measure_cue(folded("步行约2公里"), ChunkView("步行约2千米")) is None  # the same unit
    assert measure_cue(folded("It opened on 1 May 2017."), ChunkView("It opened on May 1, 2017.")) is None


def test_a_date_needs_a_month_and_a_number():
    """`measure_cue` reads dates in any sentence with a Latin letter: without a digit `month_number` finds none."""
    assert month_numbers("in may the mayor met us") == {}
    assert month_numbers("in may 2017 the mayor met us") == {("#2017", "may"): None}
    assert measure_cue(folded("It opened in March."), ChunkView("It opened on May 1, 2017.")) is None
    assert not names_a_month("报修服务时间为每天8:00至20:00")
