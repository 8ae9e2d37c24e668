"""The antonym cue (citations/support/antonym.py)."""

from citations.support.antonym import antonym_candidates, antonym_cue, compounds_zh
from citations.support.chunk import ChunkView
from citations.support.score import cue_units
from citations.support.text import folded
from citations.support.units import content_units
from citations.support.words import words_of
from citations.validate import main


def cite(sentence, chunk, question=""):
    """The citation the node gives a one-sentence answer citing `chunk` as chunk 1."""
    return main(f"{sentence}[C:1]", [{"id": "1", "content": chunk}], question=question)["citations"][0]


def kinds(citation):
    return [reason["kind"] for reason in citation["reasons"]]


def test_antonym_cue_chinese():
    citation = cite("该市的人均收入居全省之末。", "该市的人均收入居全省之首，连续五年增长。")
    assert citation["weak"]
    assert {"kind": "antonym", "claim": "末", "source": "首"} in citation["reasons"]
    assert "antonym: 末/首" in citation["reason"]


def test_antonym_cue_english():
    citation = cite(
        "The permit must be renewed after the inspection.",
        "The permit must be renewed before the inspection takes place.",
    )
    assert {"kind": "antonym", "claim": "after", "source": "before"} in citation["reasons"]


def test_no_antonym_cue_when_the_passage_says_both_or_the_sentence_says_both():
    text = folded("访问量有增加也有减少")
    assert antonym_candidates(text, content_units(text), ChunkView("访问量增加")) == []
    one = folded("访问量增加")
    candidates = antonym_candidates(one, content_units(one), ChunkView("访问量先增加后减少"))
    assert candidates and antonym_cue(candidates, "访问量先增加后减少") is None


def test_no_antonym_cue_for_a_negated_opposite_or_a_compound():
    assert "antonym" not in kinds(cite("公共区域的设施维修是免费的。", "维修收费：公共区域设施维修不收费。"))
    assert compounds_zh().search("单次不超过4小时")
    assert "antonym" not in kinds(
        cite("想用大会议室，需要提前一天申请。", "大会议室预订须提前1天申请，单次不超过4小时。")
    )


def test_antonym_candidates_from_the_callers_cue_units():
    """Given the sentence's units among `cue_units` (as `judge` gives them), the candidates are the same."""
    for sentence, chunk in [
        ("访问量有增加也有减少", "访问量增加"),
        ("访问量增加", "访问量先增加后减少"),
        ("该市的人均收入居全省之末。", "该市的人均收入居全省之首，连续五年增长。"),
        ("The permit must be renewed after the 检查 before noon.", "The permit must be renewed before 检查."),
        ("价格上涨，气温升高，会议提前结束", "价格下跌，气温降低，会议推迟开始，早晚都行"),
    ]:
        text, units = folded(sentence), content_units(sentence)
        keys = cue_units().intersection(units)
        view = ChunkView(chunk)
        words = words_of(text)
        assert antonym_candidates(text, units, view, words, keys) == antonym_candidates(text, units, view, words)
