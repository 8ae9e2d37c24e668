"""The measure cue: another month or unit for the same number (citations/support/measure.py)."""

import random

from citations.support.chunk import ChunkView
from citations.support.measure import (
    after_a_number,
    measure_cue,
    measure_hints,
    month_numbers,
    unit_names_zh,
)
from citations.support.quantities import NUMBER_AFTER, unit_name
from citations.support.tables import MONTHS
from citations.support.text import LATIN, folded, holds_any
from citations.support.units import content_units
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
    assert measure_cue(folded("It takes 5 hours."), ChunkView("It takes 5 hours (not 5 days).")) is None  # as said


def test_a_date_needs_a_month_and_a_number():
    """`measure_cue` reads dates in any sentence with a Latin letter: without a digit `month_number` finds none."""
    assert month_numbers("in may the mayor met us") == {}
    assert month_numbers("in may 2017 the mayor met us") == {("#2017", "may"): None}
    assert measure_cue(folded("It opened in March."), ChunkView("It opened on May 1, 2017.")) is None
    assert not holds_any("报修服务时间为每天8:00至20:00", MONTHS)


def test_a_sentence_without_a_latin_letter_is_read_for_units_only_after_a_number():
    """Without a Latin letter, `measure_cue` reads a sentence's numbers only when a unit's name beyond ASCII stands
    right after one (or after one and spaces): NUMBER_AFTER then finds it, and never otherwise; nor does the
    caller's `hinted` (the sentence's units among `measure_hints`) leave such a name out."""
    for sentence, source in [
        ("每天步行约2公里。", "每天步行约2米即可到达。"),
        ("每天步行约2 公里。", "每天步行约2米即可到达。"),
        ("每天步行约2\u3000公里。", "每天步行约2米即可到达。"),
        ("每天步行约٢公里。", "每天步行约٢米即可到达。"),
    ]:
        said, chunk = folded(sentence), ChunkView(source)
        hinted = measure_hints().intersection(content_units(sentence))
        cue = measure_cue(said, chunk)
        assert cue is not None and measure_cue(said, chunk, hinted) == cue
        assert "number" in kinds(cite(sentence, source))
    pieces = [
        "2",
        "٢",
        "10",
        ".5",
        " ",
        "\u3000",
        "\t",
        "每",
        "天",
        "公里",
        "千米",
        "三",
        "千",
        "个",
        "的",
        "米",
        "约",
        ",",
    ]
    draw = random.Random(7)
    for _ in range(3000):
        sentence = "".join(draw.choice(pieces) for _ in range(draw.randint(1, 8)))
        said = folded(sentence)
        named = any(unit_name(thing) for _, thing in NUMBER_AFTER.findall(said) if thing and not thing.isascii())
        hinted = measure_hints().intersection(content_units(sentence))
        assert named <= after_a_number(said, unit_names_zh()), sentence
        assert named <= after_a_number(said, hinted), sentence


def test_the_callers_latin_flag_reads_as_the_sentence_would():
    """`measure_cue` given whether the sentence holds a Latin letter (`judge` reads it once for all its rules) finds
    what it finds reading the sentence itself."""
    for sentence, source in [
        ("It opened on March 1, 2017.", "It opened on May 1, 2017."),
        ("The race is 5 km long.", "The race is 5 miles long."),
        ("步行约2公里", "步行约2米即可到达。"),
        ("步行约2公里", "步行约2千米"),
        ("The 访客 desk answers within 4 hours.", "The 访客 desk answers within 4 days."),
    ]:
        said, chunk = folded(sentence), ChunkView(source)
        latin = LATIN.search(said) is not None
        assert measure_cue(said, chunk, None, latin) == measure_cue(said, chunk)


def test_without_a_latin_letter_or_a_digit_no_measure_cue():
    """`judge` calls `measure_cue` on a sentence without a Latin letter whenever it names a unit (`hinted`), with or
    without a digit: without one, `after_a_number` finds none, as DIGIT would not."""
    for sentence in ["每天步行约两公里。", "每天步行约二公里。", "步行约几千米", "周一至周五开放"]:
        said = folded(sentence)
        hinted = measure_hints().intersection(content_units(sentence))
        assert hinted and not LATIN.search(said) and not after_a_number(said, hinted)
        assert measure_cue(said, ChunkView("每天步行约2米即可到达，周一至周五5天"), hinted, False) is None
