"""The reasons a weak citation carries, as objects and as one line of text (docs/support-check.md, "What each
citation carries"): what the chunk lacks (`missing_items`) beside the contradiction cues."""

import json
import re
from functools import cache

from citations.support.tables import EN_NUMBERS, MEASURE_WORDS, STOP_CHARS, UNIT_SCALE
from citations.support.text import CJK, CJK_RUNS, WORD_TOKENS, normal_form
from citations.support.units import THOUSANDS, number_unit, word_unit

MAX_MISSING_SHOWN = 5


@cache
def number_shown():
    """A number as a reason shows it: with its unit (460 mm, 5%, 40人) when one follows, never a digit inside a
    code (B2)."""
    return re.compile(rf"(?<![A-Za-z\d.])(\d+(?:\.\d+)?)(?![A-Za-z]*\d)(?:\s?(%|[A-Za-z]+|[{CJK}]{{1,2}}))?")


def missing_items(sentence, view, others=None, limit=MAX_MISSING_SHOWN):
    """The sentence's numbers (with their unit), names, words and Chinese phrases the chunk lacks, as written."""
    text = THOUSANDS.sub("", normal_form(sentence))
    items = []

    def held(unit):
        return unit in view.units or bool(others and others.get(unit)) or (unit[0] == "#" and unit in view.converted())

    shown_units = {}  # where a shown number's unit starts -> its length
    for match in number_shown().finditer(text):
        if held(number_unit(match.group(1))):
            continue
        after = match.group(2) or ""
        if after == "%" or after.casefold() in UNIT_SCALE:
            unit = after
        elif after and not after.isascii() and (after[0] in UNIT_SCALE or after[0] in MEASURE_WORDS):
            unit = after[0]
        else:
            unit = ""
        if unit:
            shown_units[match.start(2)] = len(unit)
            items.append((0, match.start(), text[match.start() : match.start(2) + len(unit)]))
        else:
            items.append((0, match.start(), match.group(1)))
    for position, match in enumerate(WORD_TOKENS.finditer(text)):
        word = match.group()
        unit = word_unit(word.casefold())
        if match.start() and text[match.start() - 1].isdigit() or match.start() in shown_units:
            continue  # 9th, 80s, B2's letters, 460 mm's unit: part of a number, a code or a shown quantity
        if unit and not held(unit) and word.casefold() not in EN_NUMBERS:
            items.append((1 if position and word[0].isupper() else 2, match.start(), word))
    for run in CJK_RUNS.finditer(text):
        chars = run.group()
        covered = [False] * len(chars)
        for i in range(shown_units.get(run.start(), 0)):
            covered[i] = True  # 40人's 人, 2公里's 公里
        for i in range(len(chars) - 1):
            if held(chars[i : i + 2]):
                covered[i] = covered[i + 1] = True
        for i in range(len(chars) - 1, -1, -1):  # a stop character joins the missing phrase it starts (到达)
            char = chars[i]
            stop = char in STOP_CHARS and (i + 1 == len(chars) or covered[i + 1])
            covered[i] = covered[i] or stop or (len(chars) == 1 and held(char))
        i = 0
        while i < len(chars):
            if covered[i]:
                i += 1
                continue
            j = i
            while j < len(chars) and not covered[j]:
                j += 1
            items.append((2, run.start() + i, chars[i:j]))
            i = j
    shown, seen = [], set()
    for _, _, item in sorted(items):
        if item not in seen:
            seen.add(item)
            shown.append(item)
            if len(shown) == limit:
                break
    return shown[:limit]


def reason_text(reasons):
    """The reasons as one line: `missing: ["460 mm"]; negation; antonym: 首/末; number: 7 ≠ 12`."""
    parts = []
    for reason in reasons:
        kind = reason["kind"]
        if kind == "missing":
            parts.append("missing: " + json.dumps(reason["items"], ensure_ascii=False))
        elif kind == "negation":
            parts.append("negation")
        elif kind == "number":
            parts.append(f"number: {reason['claim']} ≠ {reason['source']}")
        elif kind == "scope":
            parts.append(f"scope: {reason['claim']}")
        elif kind == "unchecked":  # past the work budget: no verdict (citations.support.check.UNCHECKED)
            parts.append("unchecked: over the support check's work budget")
        else:
            parts.append(f"{kind}: {reason['claim']}/{reason['source']}")
    return "; ".join(parts)
