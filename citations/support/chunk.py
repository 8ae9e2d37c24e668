"""The chunk view: what the support check needs of one cited chunk, read once per answer. Its units with paraphrase
tolerance (a chunk holding one word of a synonym group also holds the others; a quantity also holds its value in
the other units of its kind: docs/support-check.md, step 2), and on first use its sentences, words and numbers."""

import re
from functools import cache

from citations.support.negation import NEGATION_CHARACTERS, negated
from citations.support.quantities import NUMBER_AFTER, converted_numbers, number_before, thing_key, unit_name
from citations.support.tables import SYNONYMS_EN, SYNONYMS_ZH, UNIT_SCALE
from citations.support.text import CJK_RUNS, DIGIT, normal_form
from citations.support.units import THOUSANDS, number_unit, stem, unit_set
from citations.support.words import word_line, words_of


@cache
def chunk_sentence():
    return re.compile(r"(?:[^。！？!?；;\n.]|\.(?!\s))+(?:[。！？!?；;\n]+|\.\s+|\.?$)")


def cjk_units(word):
    return set(word) | {word[i : i + 2] for i in range(len(word) - 1)}


@cache
def synonym_groups():
    """({Chinese word: the indexes of its groups in SYNONYMS_ZH}, the Chinese synonyms longer than two characters,
    sorted; {English stem: the stems of its groups}; the Chinese words and English stems together)."""
    groups_zh = {}
    for index, group in enumerate(SYNONYMS_ZH):
        for word in group:
            groups_zh.setdefault(word, []).append(index)
    long_zh = sorted(word for word in groups_zh if len(word) > 2)
    units_en = {}
    for group in SYNONYMS_EN:
        stems = frozenset(map(stem, group))
        for word_stem in stems:
            units_en.setdefault(word_stem, set()).update(stems)
    return groups_zh, long_zh, units_en, frozenset(groups_zh).union(units_en)


@cache
def group_units_zh(index):
    """The units of the words of SYNONYMS_ZH[index] (built on first use: most chunks need few groups)."""
    return frozenset().union(*map(cjk_units, SYNONYMS_ZH[index]))


def expand_chunk(text, units):
    """`units` (a chunk's set, updated in place and returned) plus the units of the synonyms of its words."""
    groups_zh, long_zh, units_en, keys = synonym_groups()
    said = keys.intersection(units)  # the table's words among the units, found before any is added
    if CJK_RUNS.search(text):
        # a one- or two-character word is one of the chunk's units; a longer one is looked for in its text
        for word in [*(groups_zh.keys() & said), *(word for word in long_zh if word in text)]:
            for index in groups_zh[word]:
                units.update(group_units_zh(index))
    for word_stem in units_en.keys() & said:
        units.update(units_en[word_stem])
    return units


class OverBudgetError(Exception):
    """The answer's or the sentence's work budget is spent: the citation being checked is left unchecked."""


class Work:
    """The work budget of one answer's support check and of its current sentence, in units of about a nanosecond
    of this machine's time: `spend` takes from both and raises OverBudgetError once either is spent
    (docs/support-check.md, "Bounded cost"). The rules whose work grows with the answer times a chunk (a passage
    search, a cue reading the passage) spend from it before they read."""

    def __init__(self, answer_units):
        self.left = answer_units
        self.sentence_left = answer_units

    def sentence(self, units):
        """A new sentence, which may spend at most `units` (and what the answer has left)."""
        self.sentence_left = units

    def spend(self, units):
        self.left -= units
        self.sentence_left -= units
        if self.left < 0 or self.sentence_left < 0:
            raise OverBudgetError


class ChunkView:
    """What the support check needs of one chunk: its units (with synonyms and conversions), its casefolded text
    and, on first use, its sentences (where a cue looks for the passage that matches the cited sentence)."""

    def __init__(self, content, budget=None):
        normal = normal_form(content)
        self.text = normal.casefold()
        self.units = expand_chunk(self.text, unit_set(normal, normalized=True))
        self._found = None
        self._converted = None
        self._quantities = None
        self._held = {}
        self._budget = budget  # the answer's Work (shared by the chunks), or None: no bound
        self._memo = {}
        self._sentences = None
        self._negated = None
        self._words = None
        self._word_line = None
        self._numbers = None

    def spend(self, units):
        """Take `units` from the answer's work budget (OverBudgetError once it is spent)."""
        if self._budget is not None:
            self._budget.spend(units)

    def memo(self, key, make):
        """make(), made once per chunk."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def sentences(self):
        if self._sentences is None:
            self._sentences = [m.group() for m in chunk_sentence().finditer(self.text) if m.group().strip()]
        return self._sentences

    def negated(self):
        if self._negated is None:
            # a negation character in the text is one of its units (a character of a Chinese run)
            self._negated = negated(self.text, True, not NEGATION_CHARACTERS.isdisjoint(self.units))
        return self._negated

    def words(self):
        if self._words is None:
            self._words = words_of(self.text)
        return self._words

    def word_line(self):
        if self._word_line is None:
            self._word_line = word_line(self.text)
        return self._word_line

    def numbers(self):
        """{thing: {numbers}}: the numbers of the chunk by the word after them and the word before them."""
        if self._numbers is None:
            self._numbers = {}
            for number, thing in self.found():
                key = thing_key(thing)
                if key:
                    self._numbers.setdefault(key, set()).add(number_unit(number))
            for thing, number in number_before().findall(self.text):
                self._numbers.setdefault("^" + thing[:5], set()).add(number_unit(number))
        return self._numbers

    def holds(self, word):
        """Does the chunk's text hold `word` (remembered per word)?"""
        held = self._held.get(word)
        if held is None:
            held = self._held[word] = word in self.text
        return held

    def found(self):
        """(number, the word or characters after it) pairs of the chunk."""
        if self._found is None:
            self._found = NUMBER_AFTER.findall(THOUSANDS.sub("", self.text)) if DIGIT.search(self.text) else []
        return self._found

    def quantities(self):
        """{number unit: {unit names}}: the chunk's numbers followed by a unit of UNIT_SCALE."""
        if self._quantities is None:
            self._quantities = {}
            for number, thing in self.found():
                name = thing if thing in UNIT_SCALE else None if thing.isascii() else unit_name(thing)  # inlined
                if name is not None:
                    self._quantities.setdefault(number_unit(number), set()).add(name)
        return self._quantities

    def converted(self):
        """The number units of the chunk's quantities in the other units of their kind."""
        if self._converted is None:
            self._converted = converted_numbers(self.found())
        return self._converted

    def passage(self, units):
        """(the chunk sentence holding the most of `units`, a sentence's weighted units; the share it holds).
        Spends from the work budget first (it reads the chunk once per unit)."""
        sentences = self.sentences()
        keys = [(unit[1:] if unit[0] == "#" else unit, weight) for unit, weight in units.items()]
        self.spend(len(keys) * (len(self.text) // 2 + 150 * len(sentences)) + len(self.text) * 4)
        total = sum(weight for _, weight in keys) or 1.0
        if len(sentences) <= 1:
            return self.text, sum(weight for key, weight in keys if key in self.text) / total
        held, best = max((sum(weight for key, weight in keys if key in s), s) for s in sentences)
        return best, held / total
