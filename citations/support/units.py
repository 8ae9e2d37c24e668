"""Content units: what the support check counts of a text, and what each weighs (docs/support-check.md, step 1).

The characters and character bigrams of Chinese runs, English word stems, numbers and codes (`#…`: number words
and Chinese numerals before a measure word count as numbers). `content_units` weighs them for a sentence
(`Weights`); `unit_set` gives a chunk's side, without weights."""

import re
from functools import cache, lru_cache

from citations.support.tables import EN_NUMBERS, GENERIC_WORDS, GENERIC_ZH, STOP_CHARS, STOP_WORDS, ZH_DIGITS
from citations.support.text import CJK_RUNS, WORD_TOKENS, normal_form
from citations.support.weights import DEFAULT_WEIGHTS

# Patterns applied to every sentence start with a character or a set of characters where they can: Python's regex
# engine then skips ahead to where a match may start instead of trying every position (several times faster).
THOUSANDS = re.compile(r",(?<=\d,)(?=\d{3}(?!\d))")  # a comma between digits, three follow: 1,000
CODE_HINT = re.compile(r"\d(?:(?<=[A-Za-z]\d)|(?=[A-Za-z]))")  # a digit beside a letter: a code's sign, found fast
NUMBER_TOKENS = re.compile(r"\d\d*(?:\.\d+)?")  # digits, with a decimal part
# a run of Chinese numerals, which counts as a number before a measure word (三十个, 两天: ZH_MEASURE). Found as a whole
# run and the next character tested: a pattern with the measure word as a lookahead would read a long run without
# one again from each of its characters (quadratic).
ZH_NUMERALS = "零一二两三四五六七八九十百千"
ZH_NUMBER = re.compile(f"[{ZH_NUMERALS}][{ZH_NUMERALS}]*")
ZH_MEASURE = frozenset("个天次楼层人元分年月日点号周岁小倍位条")


def zh_numbers(text):
    """`text` with each run of Chinese numerals before a measure word written in digits."""
    return ZH_NUMBER.sub(zh_digits, text)


def zh_digits(match):
    """A ZH_NUMBER match in digits when a measure word follows it, else as it is."""
    end, text = match.end(), match.string
    return str(zh_number(match.group())) if end < len(text) and text[end] in ZH_MEASURE else match.group()


@cache
def code_tokens():
    """A code: letters and a digit, or digits and a letter (B2, GB50016, 3rd); looked for where CODE_HINT finds one."""
    return re.compile(r"\b(?:[A-Za-z]+\d[A-Za-z0-9]*|\d+[A-Za-z][A-Za-z0-9]*)")


@cache
def ordinal():
    return re.compile(r"(?<=\d)(?:st|nd|rd|th|d)$", re.IGNORECASE)


def zh_number(text):
    """A Chinese numeral (below 10,000, made of ZH_DIGITS and 十百千) as an int."""
    total = digit = 0
    for char in text:
        if char in ZH_DIGITS:
            digit = ZH_DIGITS[char]
        else:
            unit = {"十": 10, "百": 100, "千": 1000}[char]
            total += (digit or 1) * unit
            digit = 0
    return total + digit


def number_words(words, exact):
    """`words` without the number words, which go into `exact` as numbers ("twenty five" -> #25)."""
    kept = []
    skip = False
    for position, word in enumerate(words):
        if skip:
            skip = False
            continue
        value = EN_NUMBERS.get(word.casefold())
        if value is None:
            kept.append(word)
            continue
        if value >= 20 and position + 1 < len(words) and 0 < EN_NUMBERS.get(words[position + 1].casefold(), 10) < 10:
            value += EN_NUMBERS[words[position + 1].casefold()]
            skip = True
        exact.add(f"#{value}")
    return kept


WORD_UNITS = {}  # word -> its unit ("" for a stop word), a bounded cache
PLAIN_WORDS = set()  # words as written whose casefold is no number word (EN_NUMBERS), a bounded cache
MAX_PLAIN_WORDS = 20_000
INFLECTIONS = ("ing", "ed", "es", "s")
VOWELS = frozenset("aeiou")


def stem(word):
    """A lower-case word without its inflection, folded, in its first five letters: -ing, -ed, -es or -s comes off
    when three letters stay (not the -s of -ss), then a doubled final consonant (`banned`), a final e (`write`) or
    y (`study` -> `studi`): `opens`, `opened`, `opening` are all `open`; `writes`, `writing` both `writ`."""
    if len(word) > 3:
        for ending in INFLECTIONS if word.endswith(INFLECTIONS) else ():  # most words end in none: no loop
            if word.endswith(ending) and len(word) - len(ending) >= 3 and not (ending == "s" and word.endswith("ss")):
                word = word[: -len(ending)]
                if ending in ("ing", "ed") and word[-1] == word[-2] and word[-1] not in VOWELS and word[-1] not in "ls":
                    word = word[:-1]
                break
        if len(word) > 3 and word[-1] == "e":
            word = word[:-1]
        elif len(word) > 3 and word[-1] == "y":
            word = word[:-1] + "i"
    return word[:5]


GENERIC_UNITS = frozenset(map(stem, GENERIC_WORDS))


def word_unit(word):
    """A lower-case word's unit: its `stem`; "" for a stop word."""
    unit = WORD_UNITS.get(word)
    if unit is None:
        unit = "" if word in STOP_WORDS or len(word) < 2 else stem(word)
        if len(WORD_UNITS) < 20_000:
            WORD_UNITS[word] = unit
    return unit


