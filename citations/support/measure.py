"""The measure cue, a kind of number cue: the chunk gives the sentence's number with another month (March 1 / May 1)
or with another unit of its kind that is no conversion of it (5 km / 5 miles; docs/support-check.md, step 5)."""

import re
from functools import cache

from citations.support.quantities import NUMBER_AFTER, unit_name
from citations.support.tables import MONTH_NAMES, MONTHS, UNIT_SCALE
from citations.support.text import LATIN, holds_any
from citations.support.units import number_unit, word_unit


@cache
def short_measure():
    r"""What `content_units` drops (a one-letter unit after a number, the stop word "may"):
    \d\s?(?:m|g|t|l|h|in)\b|\bmay\b, written to start with a set."""
    return re.compile(r"[\dm](?:(?<=\d)\s?(?:m|g|t|l|h|in)\b|(?<=\bm)ay\b)")


@cache
def month_number():
    """A month and a number after it (march 1, march 2017), or a day and a month after it (1 march)."""
    return re.compile(rf"\b({'|'.join(MONTHS)})[a-z]*\.? (\d{{1,4}})\b|\b(\d{{1,2}}) ({'|'.join(MONTHS)})[a-z]*\b")


@cache
def measure_hints():
    """The units (see `content_units`) that let `measure_cue` find something: a unit's or a month's name."""
    return frozenset(
        [word_unit(name) for name in UNIT_SCALE if name.isascii()]
        + [name if len(name) < 3 else name[:2] for name in UNIT_SCALE if not name.isascii()]
        + [word_unit(month) for month in MONTH_NAMES]
    ) - {""}


@cache
def unit_names_zh():
    """UNIT_SCALE's names beyond ASCII (米, 公里): `unit_name` finds one at the start of what follows a number
    when that is beyond ASCII."""
    return frozenset(name for name in UNIT_SCALE if not name.isascii())


def after_a_number(text, words):
    """Does one of `words` stand right after a number in `text`, or after a number and spaces, where NUMBER_AFTER
    reads what a number counts? (Its digits are `\\d`, which str.isdecimal reads alike, its spaces `\\s`, which
    str.isspace does.)"""
    for word in words:
        at = text.find(word)
        while at >= 0:
            before = at - 1
            while before >= 0 and text[before].isspace():
                before -= 1
            if before >= 0 and text[before].isdecimal():
                return True
            at = text.find(word, at + 1)
    return False


def month_numbers(text):
    """{(number, month): None} of the dates in a casefolded text (`march 1`, `1 march`, `march 2017`), in the
    text's order."""
    if not holds_any(text, MONTHS):  # `month_number` needs a month's first three letters
        return {}
    return dict.fromkeys(
        (number_unit(number or day), month or month_after)
        for month, number, day, month_after in month_number().findall(text)
    )


def measure_cue(sentence_text, view, hinted=None, latin=None):
    """{"kind": "number", "claim": "march 1", "source": "may 1"} when the chunk gives the sentence's number with
    another month, or {"claim": "5 km", "source": "5 miles"} with another unit of its kind (and never as the
    sentence writes it, nor as its conversion). `hinted`: the sentence's units among `measure_hints`, when the
    caller has them (its `content_units`, which hold each unit name beyond ASCII it says); `latin`: whether the
    sentence holds a Latin letter (`LATIN`), when the caller knows."""
    latin = LATIN.search(sentence_text) if latin is None else latin
    said = month_numbers(sentence_text) if latin else None  # a month and a number to compare
    if said:
        chunk = view.memo("month_numbers", lambda: month_numbers(view.text))  # once per chunk
        for number, month in said:
            if (number, month) in chunk:
                continue
            other = sorted(m for n, m in chunk if n == number and m != month)
            if other:
                return {"kind": "number", "claim": f"{month} {number[1:]}", "source": f"{other[0]} {number[1:]}"}
    if not latin and not after_a_number(sentence_text, unit_names_zh() if hinted is None else hinted):
        return None  # without a Latin letter only a unit's name beyond ASCII can follow a number, and none does
    for number, thing in NUMBER_AFTER.findall(sentence_text):
        name = unit_name(thing) if thing else None
        if name is None:
            continue
        unit = number_unit(number)
        kind, scale = UNIT_SCALE[name]
        same = view.quantities().get(unit)
        if not same or name in same or any(UNIT_SCALE[other][1] == scale for other in same):
            continue  # the chunk lacks the number, or gives it in this unit (found at once) or one of its size
        if unit in view.converted():
            continue  # or it is a conversion of another of its quantities
        for other in sorted(same):
            if UNIT_SCALE[other][0] == kind:
                return {"kind": "number", "claim": f"{number} {name}", "source": f"{number} {other}"}
    return None
