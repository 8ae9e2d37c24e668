"""The support check's cost is linear in the answer plus the cited chunks on any input (issue 34, item 2): the
hostile cases of `bench.support_hostile` (a 1,319-character answer against 12,000-character chunks, 30 chunks of
Chinese numerals, a long table line of dashes, …) cost per 1,000 characters about what an ordinary answer costs, and
past the work budget a citation is `unchecked`, never judged by half its rules."""

import re
import signal
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.support_hostile import CASES, per_thousand, seconds, typical
from citations.support import check as support_check
from citations.support.sentences import is_table_rule, sentence_spans
from citations.validate import main

# the bench's target is 2×; a test on two shared cores allows more noise, still far below what a quadratic rule costs
TEST_RATIO = 4.0
CASE_SECONDS = 20  # a case undone back to its quadratic rule runs for minutes: it fails here instead


@pytest.fixture(scope="module")
def typical_cost():
    return min(per_thousand(typical, 1, repeat=3) for _ in range(2))


def timed(case, scale):
    def over(*_):
        raise TimeoutError(f"over {CASE_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, over)
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    try:
        return seconds(case, scale, repeat=2)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_answer_costs_per_character_about_what_an_ordinary_one_does(name, typical_cost):
    best, size, outputs = timed(CASES[name], 1)
    assert outputs["citations"], "the case cites nothing: it would measure nothing"
    assert best / size * 1000 <= TEST_RATIO * typical_cost, (best, size, typical_cost)
    double, double_size, _ = timed(CASES[name], 2)  # and it grows with its input, not with its square
    assert double / double_size <= TEST_RATIO * max(best / size, typical_cost / 1000), (best, double)


def test_the_cases_issue_34_reports_are_in_the_suite():
    answer, chunks = CASES["long_chunks"](1)
    assert 1_319 <= len(answer) <= 1_340 and {len(c["content"]) for c in chunks} == {12_000}
    assert len(CASES["chinese_numerals"](1)[1]) == 30
    assert len(CASES["table_rule"](4)[0]) >= 48_000


def test_a_weak_verdict_found_before_the_budget_ran_out_stays(monkeypatch):
    chunk = {"id": "1", "content": "访客不得进入机房。" + "第1条规定访客须登记。" * 50}
    answer = "会议室在三楼[C:1]。" + "访客可以进入机房[C:1]。" * 20
    before = main(answer, [chunk])["citations"][0]
    assert before["weak"]
    monkeypatch.setattr(support_check, "WORK_BASE", 400_000)
    monkeypatch.setattr(support_check, "WORK_PER_CHARACTER", 0)
    after = main(answer, [chunk])["citations"][0]
    assert after["weak"] and after["support"] is not None and after["reasons"][0]["kind"] != "unchecked"


def test_an_unchecked_citation_counts_in_neither_proxy_pair(monkeypatch):
    monkeypatch.setattr(support_check, "WORK_BASE", 0)
    monkeypatch.setattr(support_check, "WORK_PER_CHARACTER", 0)
    result = main("访客可以进入机房[C:1]。", [{"id": "1", "content": "访客不得进入机房。"}])
    assert result["citation_precision_proxy"] is None and result["citations"][0]["reasons"][0]["kind"] == "unchecked"


RULE_PATTERN = re.compile(r"[ \t]*\|?[ \t:|-]*-[ \t:|-]*")  # the pattern `is_table_rule` replaced


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" \t:|-x", max_size=20))
def test_the_table_rule_test_is_the_pattern_it_replaced(line):
    assert is_table_rule(line) == bool(RULE_PATTERN.fullmatch(line))


def test_a_line_of_stops_inside_a_bracket_is_one_sentence_in_linear_time():
    line = "(" + "It is. Not the end " * 20_000 + "x."
    started = time.perf_counter()
    assert len(sentence_spans(line)) == 1
    assert time.perf_counter() - started < 1.0
