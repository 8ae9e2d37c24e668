"""The scope cue (citations/support/scope.py)."""

import pytest

from citations.support.chunk import ChunkView
from citations.support.scope import scope_cue
from citations.support.text import folded


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
