"""The score of a (sentence, chunk) pair (citations/support/score.py): partial support, the weakest part."""

from itertools import product

from citations.support.chunk import ChunkView
from citations.support.score import cue_word_forms, judge, weakest_part
from citations.support.sentences import sentence_parts
from citations.support.tables import ANTONYMS_EN, SCOPE_EN
from citations.support.text import folded
from citations.support.units import content_units
from citations.support.weights import DEFAULT_WEIGHTS
from citations.support.words import word_forms, words_of, words_saying


def score(sentence, chunk):
    text = folded(sentence)
    return judge(text, content_units(sentence), ChunkView(chunk), None, sentence_parts(text))


def test_the_more_of_a_sentence_is_missing_the_lower_it_scores():
    chunk = "The north wing has 12 meeting rooms with projectors and whiteboards."
    full = score("The north wing has 12 meeting rooms with projectors.", chunk)[0]
    one = score("The north wing has 12 meeting rooms with projectors and coffee machines.", chunk)[0]
    two = score("The north wing has 12 meeting rooms with projectors, coffee machines and standing desks.", chunk)[0]
    assert full > one > two
    assert full >= DEFAULT_WEIGHTS.threshold


def test_a_missing_number_weighs_more_than_a_missing_word():
    chunk = "大会议室可容纳40人，配有投影仪。"
    assert (
        score("大会议室可容纳40人，配有投影仪和音响。", chunk)[0] > score("大会议室可容纳45人，配有投影仪。", chunk)[0]
    )


def test_a_multi_part_sentence_is_pulled_toward_its_weakest_part():
    chunk = "巡更管理规定：夜间巡更从22:00开始，每2小时巡查一次，巡更人员须在每个点位用手持终端打卡。"
    units = content_units("夜间巡更从22:00开始，访客须在前台登记身份证件")
    parts = sentence_parts(folded("夜间巡更从22:00开始，访客须在前台登记身份证件"))
    assert len(parts) == 2
    weakest = weakest_part(units, parts, ChunkView(chunk).units)
    assert weakest is not None and weakest < 0.3  # the second clause is not in the chunk
    whole, _ = judge(folded("夜间巡更从22:00开始，访客须在前台登记身份证件"), units, ChunkView(chunk), None, ())
    with_parts, _ = judge(folded("夜间巡更从22:00开始，访客须在前台登记身份证件"), units, ChunkView(chunk), None, parts)
    assert with_parts < whole


def test_a_part_with_too_little_content_is_not_judged_alone():
    units = content_units("Rooms seat 40 people, yes")
    parts = sentence_parts(folded("Rooms seat 40 people, yes"))
    assert weakest_part(units, parts, ChunkView("Rooms seat 40 people").units) is None


def test_a_word_not_in_cue_word_forms_says_no_word_the_scope_or_antonym_rule_reads():
    """`judge` reads a sentence's `words_of` only when one of its words is in `cue_word_forms`: every word whose
    forms hold a SCOPE_EN or ANTONYMS_EN word must be in it (each is the word and at most three letters more)."""
    wanted = SCOPE_EN.union(*ANTONYMS_EN)
    endings = [""] + ["".join(letters) for size in (1, 2, 3) for letters in product("sdeingx", repeat=size)]
    for word in wanted:
        for said in {word + ending for ending in endings} | {word[:-1] + ending for ending in endings}:
            if wanted.intersection(word_forms(said)):
                assert said in cue_word_forms(), said
    assert words_saying("the desk answers within 5 hours", cue_word_forms()) == set()
    for said in ("the doors opened at 5", "only the desk closes", "the hall is opening"):
        assert words_saying(said, cue_word_forms()) == words_of(said)
