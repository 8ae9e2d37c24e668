"""How the support check reads text: `normal_form` (NFKC, a shortened second year written out) on the sentence's,
the chunk's and the question's side alike, and the token patterns every part of the check shares.

A pattern the check does not need on every answer is compiled on first use, by a small cached function: the
validator Code node compiles its patterns in a fresh process at every run, where a set of characters beyond
Latin-1 costs about 0.15 ms to compile and a set of Chinese characters about 1 ms. A pattern run on every sentence
starts with a character or a set where it can (`[X][X]*` for `[X]+`): Python's regex engine then skips ahead to where
a match may start instead of trying every position. The exception is CJK_RUNS, written `[X]+`: its three Chinese
sets would cost the node 2 ms more than the engine's skipping saves the check (about 0.3 ms of a 14,000-character
answer's 15)."""

import re
import unicodedata
from functools import cache

CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"


def holds_any(text, pieces):
    """Does `text` hold one of `pieces`? (A loop of `in`: on a sentence cheaper than a pattern of them, or `any` over a
    generator, and no pattern to compile.)"""
    for piece in pieces:
        if piece in text:
            return True
    return False


def is_cjk(char):
    """Is `char` one of CJK's?"""
    return "\u3400" <= char <= "\u4dbf" or "\u4e00" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff"


CJK_RUNS = re.compile(f"[{CJK}]+")
WORD_TOKENS = re.compile("[A-Za-z\u00c0-\u024f][A-Za-z\u00c0-\u024f]*")  # a run of Latin letters
DIGIT = re.compile(r"\d")
LATIN = re.compile("[a-z]")

# the characters of Chinese text that NFKC changes most often: full-width punctuation, the ideographic space, "…"
COMMON_COMPATIBILITY = tuple((char, unicodedata.normalize("NFKC", char)) for char in "，：；！？（）％～\u3000…")


def nfkc(text):
    """unicodedata.normalize("NFKC", text), without its slow pass in the common case: text NFKC leaves as it is
    (ASCII, most English sentences with a Chinese name) is the result; else once COMMON_COMPATIBILITY's characters
    are replaced by their normal forms, text that NFKC leaves as it is is."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text
    quick = text
    for char, normal in COMMON_COMPATIBILITY:
        if char in quick:
            quick = quick.replace(char, normal)
    return quick if unicodedata.is_normalized("NFKC", quick) else unicodedata.normalize("NFKC", text)


@cache
def year_range():
    """A year, a dash and two digits (2018–19: a season or a school year), not inside a longer run of numbers
    (2010-12-01)."""
    return re.compile(r"(?<![\d.,/–-])\b(1[5-9]|20)(\d\d)( ?[–-] ?)(\d\d)\b(?![–/.,-]\d)")


def full_year(match):
    """A `year_range` match with its second year written out when it is the year after the first (2018–19,
    1999–00), else as it is (2010-12 may be a month; 1987-89 stays as written)."""
    year = int(match.group(1) + match.group(2))
    if (year + 1) % 100 != int(match.group(4)):
        return match.group()
    return f"{year}{match.group(3)}{year + 1}"


def normal_form(text):
    """Text as the check reads it: NFKC, a shortened second year written out (2018–19 -> 2018–2019)."""
    text = nfkc(text)
    return year_range().sub(full_year, text) if "–" in text or "-" in text else text


def folded(text):
    """Text as the cue rules read it: `normal_form`, casefolded."""
    return normal_form(text).casefold()
