"""The `[C:N]` marker grammar, here and nowhere else:
- brackets [ ], 【 】 or ［ ］; `C` in either case; `:` or `：`; spaces allowed between the parts;
- one or more ids separated by , ， 、 ; ；  each optionally repeating `C:`;
- a range a-b or a–b (a < b, at most 20 ids) expands;
- a marker is at most 64 characters long, bracket included;
- nothing inside inline code (a backtick up to the next backtick or the end of the line) or a fenced code
  block (from a line starting with three backticks to the next such line) is a marker.
"""

import re

BRACKETS = {"[": "]", "【": "】", "［": "］"}
# The full-width look-alikes a marker may be written with, each folded to its ASCII form before MARKER_INNER and
# ID_ITEMS read a whole marker that holds one (one character for one: what matches, and the ids, stay the same).
# These patterns then hold only Latin-1 sets, which Python compiles about six times faster than sets reaching past
# it: the validator Code node compiles them in a fresh process on every run (1.6 ms of its start, before).
LOOK_ALIKES = str.maketrans({"\u3000": " ", "：": ":", "，": ",", "、": ",", "；": ";", "–": "-"})
SPACE = "[ \t\u00a0]*"
PREFIX = f"[Cc]{SPACE}:{SPACE}"
ID_ITEM = f"(?:{PREFIX})?(\\d+)(?:{SPACE}-{SPACE}(\\d+))?"
SEPARATOR = "[,;]"
MARKER_INNER = re.compile(f"{SPACE}{PREFIX}{ID_ITEM}(?:{SPACE}{SEPARATOR}{SPACE}{ID_ITEM})*{SPACE}")
ID_ITEMS = re.compile(ID_ITEM)
# What may still grow into a marker, tried on every delta of a stream: read as written (folding first, or an ASCII
# form of this pattern, made the stream 5% slower).
WIDE_SPACE = "[ \t\u00a0\u3000]*"
MARKER_HEAD = re.compile(f"{WIDE_SPACE}(?:[Cc]{WIDE_SPACE}(?:[:：][ \t\u00a0\u3000\\d,，、;；\\-–Cc:：]*)?)?")
MAX_MARKER_LENGTH = 64
MAX_RANGE_IDS = 20
FENCE = "```"


def fold_look_alikes(text):
    """`text` with LOOK_ALIKES folded (most markers are ASCII: nothing to fold, and nothing is copied)."""
    return text if text.isascii() else text.translate(LOOK_ALIKES)


def marker_ids(candidate):
    """The ids of `candidate` (a bracketed string) when it is a marker, else None."""
    inner = fold_look_alikes(candidate[1:-1])
    if BRACKETS.get(candidate[0]) != candidate[-1] or not MARKER_INNER.fullmatch(inner):
        return None
    ids = []
    for match in ID_ITEMS.finditer(inner):
        first, last = int(match.group(1)), match.group(2)
        if last is None:
            ids.append(first)
            continue
        last = int(last)
        if not first < last or last - first + 1 > MAX_RANGE_IDS:
            return None
        ids.extend(range(first, last + 1))
    return list(dict.fromkeys(ids))


def could_become_marker(candidate):
    """True while `candidate` (opening bracket and what follows) may still grow into a marker."""
    return len(candidate) < MAX_MARKER_LENGTH and MARKER_HEAD.fullmatch(candidate, 1) is not None
