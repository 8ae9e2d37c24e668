"""The number cue: a number of the sentence the chunk lacks, where the chunk has another number for the same thing
(the same word right after it, or right before it: docs/support-check.md, step 5)."""

from citations.support.quantities import NUMBER_AFTER, number_before, thing_key
from citations.support.units import number_unit


def plainest(numbers):
    """Of the chunk's number units for one thing, the one a reason shows: the shortest, then the lowest."""
    return min(numbers, key=lambda unit: (len(unit), float(unit[1:]), unit))


def number_cue(sentence_text, units, view):
    """{"kind": "number", "claim": n, "source": m}: a number of the sentence the chunk lacks, where the chunk has
    another number for the same thing (the same word right after it, or right before it)."""
    chunk_numbers = None
    for number, thing in NUMBER_AFTER.findall(sentence_text):
        unit = number_unit(number)
        key = thing_key(thing)
        if unit in view.units or not key:
            continue
        chunk_numbers = chunk_numbers if chunk_numbers is not None else view.numbers()
        other = chunk_numbers.get(key)
        if other:
            return {"kind": "number", "claim": number, "source": plainest(other)[1:]}
    for thing, number in number_before().findall(sentence_text):
        unit = number_unit(number)
        if unit in view.units:
            continue
        chunk_numbers = chunk_numbers if chunk_numbers is not None else view.numbers()
        other = chunk_numbers.get("^" + thing[:5])
        if other:
            return {"kind": "number", "claim": number, "source": plainest(other)[1:]}
    return None
