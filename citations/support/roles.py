"""The roles cue: the two sides of "A 比 B", "A … -er than B" or "A defeated B" in the sentence, swapped in the
chunk's matching passage (docs/support-check.md, step 5)."""

import re
from functools import cache

from citations.support.tables import ROLE_VERBS
from citations.support.text import CJK

# what every `role_patterns` match holds besides 比: than, or a verb of ROLE_VERBS
ROLE_HINTS = ("than", *ROLE_VERBS)


@cache
def role_patterns():
    return (
        re.compile(rf"([{CJK}a-z0-9]{{2}})比([{CJK}a-z0-9]{{2}})"),
        re.compile(r"(?<![a-z0-9])([a-z0-9]+) (?:is |are |was |were )?[a-z]+er than ([a-z0-9]+)"),
        re.compile(rf"(?<![a-z0-9])([a-z0-9]+) (?:{'|'.join(ROLE_VERBS)}) ([a-z0-9]+)"),
    )  # from a word's start


def roles_cue(sentence_text, passage, view=None):
    """{"kind": "roles", "claim": "A比B", "source": "B比A"}: the sentence's two sides swapped in the passage."""
    for pattern in role_patterns():
        claim = pattern.search(sentence_text)
        if not claim or claim.group(1) == claim.group(2):
            continue
        for source in pattern.finditer(passage):
            if view is not None:
                view.spend(1500)  # a match of the passage (the work budget: citations.support.chunk.Work)
            if (source.group(1), source.group(2)) == (claim.group(2), claim.group(1)):
                return {"kind": "roles", "claim": claim.group(), "source": source.group()}
    return None
