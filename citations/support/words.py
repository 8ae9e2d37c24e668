"""The Latin words of a text as the cue rules compare them: with their inflected forms (`word_forms`), where a text
first says one (`said_at`), and in a row (`word_line`)."""

from functools import lru_cache

from citations.support.text import WORD_TOKENS


@lru_cache(maxsize=20_000)
def word_forms(word):
    """A casefolded word and its forms without an inflection (-s, -d, -ed, -es, -ing): `closed` holds `close`,
    `opened` holds `open`, `closing` holds `clos` and `close`."""
    if len(word) > 3:
        if word[-1] in "sd":
            return (word, word[:-1], word[:-2]) if len(word) > 4 and word[-2] == "e" else (word, word[:-1])
        if len(word) > 5 and word.endswith("ing"):
            return word, word[:-3], word[:-3] + "e"
    return (word,)


def words_of(text, tokens=None):
    """The words of a casefolded text and their `word_forms`: the antonym and scope rules' view. `tokens`: its
    WORD_TOKENS, when the caller has them."""
    words = set(WORD_TOKENS.findall(text) if tokens is None else tokens)
    if words:
        words.update(*map(word_forms, words))
    return words


def inflections(words):
    """The words whose `word_forms` may hold one of `words`: each as written and with -s, -d, -es, -ed or -ing (-ing
    in place of a final e); a word of no other form has none of them among its forms."""
    return frozenset(
        [word + ending for word in words for ending in ("", "s", "d", "es", "ed", "ing")]
        + [word[:-1] + "ing" for word in words if word.endswith("e")]
    )


def words_saying(text, forms, words=None):
    """`words_of(text)` when one of the text's words is in `forms` (the `inflections` of the words a rule looks
    for), else an empty set: the text says none of those words, in any form. `words`: the text's WORD_TOKENS,
    when the caller has them."""
    words = WORD_TOKENS.findall(text) if words is None else words
    return set() if forms.isdisjoint(words) else words_of(text, words)


def said_at(text, word):
    """Where a casefolded text first says `word`: a Chinese word as written, an English one in any of its
    `word_forms`; len(text) when it does not."""
    if word.isascii():
        for match in WORD_TOKENS.finditer(text):
            if word in word_forms(match.group()):
                return match.start()
        return len(text)
    at = text.find(word)
    return at if at >= 0 else len(text)


def word_line(text):
    """The Latin words of a text, one space between each and around them: what `said_in` compares."""
    return f" {' '.join(WORD_TOKENS.findall(text))} "


def said_in(line, phrase):
    """Does a `word_line` say the words of `phrase` in a row, whatever stands between them (spacing, punctuation,
    either apostrophe: hasn't, hasn’t)?"""
    return word_line(phrase) in line