# the kinds of word `word_kinds` gives: the indexes of their weights in `Weights.word_weights`
GENERIC, NAME, LONG, SHORT = range(4)


@lru_cache(maxsize=20_000)
def word_kinds(word):
    """(unit, kind inside a sentence, kind as a sentence's first word) of a word as written: GENERIC for a generic
    word, NAME for a capitalised word inside a sentence, LONG for a longer word, else SHORT. What a kind weighs is
    the caller's `Weights` (`word_weights`): the cache holds no weight."""
    unit = word_unit(word.casefold())
    first = GENERIC if unit in GENERIC_UNITS else LONG if len(word) > 4 else SHORT
    inside = NAME if word[0].isupper() and unit not in GENERIC_UNITS else first
    return unit, inside, first


def number_unit(number):
    """`#` and the number without leading or trailing zeros (`08` -> `#8`, `3.50` -> `#3.5`)."""
    if number[0] != "0" and "." not in number:
        return "#" + number
    whole, _, fraction = number.partition(".")
    fraction = fraction.rstrip("0")
    return "#" + (whole.lstrip("0") or "0") + ("." + fraction if fraction else "")


def content_units(text, question=None, normalized=False, weights=DEFAULT_WEIGHTS):
    """{unit: weight} of a sentence: a Chinese character weighs `weight_char`, a bigram 1 (0.5 with a stop
    character, nothing with two, `weight_generic` for a generic word), a word by its kind (`word_kinds`), a number
    or a code `weight_exact`; units the question holds (`question`: a `unit_set`) `weight_question` times that.
    `normalized`: the text is in `normal_form` already (as the sentences and chunks are; a question is put in it
    here, to be read the same way). With weights=None, the set of units (`unit_set`)."""
    if not normalized:
        text = normal_form(text)
    if "," in text:
        text = THOUSANDS.sub("", text)
    ascii_only = text.isascii()  # no Chinese numeral, run or stop character to look for (str.isascii costs nothing)
    if not ascii_only:
        text = zh_numbers(text)
    exact = set()
    numbers = NUMBER_TOKENS.findall(text)
    words = WORD_TOKENS.findall(text)
    if numbers:  # numbers and codes (a code holds a digit and a Latin letter, which a text without words lacks)
        codes = code_tokens().findall(text) if words and CODE_HINT.search(text) else None
        if codes:
            text = code_tokens().sub(" ", text)
            exact.update(
                number_unit(ordinal().sub("", code))
                if ordinal().search(code) and ordinal().sub("", code).isdigit()
                else "#" + code.casefold()
                for code in codes
            )
            numbers = NUMBER_TOKENS.findall(text)
            words = WORD_TOKENS.findall(text)
        exact.update(
            {"#" + number if number[0] != "0" and "." not in number else number_unit(number) for number in set(numbers)}
        )
    runs = [] if ascii_only else CJK_RUNS.findall(text)
    grams = {run[i : i + 2] for run in runs for i in range(len(run) - 1)}
    if weights is None:  # a long text repeats its words: each distinct word is read once
        distinct = set(words)
        if distinct and not EN_NUMBERS.keys().isdisjoint(map(str.casefold, distinct)):
            distinct = set(number_words(words, exact))
        units = grams | exact
        units.update("".join(runs))
        units.update({word_kinds(word)[0] for word in distinct})
        units.discard("")
        return units
    if words and not PLAIN_WORDS.issuperset(words):  # a word not known to be no number word
        if EN_NUMBERS.keys().isdisjoint(map(str.casefold, words)):
            if len(PLAIN_WORDS) < MAX_PLAIN_WORDS:  # at most the room left: one sentence may hold many words
                PLAIN_WORDS.update(words[: MAX_PLAIN_WORDS - len(PLAIN_WORDS)])
        else:
            words = number_words(words, exact)
    units = dict.fromkeys(grams, 1.0)
    if runs:
        chars = set(runs[0]) if len(runs) == 1 else set("".join(runs))
        units.update(dict.fromkeys(chars - STOP_CHARS, weights.weight_char))
        stops = chars & STOP_CHARS
        if stops:  # a bigram with one stop character weighs 0.5, with two nothing
            # strip: the bigram itself without a stop, "" with two (gram[0] would make a string to hash)
            marks = "".join(stops)
            for gram in [gram for gram in grams if gram.strip(marks) != gram]:
                if gram.strip(marks):
                    units[gram] = 0.5
                else:
                    del units[gram]
        for gram in GENERIC_ZH.intersection(grams):
            units[gram] = weights.weight_generic
    if words:
        word_weights = weights.word_weights
        for position, word in enumerate(words):
            unit, inside, first = word_kinds(word)
            if unit:
                weight = word_weights[inside if position else first]
                if units.get(unit, 0.0) < weight:
                    units[unit] = weight
    if exact:
        units.update(dict.fromkeys(exact, weights.weight_exact))
    if question:
        for unit in units.keys() & question:
            units[unit] *= weights.weight_question
    return units


def unit_set(text, normalized=False):
    """The set of a text's units (a chunk's side, or a question's)."""
    return content_units(text, None, normalized, None)


def is_chinese(units):
    """Do Chinese characters and bigrams carry more than half of a sentence's weight? (`Weights.zh_scale`)"""
    chinese = total = 0.0
    for unit, weight in units.items():
        total += weight
        if unit >= "\u3400":  # its first character (a unit is never empty), without making it a string
            chinese += weight
    return chinese * 2 > total
