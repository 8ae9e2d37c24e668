"""Sentences and their parts (citations/support/sentences.py)."""

import re

import pytest

from citations.stream import CitationStream
from citations.support.sentences import PART_MARKS, sentence_parts, sentence_spans
from citations.support.text import folded


def sentences(text):
    return [text[a:b].strip() for a, b, _ in sentence_spans(text)]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("巡更每2小时一次。发现漏水要上报！会议室在哪？", ["巡更每2小时一次。", "发现漏水要上报！", "会议室在哪？"]),
        ("先拍照；再上报。", ["先拍照；", "再上报。"]),
        (
            "It costs 3.5 dollars. Book it today! Why? Because.",
            ["It costs 3.5 dollars.", "Book it today!", "Why?", "Because."],
        ),
        ("他说：“明天开会。”然后走了。", ["他说：“明天开会。”", "然后走了。"]),
        (
            "步骤如下：\n- 第一步拍照\n- 第二步上报\n1. Call 119\n2) Wait",
            ["步骤如下：", "第一步拍照", "第二步上报", "Call 119", "Wait"],
        ),
        ("| 项目 | 费用 |\n|---|:--:|\n| 停车 | 10元。每小时 |", ["| 项目 | 费用 |", "| 停车 | 10元。每小时 |"]),
        ("Run `a. b. c` now. Done.", ["Run `a. b. c` now.", "Done."]),
        ("Text.\n```\nx = 1. y = 2.\n```\nAfter.", ["Text.", "After."]),
        ("# 标题\n正文。", ["标题", "正文。"]),
    ],
)
def test_sentence_splitting(text, expected):
    assert sentences(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Apple Co. and Mark T. Smith met. They left.", ["Apple Co. and Mark T. Smith met.", "They left."]),
        ("The U.S. team won, e.g. in Rome. Then home.", ["The U.S. team won, e.g. in Rome.", "Then home."]),
        ("It rose 3.5 percent on Jan. 5. Next.", ["It rose 3.5 percent on Jan. 5.", "Next."]),
        ("She came 2. in the race. Then 1. again.", ["She came 2. in the race.", "Then 1. again."]),
        ("I saw J. K. Rowling. She waved.", ["I saw J. K. Rowling.", "She waved."]),
        ("Irene (born Irene H.; July 1909) acted. Next.", ["Irene (born Irene H.; July 1909) acted.", "Next."]),
        ('The case "Brown v. Board" was decided. Next.', ['The case "Brown v. Board" was decided.', "Next."]),
        ("It dates from c. 1491. Next.", ["It dates from c. 1491.", "Next."]),
        (
            "Mowlam had two step-children; Henrietta and Freddie.",
            ["Mowlam had two step-children; Henrietta and Freddie."],
        ),
        ("华为Co.公司成立于1987年。第二句。", ["华为Co.公司成立于1987年。", "第二句。"]),
        ("增长了3.5倍。排名第2.5位。", ["增长了3.5倍。", "排名第2.5位。"]),
        ("他是第1名。她是第2名！", ["他是第1名。", "她是第2名！"]),
        ("先拍照；再上报。", ["先拍照；", "再上报。"]),
        ("Plan B.", ["Plan B."]),
        # a line without ( or " counts nothing at its stops; a line with one counts as before
        ("Rooms close at 9) then. Next.", ["Rooms close at 9) then.", "Next."]),
        ("Open ( here. Still. Closed) now. Next.", ["Open ( here. Still. Closed) now.", "Next."]),
        (
            'It ended. "He said. Yes." Done.\nNo quotes here. Next.',
            ["It ended.", '"He said. Yes." Done.', "No quotes here.", "Next."],
        ),
    ],
)
def test_sentences_do_not_break_at_abbreviations_initials_decimals_or_ordinals(text, expected):
    assert sentences(text) == expected


def test_clauses_do_not_split_inside_numbers():
    assert sentence_parts(folded("巡更从22:00开始，费用1,000元")) == ["巡更从22:00开始", "费用1,000元"]


def test_citations_attach_to_the_sentence_they_end_or_stand_in():
    chunks = [
        {"id": "1", "content": "巡更每2小时一次"},
        {"id": "2", "content": "漏水须上报值班主管"},
        {"id": "3", "content": "Rooms seat 40 people"},
    ]
    stream = CitationStream(chunks)
    stream.feed("巡更每2小时一次。[C:1]漏水须上报值班主管[C:2]。\nRooms seat 40 [C:3].\n[C:1] 巡更每2小时一次。")
    stream.finish()
    result = stream.result()
    assert [c["weak"] for c in result["citations"]] == [False, False, False]
    assert result["uncited_sentences"] == [] and result["citation_recall_proxy"] == 1.0


def test_a_sentence_without_a_separator_is_one_clause():
    """`sentence_parts` answers [] without PART_SPLIT when the sentence holds none of its marks or words; with one,
    it splits as PART_SPLIT does, at any space `\\s` reads (the ones str.split splits at)."""
    assert sentence_parts("the gym desk on floor 3 answers within 5 hours.") == []
    assert sentence_parts("android butter whoever wherein 但") == []  # 但 alone leaves one part
    for space in [chr(c) for c in range(0x3001) if re.fullmatch(r"\s", chr(c))]:
        assert sentence_parts(f"open{space}and{space}closed") == ["open", "closed"]
    for mark in PART_MARKS:
        assert sentence_parts(f"巡更{mark}费用") == ["巡更", "费用"]
    assert sentence_parts("巡更从22:00开始") == []
