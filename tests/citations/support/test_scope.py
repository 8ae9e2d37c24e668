"""The scope cue (citations/support/scope.py)."""

import pytest

from citations.support.chunk import ChunkView
from citations.support.scope import scope_cue, scope_zh_units
from citations.support.score import cue_units
from citations.support.tables import SCOPE_ZH
from citations.support.text import folded
from citations.support.units import content_units


@pytest.mark.parametrize(
    "sentence,chunk,word",
    [
        ("所有住户可以申请车位。", "住户可以申请车位。", "所有"),
        ("访客只能在前台登记。", "访客可以在前台登记。", "只能"),
        ("The desk is always open on weekends.", "The desk is open on weekends.", "always"),
    ],
)
def test_scope_cue_a_claim_wider_or_narrower_than_the_source(sentence, chunk, word):
    assert scope_cue(folded(sentence), ChunkView(chunk)) == {"kind": "scope", "claim": word}
    assert scope_cue(folded(sentence), ChunkView(chunk + word)) is None


def test_a_scope_word_of_scope_zh_units_is_a_unit_of_every_sentence_saying_it():
    """`judge` reads only the SCOPE_ZH words among the sentence's units (`cue_units`) and the others: a word of
    `scope_zh_units`'s first is a unit of each sentence that says it, whatever stands around it (stop characters,
    numerals and measure words, digits, Latin words, another scope word), so the cue is the same."""
    units, others = scope_zh_units()
    assert set(units) | set(others) == set(SCOPE_ZH) and "都" in others and "一切" in others
    contexts = ["{}", "我{}的", "都{}都", "三{}个人", "{}三个", "5{}天", "The {} desk", "只{}只", "一{}一", "{}。{}"]
    for word in SCOPE_ZH:
        for context in contexts:
            sentence = context.format(word, word)
            said = folded(sentence)
            sentence_units = content_units(sentence)
            if word in units:
                assert word in sentence_units, (word, sentence)
            keys = cue_units().intersection(sentence_units)
            for chunk in ["住户可以申请车位。", sentence, "都可以" + word]:
                view = ChunkView(chunk)
                assert scope_cue(said, view, None, keys) == scope_cue(said, view)
