"""The negation cue: the sentence negates what the chunk's matching passage states, or the passage negates what the
sentence states (docs/support-check.md, step 5). A negation word or character counts, minus the words that hold
one without negating (NOT_NEGATIONS: 不仅, 非常, 未来)."""

import re
from functools import cache

from citations.support.tables import NEGATION_BRIDGE, NEGATION_SKIP, NOT_NEGATIONS, STOP_CHARS, STOP_WORDS
from citations.support.text import CJK_RUNS, WORD_TOKENS
from citations.support.units import word_unit
from citations.support.words import said_in

NEGATION_CHARACTERS = frozenset("不没无非未别勿莫")
NEGATION_HINT_EN = re.compile(r"n(?:o|e[vi]|[’']t)|without")  # what every `negated_en` match holds, found fast


@cache
def negation_chars():
    """One of NEGATION_CHARACTERS (compiled on first use: a text with none among its units never needs it)."""
    return re.compile("[不没无非未别勿莫]")


@cache
def negated_zh():
    """没有, or one negation character."""
    return re.compile("[不没无非未别勿莫](?:(?<=没)有)?")


@cache
def negated_en():
    """An English negation word; not "No. 12", "not-for-profit"."""
    return re.compile(
        r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot|[a-z]+n[’']t)\b"
        r"(?!-|\.? ?\d)"
    )


@cache
def negated_around_en():
    """A word, a negation and the word it negates: "pets are not allowed"."""
    return re.compile(r"\b([a-z]+) (not|never|no) ([a-z]{3,})\b")


@cache
def not_negations():
    return re.compile("|".join(NOT_NEGATIONS))


@cache
def clause_end():
    return re.compile(r"[,;:.!?，；：。！？]")


def without_not_negations(text):
    """`text` with the NOT_NEGATIONS words blanked out (each character a space: the positions stay)."""
    return not_negations().sub(lambda m: " " * len(m.group()), text)


def negated(text, latin=True, chars=True):
    """Does `text` (casefolded) hold a negation? (the negation rule; NOT_NEGATIONS words do not count) `latin`,
    `chars`: False when the caller knows the text holds no Latin letter (`LATIN`), and so no English negation, or
    no NEGATION_CHARACTERS (none among its units)."""
    if chars and negation_chars().search(text) and negation_chars().search(not_negations().sub("", text)):
        return True
    return latin and NEGATION_HINT_EN.search(text) is not None and negated_en().search(text) is not None


def negation_word(text):
    """The first negation of `text` as written (`不`, `没有`, `not`, `didn't`), or None."""
    match = negated_zh().search(without_not_negations(text)) or negated_en().search(text)
    return match.group().strip() if match else None


def negated_thing_cue(sentence_text, passage, view=None):
    """When both negate: the sentence negates X (不X, 没有X) and the passage states X without a negation just
    before it (没有握…手 against 也握了她的手): {"kind": "negation", "claim": "没有握"}; else None."""
    cleared = without_not_negations(sentence_text)
    passage_cleared = without_not_negations(passage)
    held = Held(passage_cleared, view)
    for match in negated_zh().finditer(cleared):
        at = match.end()
        while at < len(cleared) and cleared[at] in NEGATION_BRIDGE:
            at += 1
        for size in (2, 1):  # what it negates: two characters, else one that is no stop character (没有握…)
            thing = cleared[at : at + size]
            if len(thing) < size or not CJK_RUNS.fullmatch(thing) or (size == 1 and thing in STOP_CHARS):
                continue
            if held.holds(thing) and not held.negated_somewhere(thing):
                return {"kind": "negation", "claim": sentence_text[match.start() : at + size]}
            if held.holds(thing):
                break
    return None


class Held:
    """What one text holds, for the negation rule's loops over the other side's negations: whether it holds a one- or
    two-character string (its set of those, made on first use) and `negated_somewhere` / `negated_before` per word,
    each found once. Asked for every negation of a long text, they would read the whole other text each time
    (quadratic); this way a word's places are read once, and all words' places add up to the text's length."""

    def __init__(self, text, view=None):
        self.text = text
        self._view = view  # the chunk's view, whose work budget pays for the reading (None: no bound)
        self._grams = None
        self._somewhere = {}
        self._before = {}

    def holds(self, thing):
        if len(thing) > 2:
            return thing in self.text
        if self._grams is None:
            text = self.text
            self.spend(len(text) * 150)
            self._grams = set(text) | {text[i : i + 2] for i in range(len(text) - 1)}
        return thing in self._grams

    def spend(self, units):
        if self._view is not None:
            self._view.spend(units)

    def negated_somewhere(self, word):
        self.spend(300)
        if word not in self._somewhere:
            self.spend(self.text.count(word) * 600 + len(self.text) // 4)
            self._somewhere[word] = negated_somewhere(self.text, word)
        return self._somewhere[word]

    def negated_before(self, word):
        if word not in self._before:
            self.spend(self.text.count(word) * 600 + len(self.text) // 4)
            self._before[word] = negated_before(self.text, word)
        return self._before[word]


def negated_somewhere(text, word):
    """Does a negation stand just before some place `word` occurs in `text`?"""
    start = text.find(word)
    while start >= 0:
        if negation_chars().search(text, max(0, start - 3), start):
            return True
        start = text.find(word, start + 1)
    return False


def negated_before(text, word):
    """Does a negation stand just before every place `word` occurs in `text` (不收费 is 免费)?"""
    start = text.find(word)
    if start < 0:
        return False
    while start >= 0:
        if not negation_chars().search(text, max(0, start - 3), start):
            return False
        start = text.find(word, start + 1)
    return True


def negation_cue(sentence_text, view, passage, said=None):
    """{"kind": "negation", "claim": w} when the sentence negates (w) and the chunk's matching passage does not;
    {"kind": "negation", "source": "不X"} when the passage negates X (`不X`, `没有X`, `not X`), the sentence
    says X and negates nothing. (A negation only in the passage, without X in the sentence, is no cue: it is
    how paraphrases often read: 不好 / 差.)"""
    said = negated(sentence_text) if said is None else said
    if said:
        if negated(passage):
            return negated_thing_cue(sentence_text, passage, view)
        if negation_chars().search(not_negations().sub("", sentence_text)):
            return {"kind": "negation", "claim": negation_word(sentence_text)}
        # English: the negated word itself must stand in the passage ("do not need" against "need"); a negation
        # whose word the passage lacks is a paraphrase at least as often as a contradiction (WiCE dev); and where
        # the chunk says the same negated phrase elsewhere ("he hasn't done" in a quote), the negation is its own
        passage_units = None
        for match in negated_en().finditer(sentence_text):
            rest = []  # the negated word and the word after it: words starting within 40 characters
            for word in WORD_TOKENS.finditer(sentence_text, match.end()):
                if word.start() >= match.end() + 40 or len(rest) == 2:
                    break
                if word.group() not in STOP_WORDS and word.group() not in NEGATION_SKIP:
                    rest.append(word)
            if rest:
                if passage_units is None:
                    view.spend(len(passage) * 60)
                    passage_units = set(map(word_unit, WORD_TOKENS.findall(passage)))
                negated_word = rest[0].group()
                end = rest[0].end()  # the phrase runs to the word after the negated one, within the clause
                if len(rest) == 2 and not clause_end().search(sentence_text, end, rest[1].start()):
                    end = rest[1].end()
                if word_unit(negated_word) in passage_units and not said_in(
                    view.word_line(), sentence_text[match.start() : end]
                ):
                    return {"kind": "negation", "claim": f"{match.group()} {negated_word}"}
        return None
    if not view.negated():
        return None
    cleared = without_not_negations(passage)
    held = Held(cleared, view)
    for match in negated_zh().finditer(cleared):
        view.spend(2000)
        at = match.end()
        while at < len(cleared) and cleared[at] in NEGATION_BRIDGE + "得准":
            at += 1
        thing = cleared[at : at + 2]
        if len(thing) == 2 and CJK_RUNS.fullmatch(thing) and thing in sentence_text and held.negated_before(thing):
            return {"kind": "negation", "source": cleared[match.start() : at + 2]}
    for match in negated_around_en().finditer(passage):  # "pets are not allowed" against "pets are allowed"
        view.spend(3000)
        before, negation, after = match.groups()
        if re.search(rf"\b{re.escape(before)} {re.escape(after)}\b", sentence_text):
            return {"kind": "negation", "source": f"{negation} {after}"}
    return None
