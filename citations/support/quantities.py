"""Numbers with what they count: the word or characters after a number (its unit or thing) and the word before it,
and a quantity's value in the other units of its kind (UNIT_SCALE: 460 mm is also 46 cm)."""

import re
from functools import cache

from citations.support.tables import UNIT_SCALE
from citations.support.text import is_cjk
from citations.support.units import number_unit

# a number and what follows it: its unit or thing, read by `thing_key` and `unit_name`: %, a Latin word, or at most two
# characters beyond ASCII (no digit, no space), of which the Chinese ones count. (A set of Chinese characters here
# would cost a Code node's process about 1 ms to compile.)
NUMBER_AFTER = re.compile(r"(\d\d*(?:\.\d+)?)\s*(%|[A-Za-z]+|[^\x00-\x7f\d\s]{1,2})?")


@cache
def number_before():
    """A word and the number right after it (floor 7)."""
    return re.compile(r"(?<![A-Za-z])([A-Za-z]+)\s+(\d+(?:\.\d+)?)")  # from a word's start: linear


@cache
def unit_names():
    """{kind: [(unit name, its size), …]}: UNIT_SCALE by kind."""
    names = {}
    for name, (kind, scale) in UNIT_SCALE.items():
        names.setdefault(kind, []).append((name, scale))
    return names


def unit_name(thing):
    """The unit in UNIT_SCALE a number's following word or characters (NUMBER_AFTER's second group) name, else
    None."""
    if thing in UNIT_SCALE:
        return thing
    return thing[0] if thing and thing[0] in UNIT_SCALE and not thing.isascii() else None


def thing_key(thing):
    """What a number counts, for comparing numbers: a word's first five letters, a Chinese measure's character; ""
    for nothing (what follows the number is no word and starts with no Chinese character)."""
    return thing[:5] if thing.isascii() else thing[0] if is_cjk(thing[0]) else ""


def converted_numbers(found):
    """The number units the quantities among `found` ((number, following word) pairs, casefolded) take in the other
    units of their kind (460 mm -> #46, #0.46)."""
    units = set()
    for number, thing in set(found):
        name = unit_name(thing)
        if name is None:
            continue
        kind, scale = UNIT_SCALE[name]
        value = float(number) * scale
        for _other, other_scale in unit_names()[kind]:
            if other_scale == scale:  # the same unit (m, 米): the number itself
                continue
            converted = value / other_scale
            for digits in (0, 1, 2):
                rounded = round(converted, digits)
                if rounded and abs(rounded - converted) <= abs(converted) * 0.03:
                    units.add(number_unit(f"{rounded:.{digits}f}"))
                    break
    return units
