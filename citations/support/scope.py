"""The scope cue: the sentence says a word widening or narrowing its claim (all, only, always; 所有, 只, 都: SCOPE_ZH,
SCOPE_EN) that the chunk does not use (docs/support-check.md, step 5)."""

from citations.support.tables import SCOPE_EN, SCOPE_ZH
from citations.support.text import LATIN, WORD_TOKENS
from citations.support.words import words_of


def scope_cue(sentence_text, view, words=None):
    """{"kind": "scope", "claim": w}: the sentence says all/only/always… (SCOPE_ZH, SCOPE_EN) and the chunk does not;
    the first such word of the sentence. `words`: the sentence's `words_of`, when the caller has it (or a set
    holding the same SCOPE_EN words: empty when it says none)."""
    said = (
        []
        if sentence_text.isascii()
        else [
            (sentence_text.find(word), -len(word), word)
            for word in SCOPE_ZH
            if word in sentence_text and not view.holds(word)
        ]
    )
    if words is None and LATIN.search(sentence_text):
        words = words_of(sentence_text)
    if words and not SCOPE_EN.isdisjoint(words):  # `words` holds every word of the sentence (and more forms)
        for match in WORD_TOKENS.finditer(sentence_text):
            if match.group() in SCOPE_EN and match.group() not in view.words():
                said.append((match.start(), -len(match.group()), match.group()))
                break
    # the first, and of two starting there the longer (只能 before 只)
    return {"kind": "scope", "claim": min(said)[2]} if said else None
