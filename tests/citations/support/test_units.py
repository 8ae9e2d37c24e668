"""Content units (citations/support/units.py): what the check counts of a text and what each weighs."""

from itertools import product

from citations.support.chunk import ChunkView
from citations.support.tables import GENERIC_WORDS, GENERIC_ZH
from citations.support.units import content_units, is_chinese, stem
from citations.support.weights import DEFAULT_WEIGHTS


def test_generic_words_weigh_less():
    assert "during" in GENERIC_WORDS and "有人" in GENERIC_ZH
    assert content_units("It grew during the war")[stem("during")] == DEFAULT_WEIGHTS.weight_generic
    assert content_units("有人来过")["有人"] == DEFAULT_WEIGHTS.weight_generic


def test_a_word_and_its_inflections_share_one_unit():
    assert {stem(w) for w in ("open", "opens", "opened", "opening")} == {"open"}
    assert {stem(w) for w in ("ban", "bans", "banned", "banning")} == {"ban"}
    assert {stem(w) for w in ("write", "writes", "writing")} == {"writ"}
    assert stem("study") == stem("studies") == stem("studied") == "studi"
    assert stem("class") == "class" and stem("pass") == "pass"  # the -s of -ss stays
    assert stem("was") == "was" and stem("bed") == "bed"  # too short to lose an ending
    assert stem("installation") == "insta"  # then the first five letters
    units = content_units("The school opened in 2016")
    assert "open" in units and "open" in ChunkView("The school opens its doors in 2016.").units


def test_a_bigram_with_stop_characters_weighs_less():
    # 这 个 的 是 are stop characters: a bigram with one weighs 0.5, with two nothing, unless it is a generic word
    # (这个: it comes last, weighing weight_generic); a stop character is no unit of its own
    units = content_units("这个费用的是每次的")
    assert {unit for unit, weight in units.items() if weight == 0.5} == {"个费", "用的", "是每", "次的"}
    assert units["费用"] == units["每次"] == 1.0 and "的是" not in units
    assert {unit for unit in units if len(unit) == 1} == {"费", "用", "每", "次"}
    assert list(units)[-1] == "这个" and units["这个"] == DEFAULT_WEIGHTS.weight_generic


def test_number_words_count_after_their_sentences_other_words_were_seen():
    from citations.support.units import PLAIN_WORDS

    PLAIN_WORDS.clear()  # the cache is the process's: other tests may have filled it
    assert not any(unit[0] == "#" for unit in content_units("Rooms open at the Oaks"))
    assert {"Rooms", "open", "at", "Oaks"} <= PLAIN_WORDS  # known to be no number word
    assert "#2" in content_units("Rooms open at Two Oaks") and "Two" not in PLAIN_WORDS


def test_the_plain_words_cache_stays_within_its_bound():
    from citations.support.units import MAX_PLAIN_WORDS, PLAIN_WORDS

    words = ["".join(letters) for letters in product("bcdfghjklmnpqrstvwxz", repeat=4)]  # 160,000 of no number
    PLAIN_WORDS.clear()
    content_units(" ".join(words[: MAX_PLAIN_WORDS - 10]))
    content_units(" ".join(words[MAX_PLAIN_WORDS : MAX_PLAIN_WORDS + 100]))  # more than the room left
    assert len(PLAIN_WORDS) == MAX_PLAIN_WORDS
    PLAIN_WORDS.clear()


def test_a_unit_is_chinese_by_its_first_character():
    assert is_chinese({"\u3400": 1.0, "#5": 0.9}) and is_chinese({"\u3400\u0041": 1.0, "#5": 0.9})
    assert not is_chinese({"\u33ff\uffff": 1.0, "#5": 0.9}) and not is_chinese({"\u33ff": 1.0, "abc": 1.0})
    assert is_chinese({"会议": 0.5, "会": 1.0, "room": 1.0}) and not is_chinese({"会议": 0.5, "room": 1.0})
