"""The reasons a weak citation carries (citations/support/reasons.py)."""

import pytest

from citations.support.check import check_support
from citations.support.chunk import ChunkView
from citations.support.reasons import missing_items, reason_text
from citations.support.weights import DEFAULT_WEIGHTS
from citations.validate import main


def cite(sentence, chunk, question=""):
    """The citation the node gives a one-sentence answer citing `chunk` as chunk 1."""
    return main(f"{sentence}[C:1]", [{"id": "1", "content": chunk}], question=question)["citations"][0]


def test_reason_missing_names_what_the_source_lacks_as_written():
    citation = cite("The shelf is 460 mm deep and made of Oak.", "The shelf is white and easy to clean.")
    assert citation["weak"]
    missing = next(r for r in citation["reasons"] if r["kind"] == "missing")["items"]
    assert missing[0] == "460 mm" and "Oak" in missing
    assert citation["reason"].startswith('missing: ["460 mm"')


@pytest.mark.parametrize(
    "sentence,expected",
    [
        ("Up 5% on 1,000 fans in the B2 league.", ["5%", "1000", "fans", "league"]),
        ("步行2公里到达", ["2公里", "步行", "到达"]),
        ("In 2015 he finished 9th.", ["2015", "9", "finished"]),
    ],
)
def test_reason_missing_shows_a_number_with_its_unit_only(sentence, expected):
    assert missing_items(sentence, ChunkView("B2 上 nothing")) == expected


def test_reason_missing_chinese_phrases():
    view = ChunkView("巡更人员须在每个点位用手持终端打卡。")
    assert missing_items("巡更人员须填写纸质补签单", view) == ["填写纸质补签单"]


def test_reason_text_formats_every_kind():
    assert (
        reason_text(
            [
                {"kind": "missing", "items": ["460 mm"]},
                {"kind": "negation", "claim": "不"},
                {"kind": "antonym", "claim": "末", "source": "首"},
                {"kind": "number", "claim": "7", "source": "12"},
                {"kind": "roles", "claim": "a比b", "source": "b比a"},
                {"kind": "scope", "claim": "所有"},
            ]
        )
        == 'missing: ["460 mm"]; negation; antonym: 末/首; number: 7 ≠ 12; roles: a比b/b比a; scope: 所有'
    )
    assert reason_text([]) == ""


def test_a_supported_citation_carries_no_reason_and_the_keys_stay():
    citation = cite("大会议室可容纳40人。", "A座3楼的大会议室可容纳40人，配有投影仪。")
    assert not citation["weak"] and citation["reasons"] == [] and citation["reason"] == ""
    assert {"index", "id", "count", "support", "weak", "reasons", "reason"} <= set(citation)


def test_the_reason_is_the_lowest_scoring_sentences():
    chunks = [{"id": "1", "content": "A座3楼的大会议室可容纳40人，配有投影仪。"}]
    result = check_support(
        ["大会议室可容纳40人。", {"ids": ["1"]}, "大会议室可容纳60人。", {"ids": ["1"]}], {1: chunks[0]}
    )
    assert result["support"]["1"] < DEFAULT_WEIGHTS.threshold
    assert {"kind": "number", "claim": "60", "source": "40"} in result["reasons"]["1"]
