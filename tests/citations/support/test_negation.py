"""The negation cue (citations/support/negation.py)."""

import pytest

from citations.support.chunk import ChunkView
from citations.support.negation import negated, negated_thing_cue, negation_cue, not_negations
from citations.support.text import LATIN, folded
from citations.support.units import content_units
from citations.validate import main


def cite(sentence, chunk, question=""):
    """The citation the node gives a one-sentence answer citing `chunk` as chunk 1."""
    return main(f"{sentence}[C:1]", [{"id": "1", "content": chunk}], question=question)["citations"][0]


def kinds(citation):
    return [reason["kind"] for reason in citation["reasons"]]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("巡更人员不须打卡", True),
        ("系统没有通知主管", True),
        ("访客无需登记", True),
        ("guests do not sign", True),
        ("guests didn't sign", True),
        ("no guest signs", True),
        ("巡更不仅要打卡还要拍照", False),
        ("非常重要", False),
        ("未来三天开放", False),
        ("guests sign the log", False),
        ("nothing", True),
        ("knot", False),
    ],
)
def test_negation_table(text, expected):
    said = folded(text)
    assert negated(said) is expected
    if not LATIN.search(said):  # `judge` tells a text without a Latin letter so: the same answer
        assert negated(said, False) is expected


def test_not_negations_hold_a_negation_character_without_negating():
    for word in ("不仅", "不断", "非常", "未来", "不止"):
        assert not_negations().fullmatch(word)


def test_negation_cue_a_sentence_negating_what_the_source_states():
    citation = cite("巡更人员不需要在点位打卡。", "巡更人员须在每个点位用手持终端打卡。")
    assert citation["weak"] and {"kind": "negation", "claim": "不"} in citation["reasons"]
    english = cite(
        "Tenants do not receive reserved spaces on level B1.", "Each tenant receives two reserved spaces on level B1."
    )
    assert "negation" in kinds(english)


def test_negation_cue_the_source_negating_what_the_sentence_states():
    text = folded("大楼内允许携带宠物")
    view = ChunkView("大楼内不允许携带宠物，导盲犬除外。")
    passage, _ = view.passage(content_units("大楼内允许携带宠物"))
    assert negation_cue(text, view, passage) == {"kind": "negation", "source": "不允许"}
    assert "negation" in kinds(cite("大楼内允许携带宠物。", "大楼内不允许携带宠物，导盲犬除外。"))


def test_negation_cue_when_both_negate_but_not_the_same_thing():
    passage = folded("王琦瑶不由心生感激，于是也握了她的手")
    assert negated_thing_cue(folded("王琦瑶没有握蒋丽莉的手"), passage) == {"kind": "negation", "claim": "没有握"}
    assert negated_thing_cue(folded("访客不能进入机房"), folded("访客不得进入机房")) is None
    citation = cite("王琦瑶没有握蒋丽莉的手。", "王琦瑶不由心生感激，于是也握了她的手。")
    assert "negation" in kinds(citation)


def test_no_negation_cue_when_the_source_also_states_the_word_plainly():
    chunk = "维修完成后业主须在App上确认并评价，未评价的工单7天后自动关闭。"
    assert "negation" not in kinds(cite("业主须在App上确认并评价。", chunk))
    assert "negation" not in kinds(cite("业主不评价的话，工单会在7天后自动关闭。", chunk))


def test_no_negation_cue_when_the_chunk_says_the_same_negated_phrase_elsewhere():
    chunk = (
        'He regrets his vote. "Because he hasn’t done a thing," he said. '
        '"All he has done," Ojeda said, "is take care of the rich people he promised to fight."'
    )
    sentence = "He said that he hasn't done a thing and that he has taken care of the rich people he promised to fight."
    citation = cite(sentence, chunk)  # the passage matching best says "has done": the quote before says "hasn’t done"
    assert citation["reasons"] == [] and citation["support"] == 1.0
    elsewhere = cite(sentence, chunk.replace("hasn’t done a thing", "did nothing"))
    assert elsewhere["weak"] and {"kind": "negation", "claim": "hasn't done"} in elsewhere["reasons"]


def test_a_negation_cue_stands_where_the_chunk_negates_something_else():
    # the same negation and word elsewhere, but about another thing or inside a longer word: the cue stands
    opened = cite(
        "The manager did not open the store on Monday.",
        "The manager opened the store on Monday. She did not openly object to the plan.",
    )
    approved = cite(
        "The council did not approve the plan.",
        "The council approved the plan in May. Residents did not approve of the noise.",
    )
    assert "negation" in kinds(opened) and "negation" in kinds(approved)


def test_the_negated_phrase_is_compared_word_by_word_within_its_clause():
    # spacing, line breaks and punctuation between the words do not matter; the phrase ends with its clause
    for sentence, chunk in (
        ("He hasn't paid the rent.", "Tenants asked. He hasn’t paid the\nrent. He paid  the rent?"),
        ("He hasn't paid; Smith did.", "The landlord asked. He hasn't paid. Smith did."),
    ):
        text = folded(sentence)
        assert negation_cue(text, ChunkView(chunk), folded("He paid the rent, Smith did.")) is None
    far = folded("he hasn't done it as it is, if it was, so extraordinarily.")  # the next word crosses 40 characters
    view = ChunkView('He has done it. "' + far[:-1] + '," Jones said.')
    assert negation_cue(far, view, folded("He has done it.")) is None


def test_no_negation_cue_when_both_negate_or_neither_does():
    view = ChunkView("访客不得进入机房。")
    text = folded("访客不能进入机房")
    assert negation_cue(text, view, view.passage(content_units("访客不能进入机房"))[0]) is None
    plain = ChunkView("访客可以进入大厅。")
    assert negation_cue(folded("访客可以进入大厅"), plain, plain.text) is None
