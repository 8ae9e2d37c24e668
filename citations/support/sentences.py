"""Sentences and their parts: where the answer's sentences start and end, which sentence a citation belongs to, and
the clauses of one sentence (docs/support-check.md, "Sentences" and step 4)."""

import re
from bisect import bisect_left
from functools import cache

from citations.support.tables import ABBREVIATIONS
from citations.support.text import holds_any, is_cjk

# a run of 。！？!?；;, or a full stop before a space, the end or a character beyond ASCII, or a run of … before a
# space or the end; with the closing quotes or brackets after it. (A full stop before a character beyond ASCII ends
# a sentence only before a space or a Chinese character, `full_stop_ends`: a set of Chinese characters here would
# cost a Code node's process about 1 ms to compile.)
SENTENCE_END = re.compile(
    r"[。！？!?；;.…](?:(?<![.…])[。！？!?；;]*|(?<=\.)(?=\s|$|[^\x00-\x7f])|(?<=…)…*(?=\s|$))"
    r"[”’\"'）)】」』]*"
)
LINE_MARK = re.compile(r"[ \t]*(?:(?:[-*+]|\d{1,9}[.)]|\d{1,9}、|#{1,6}|>)[ \t]+)*")  # 、 apart: no set beyond Latin-1
WORD_BEFORE_DOT = re.compile(r"[A-Za-z][A-Za-z.]*\Z")
# Parts of a sentence (rule: `sentence_parts`): clauses split at these separators.
# ，；：; , or : not between digits, and|but|…|where between spaces, 但是 但 并且 而且 同时
PART_SPLIT = re.compile(
    r"[，；：]|(?<!\d)[,:](?!\d)|;"
    r"|\s(?:and|but|while|whereas|although|though|which|who|whose|where)\s|但是|但|并且|而且|同时"
)
# what every PART_SPLIT match holds: one of PART_MARKS, or one of PART_WORDS between two spaces (`\s`, the spaces
# str.split splits at)
PART_MARKS = ("，", "；", "：", ",", ":", ";", "但", "并且", "而且", "同时")
PART_WORDS = frozenset("and but while whereas although though which who whose where".split())


@cache
def inline_code():
    return re.compile(r"`[^`\n]*`?")


RULE_CHARACTERS = frozenset(" \t:|-")


def is_table_rule(line):
    """Is a table line its rule (`|---|:--:|`)? Spaces, tabs, colons, bars and at least one dash: what the pattern
    it replaces matched in full (optional blanks and bar, then blanks, colons, bars and dashes around a dash), read
    in one pass (that pattern backtracked: quadratic on a long line of dashes that is no rule after all)."""
    return "-" in line and RULE_CHARACTERS.issuperset(line)


def full_stop_ends(line, dot):
    """Does the full stop at `line[dot]`, which SENTENCE_END found, stand before the end, a space or a Chinese
    character? (The pattern lets any character beyond ASCII follow it.)"""
    after = line[dot + 1 : dot + 2]
    return after.isascii() or after.isspace() or is_cjk(after)


def not_an_end(text, begin, dot, counts=None):
    """Does the . ; ! or ? at `text[dot]` (in a sentence starting at `begin`) end nothing? When a lower-case word
    follows, inside brackets or quotes still open, and for a full stop of an abbreviation (`Co.`, `e.g.`, `U.S.`,
    `v.`) or an initial (`Mark T. Smith`), and for a full stop before a character beyond ASCII that is neither a space
    nor a Chinese character (`full_stop_ends`). `counts`: a `Counts`, None, or False (no ( or " in the line)."""
    if text[dot] == "." and not text[dot + 1 : dot + 2].isascii() and not full_stop_ends(text, dot):
        return True
    following = text[dot + 1 : dot + 3].lstrip()
    if following[:1].islower() and following[:1].isascii():
        return True
    if text[dot] == ";" and following[:1].isascii():
        return True  # an English semicolon joins the clauses of one sentence
    if following and counts is not False:
        opened, closed, quotes = (
            counts.upto(dot)
            if counts
            else (text.count("(", begin, dot), text.count(")", begin, dot), text.count('"', begin, dot))
        )
        if opened > closed or quotes % 2:
            return True
    if text[dot] != ".":
        return False
    word = WORD_BEFORE_DOT.search(text, max(0, dot - 12), dot)
    if word is None:
        return False
    word = word.group()
    if word.replace(".", "").casefold() in ABBREVIATIONS:
        return True
    if len(word) == 1 and word.isupper():
        return bool(following)  # an initial, unless the text ends here
    parts = word.split(".")
    return len(parts) > 1 and all(0 < len(part) <= 2 for part in parts)


