"""The scope cue: the sentence says a word widening or narrowing its claim (all, only, always; 所有, 只, 都: SCOPE_ZH,
SCOPE_EN) that the chunk does not use (docs/support-check.md, step 5)."""

from functools import cache

from citations.support.tables import SCOPE_EN, SCOPE_ZH, STOP_CHARS
from citations.support.text import LATIN, WORD_TOKENS, is_cjk
from citations.support.units import ZH_NUMERALS
from citations.support.words import words_of


@cache
def scope_zh_units():
    """(the SCOPE_ZH words that are units of every sentence saying them, the others). `content_units` keeps a
    Chinese character that is no stop character and a bigram of at most one; a Chinese numeral it may write in
    digits, so a word holding one is among the others."""
    units = frozenset(
        word
        for word in SCOPE_ZH
        if len(word) <= 2
        and all(map(is_cjk, word))
        and not STOP_CHARS.issuperset(word)
        and not any(char in ZH_NUMERALS for char in word)
    )
    return units, tuple(word for word in SCOPE_ZH if word not in units)


def scope_cue(sentence_text, view, words=None, keys=None):
    """{"kind": "scope", "claim": w}: the sentence says all/only/always… (SCOPE_ZH, SCOPE_EN) and the chunk does not;
    the first such word of the sentence. `words`: the sentence's `words_of`, when the caller has it (or a set
    holding the same SCOPE_EN words: empty when it says none); `keys`: the sentence's `content_units` among a set
    holding `scope_zh_units`'s first, when the caller has them (then only those words and the others are read)."""
    if sentence_text.isascii():
        said = []
    else:
        units, others = scope_zh_units()
        said = [
            (sentence_text.find(word), -len(word), word)
            for word in (SCOPE_ZH if keys is None else [*units.intersection(keys), *others])
            if word in sentence_text and not view.holds(word)
        ]
    if words is None and LATIN.search(sentence_text):
        words = words_of(sentence_text)
    if words and not SCOPE_EN.isdisjoint(words):  # `words` holds every word of the sentence (and more forms)
        for match in WORD_TOKENS.finditer(sentence_text):
            if match.group() in SCOPE_EN and match.group() not in view.words():
                said.append((match.start(), -len(match.group()), match.group()))
                break
    # the first, and of two starting there the longer (只能 before 只)
    return {"kind": "scope", "claim": min(said)[2]} if said else None
