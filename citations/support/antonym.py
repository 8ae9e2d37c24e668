"""The antonym cue: the sentence says a word whose opposite stands in the chunk's matching passage, and the passage
does not say the word (ANTONYMS_ZH, ANTONYMS_EN; docs/support-check.md, step 5)."""

import re
from functools import cache

from citations.support.negation import negated_somewhere
from citations.support.tables import ANTONYMS_EN, ANTONYMS_ZH, COMPOUNDS_ZH
from citations.support.text import LATIN
from citations.support.words import said_at, words_of


@cache
def compounds_zh():
    return re.compile("|".join(COMPOUNDS_ZH))


@cache
def opposites():
    """({Chinese word: its opposites}, {English word: [(its opposite, the word as shown, the opposite as shown)]})."""
    zh, en = {}, {}
    for a, b in ANTONYMS_ZH:
        zh.setdefault(a, []).append(b)
        zh.setdefault(b, []).append(a)
    for a, b in ANTONYMS_EN:
        en.setdefault(a, []).append((b, a, b))
        en.setdefault(b, []).append((a, b, a))
    return zh, en


def antonym_candidates(sentence_text, units, view, words=None, keys=None):
    """[(word, opposite, shown, shown opposite)]: antonym-table words of the sentence (its `folded` text and units)
    whose opposite the chunk holds somewhere and the sentence does not (the cheap first step of the antonym rule),
    in the order the sentence says them. `words`: the sentence's `words_of`, when the caller has it (or a set
    holding the same ANTONYMS_EN words: empty when it says none); `keys`: the sentence's units among a set holding
    the Chinese table's words, when the caller has them."""
    opposites_zh, opposites_en = opposites()
    found = []
    # the Chinese table's words are one or two characters: units
    for word in opposites_zh.keys() & (units.keys() if keys is None else keys):
        for other in opposites_zh[word]:
            if other not in sentence_text and view.holds(other):
                found.append((word, other, word, other))
    if words is None and LATIN.search(sentence_text):
        words = words_of(sentence_text)
    if words:
        for word in opposites_en.keys() & words:
            for other, shown, shown_other in opposites_en[word]:
                if other not in words and other in view.words():
                    found.append((word, other, shown, shown_other))
    if len(found) > 1:  # in the sentence's order, never the sets'
        found.sort(key=lambda candidate: (said_at(sentence_text, candidate[0]), candidate))
    return found


def antonym_cue(candidates, passage, view=None):
    """{"kind": "antonym", "claim": a, "source": b}: the sentence says a, the chunk's matching passage says its
    opposite b and not a."""
    passage_words = None
    for said, other, shown, shown_other in candidates:
        if view is not None:  # the work budget (citations.support.chunk.Work): each candidate reads the passage
            view.spend(len(passage) * 60 + passage.count(other) * 600)
        if said.isascii():
            passage_words = passage_words if passage_words is not None else words_of(passage)
            if other in passage_words and said not in passage_words:
                return {"kind": "antonym", "claim": shown, "source": shown_other}
        else:
            plain = compounds_zh().sub(" ", passage) if len(other) == 1 else passage
            if other in plain and said not in plain and not negated_somewhere(plain, other):
                return {"kind": "antonym", "claim": shown, "source": shown_other}
    return None