class Counts:
    """The ( ) and " of a line from `begin` on, counted once as the reader moves forward: a line with thousands of
    stops that end nothing (`(a. B a. B …`) costs its length, not its length times its stops."""

    def __init__(self, text, begin):
        self.text, self.at, self.opened, self.closed, self.quotes = text, begin, 0, 0, 0

    def upto(self, dot):
        """The counts over text[begin:dot] (dot never goes back)."""
        text, at = self.text, self.at
        if dot > at:
            self.opened += text.count("(", at, dot)
            self.closed += text.count(")", at, dot)
            self.quotes += text.count('"', at, dot)
            self.at = dot
        return self.opened, self.closed, self.quotes


def sentence_spans(text):
    """[(start, end, kind)]: the sentences of `text` — split after 。！？；!?; and a full stop, one per list item,
    heading line or table row; fenced code blocks and table rules are not sentences and inline code is never split."""
    spans = []
    fence = False
    start = 0
    for line in text.split("\n"):
        at, start = start, start + len(line) + 1
        if line.startswith("```"):
            fence = not fence
            continue
        stripped = line.strip()
        if fence or not stripped:
            continue
        if stripped.startswith("|"):
            if not is_table_rule(line):
                spans.append((at, at + len(line), "row"))
            continue
        kind = "heading" if stripped.startswith("#") else "text"
        masked = inline_code().sub(lambda m: "x" * len(m.group()), line) if "`" in line else line
        begin = LINE_MARK.match(line).end()
        counts = None  # made at the sentence's first . ; ! or ? (a Chinese sentence has none)
        bare = "(" not in masked and '"' not in masked
        for end in SENTENCE_END.finditer(masked, begin):
            if masked[end.start()] in ".;!?":
                if counts is None:
                    counts = False if bare else Counts(masked, begin)
                if not_an_end(masked, begin, end.start(), counts):
                    continue
            if end.end() > begin:
                spans.append((at + begin, at + end.end(), kind))
                begin = end.end()
                counts = None
        if line[begin:].strip():
            spans.append((at + begin, at + len(line), kind))
    return spans


def sentence_of(spans, starts, text, position):
    """The index of the sentence a citation at `position` belongs to: the one it ends or stands in; between two
    sentences, the one before when no line break comes between, else the one after. `starts`: the sentences'
    starts."""
    index = bisect_left(starts, position) - 1  # the last sentence starting before `position`
    if index >= 0 and position <= spans[index][1]:
        return index
    after = index + 1 if index + 1 < len(spans) else None
    if index >= 0 and (after is None or "\n" not in text[spans[index][1] : position]):
        return index
    return after


def sentence_parts(text, words=None):
    """The clauses of a sentence (`folded`), when it has two or more; else []. A sentence without a separator is
    one clause: found with `in` and str.split, at a third of what PART_SPLIT costs reading it. `words`: its Latin
    words (WORD_TOKENS), when the caller has them: a word of PART_WORDS between spaces is one of them."""
    if PART_WORDS.isdisjoint(text.split() if words is None else words) and not holds_any(text, PART_MARKS):
        return []
    parts = [part for part in PART_SPLIT.split(text) if part.strip()]
    return parts if len(parts) >= 2 else []
