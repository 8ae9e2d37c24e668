"""The score of a (sentence, chunk) pair: the weighted share of the sentence's content the chunk holds, lowered for
what is missing, pulled toward the weakest clause and cut by each contradiction cue (docs/support-check.md,
steps 3-7)."""

from functools import cache

from citations.support.antonym import antonym_candidates, antonym_cue, opposites
from citations.support.measure import measure_cue, measure_hints, short_measure
from citations.support.negation import NEGATION_CHARACTERS, negated, negation_cue
from citations.support.number import number_cue
from citations.support.roles import ROLE_HINTS, roles_cue
from citations.support.scope import scope_cue, scope_zh_units
from citations.support.sentences import sentence_parts
from citations.support.tables import ANTONYMS_EN, SCOPE_EN
from citations.support.text import DIGIT, LATIN, WORD_TOKENS, holds_any
from citations.support.units import is_chinese
from citations.support.weights import DEFAULT_WEIGHTS
from citations.support.words import inflections, words_saying


@cache
def cue_units():
    """The units a cue rule looks for among a sentence's: a unit's or a month's name (`measure_hints`), the words
    of the Chinese antonym table (`opposites`), the scope words that are units (`scope_zh_units`) and the negation
    characters. The sentence's ones are found in one pass over its units."""
    return measure_hints().union(opposites()[0], scope_zh_units()[0], NEGATION_CHARACTERS)


@cache
def cue_word_forms():
    """The words that may say a word the scope or antonym rule looks for (SCOPE_EN, ANTONYMS_EN) in some form."""
    return inflections(SCOPE_EN.union(*ANTONYMS_EN))


def coverage(units, chunk, others=None, converted=(), weights=DEFAULT_WEIGHTS):
    """(found weight, needed weight, numbers and codes missing, words missing) of `units` in the set `chunk` (or,
    for a number, in `converted`); the units only another cited chunk contains (`others`) are left out. Words
    missing: about how many words of the sentence the chunk lacks, the weight of its missing units other than
    numbers and codes, a Chinese unit counted at 1/weight_zh_word (a missing two-character word loses about that
    much weight: its bigram, its characters and the bigrams joining it to its neighbours)."""
    zh_word = weights.weight_zh_word
    found = needed = words = 0.0
    missing = 0
    for unit, weight in units.items():
        if unit in chunk:
            found += weight
        elif others and others.get(unit):
            continue
        elif unit[0] == "#":
            if unit in converted:
                found += weight
            else:
                missing += 1
        else:
            words += weight / zh_word if "\u3400" <= unit[0] else weight
        needed += weight
    return found, needed, missing, words


def plain_share(covered, weights=DEFAULT_WEIGHTS):
    """`support_score` from a `coverage` result (found, needed, missing, words missing)."""
    found, needed, missing, _ = covered
    return 1.0 if needed == 0 else found / needed * weights.missing_exact**missing


def support_score(units, chunk, others=None, weights=DEFAULT_WEIGHTS):
    """The weighted share of a sentence's units found in `chunk` (a set of units), leaving out the units only
    another cited chunk contains (`others`: unit -> how many of the sentence's cited chunks contain it); times
    missing_exact for each number or code the chunk lacks. 1.0 when the sentence has no content to back. (The plain
    share; the check itself scores a pair with `judge`.)"""
    return plain_share(coverage(units, chunk, others, weights=weights), weights)


def weakest_part(units, parts, chunk, others=None, weights=DEFAULT_WEIGHTS):
    """The lowest share of its content the chunk holds over the parts carrying at least min_part_weight; a
    part's content is the sentence's units written in it. None when fewer than two parts carry that much."""
    shares = []
    keys = [(unit[1:] if unit[0] == "#" else unit, unit, weight) for unit, weight in units.items()]
    for part in parts:
        found = needed = 0.0
        for key, unit, weight in keys:
            if key in part:
                if unit in chunk:
                    found += weight
                elif others and others.get(unit):
                    continue
                needed += weight
        if needed >= weights.min_part_weight:
            shares.append(found / needed)
    return min(shares) if len(shares) >= 2 else None


def judge(text, units, view, others=None, parts=(), covered=None, weights=DEFAULT_WEIGHTS):
    """(score, reasons) for a sentence (its `folded` text, weighted units and parts) citing the chunk `view`.

    The score is the weighted share of the sentence's content the chunk holds, lower the more weight is missing
    (missing_decay per unit of weight, missing_exact per number or code), pulled toward its weakest clause
    (part_weight), times the cue's factor for each contradiction cue relative to the chunk's matching passage; for
    a Chinese sentence, raised to zh_scale (all of them `weights`).
    `parts`: the sentence's `sentence_parts`, or None to split it here when the chunk lacks some of its content.
    `covered`: `coverage(units, view.units, others, weights=weights)` when the caller has it already."""
    found, needed, missing, lacking = covered or coverage(units, view.units, others, (), weights)
    if needed == 0:
        return 1.0, []
    if missing and view.converted():
        found, needed, missing, lacking = coverage(units, view.units, others, view.converted(), weights)
    score = found / needed * weights.missing_exact**missing * weights.missing_decay**lacking
    latin = LATIN.search(text) is not None  # read once for the rules below, as are the words and units they read
    tokens = WORD_TOKENS.findall(text) if latin else ()  # a word of PART_WORDS or of `cue_word_forms` is Latin
    if found < needed and parts is None:
        parts = sentence_parts(text, tokens)
    if parts and found < needed:  # each part is read once per unit: the sentence's length times its units
        view.spend(len(units) * (len(text) // 2 + 50 * len(parts)))
    weakest = weakest_part(units, parts, view.units, others, weights) if parts and found < needed else None
    if weakest is not None:
        score = min(score, (1 - weights.part_weight) * score + weights.part_weight * weakest)
    reasons = []
    cues = cue_units().intersection(units)
    if missing:
        cue = number_cue(text, units, view)
    else:
        hinted = measure_hints().intersection(cues)
        if latin:
            cue = (
                measure_cue(text, view, hinted, latin)
                if (hinted or short_measure().search(text)) and DIGIT.search(text)
                else None
            )
        else:  # short_measure finds only Latin letters, and measure_cue a unit's name only after a digit
            cue = measure_cue(text, view, hinted, latin) if hinted else None
    if cue:
        reasons.append(cue)
    if found:
        words = words_saying(text, cue_word_forms(), tokens) if latin else set()  # the words both rules read
        cue = scope_cue(text, view, words, cues)
        if cue:
            reasons.append(cue)
        candidates = antonym_candidates(text, units, view, words, cues)
        roles = "比" in text or (latin and holds_any(text, ROLE_HINTS))  # ROLE_HINTS are Latin words
        said = negated(text, latin, not NEGATION_CHARACTERS.isdisjoint(cues))  # no stop characters: units
        negation, antonym = said or view.negated(), candidates and not said  # the rules that may find a cue
        if negation or antonym or roles:
            passage, share = view.passage(units)
            if share >= weights.passage_match:  # the chunk's passage says enough of the sentence for a cue to count
                view.spend(len(passage) * 30 + len(text) * 30)  # the cues' patterns over the passage and sentence
                for cue in (
                    negation and negation_cue(text, view, passage, said),
                    antonym and antonym_cue(candidates, passage, view),
                    roles and roles_cue(text, passage, view),
                ):
                    if cue:
                        reasons.append(cue)
    for reason in reasons:
        score *= weights.cue(reason["kind"])
    if 0.0 < score < 1.0 and is_chinese(units):
        score **= weights.zh_scale
    return score, reasons
