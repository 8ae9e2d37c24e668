"""Citation-marker openings made harmless in text that is not the LLM's own answer (chunk content, memory).

The validator accepts markers that open with one of these brackets, then optional spaces, then `C` in either
case, optional spaces and an ASCII or full-width colon. Any such opening is neutralised: its bracket becomes a
parenthesis. The test is made on the text as an LLM might normalise it (see `fold_char`), so look-alikes
(`［Ｃ：９］`, `𝐂`, `﹕`, zero-width characters or combining marks between the parts) are neutralised too; any
whitespace counts as a space.
"""

import re
import unicodedata
from functools import lru_cache

MARKER_OPENING = re.compile(r"[\[【［][\s\u00a0\u3000]*[Cc][\s\u00a0\u3000]*[:：]")
NEUTRAL_BRACKET = {"[": "(", "【": "（", "［": "（", "]": ")", "】": "）", "］": "）"}
CLOSING_BRACKET = {"[": "]", "【": "】", "［": "］"}
ANY_BRACKET = re.compile(r"[\[\]【】［］]")
FOLD_REMOVED = ("Cf", "Mn", "Mc", "Me")  # format characters (zero-width …) and combining marks
FOLD_INVISIBLE = "\u115f\u1160\u3164\uffa0"  # Hangul fillers: letters that show as nothing
# Homoglyphs of the marker's letters that no Unicode normalisation maps, but a model may read as them.
FOLD_LOOKALIKES = str.maketrans(
    {
        "\u0421": "C",
        "\u0441": "c",
        "\u03f9": "C",
        "\u03f2": "c",
        "\u2ca4": "C",
        "\u2ca5": "c",
        "\u13df": "C",
        "\ua4da": "C",
        "\u2236": ":",
        "\ua789": ":",
        "\u02f8": ":",
        "\u0589": ":",
        "\u05c3": ":",
        "\u2045": "[",
        "\u2046": "]",
    }
)
# The characters whose fold may differ from themselves: all but ASCII (never folded), the CJK unified ideographs
# and the Hangul syllables (no decomposition, no format character or mark: each folds to itself).
MAY_FOLD = re.compile("[^\x00-\x7f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3]")


@lru_cache(maxsize=65536)
def fold_char(char):
    """One character as a model might normalise it: NFKD, without format characters and combining marks, NFKC,
    then the look-alikes above. `［Ｃ：９］` folds to `[C:9]`, `C\u200b` to `C`, `Ç` to `C`."""
    text = unicodedata.normalize("NFKD", char)
    text = "".join(c for c in text if unicodedata.category(c) not in FOLD_REMOVED and c not in FOLD_INVISIBLE)
    return unicodedata.normalize("NFKC", text).translate(FOLD_LOOKALIKES)


def neutralise_markers(text):
    """`text` with every citation-marker opening (as written or as folded) made harmless: its bracket becomes a
    parenthesis, and so does the closing bracket that matches it (`[C:9]` -> `(C:9)`, `［Ｃ：９］` -> `（Ｃ：９）`)."""
    table = {}
    if not text.isascii():
        for char in set(MAY_FOLD.findall(text)):
            form = fold_char(char)
            if form != char:
                table[ord(char)] = form
    forms = "".join(table.values())
    if "[" not in text and "【" not in text and "[" not in forms and "【" not in forms:
        return text  # no opening bracket, as written or folded: no marker opens (the usual case, made quick)
    folded = text.translate(table) if table else text
    targets = []
    for match in MARKER_OPENING.finditer(folded):
        targets.append(match.start())
        closing = ANY_BRACKET.search(folded, match.end())
        if closing and closing.group() == CLOSING_BRACKET[folded[match.start()]]:
            targets.append(closing.start())
    if not targets:
        return text
    edits = {}
    for index, offset in original_positions(text, table, sorted(set(targets))):
        form = edits.setdefault(index, list(table.get(ord(text[index]), text[index])))
        form[offset] = (
            NEUTRAL_BRACKET.get(text[index])
            if len(form) == 1 and text[index] in NEUTRAL_BRACKET
            else NEUTRAL_BRACKET[form[offset]]
        )
    pieces, start = [], 0
    for index in sorted(edits):
        pieces += [text[start:index], "".join(edits[index])]
        start = index + 1
    pieces.append(text[start:])
    return "".join(pieces)


def original_positions(text, table, positions):
    """(index in `text`, offset inside that character's folded form) for each of the sorted `positions` in the
    folded text. Only characters whose folded form is not one character long shift positions."""
    lengths = {chr(code): len(form) for code, form in table.items() if len(form) != 1}
    shifting = re.compile("[" + "".join(map(re.escape, lengths)) + "]") if lengths else None
    occurrences = shifting.finditer(text) if shifting else iter(())
    current, shift, found = next(occurrences, None), 0, []
    for position in positions:
        while current is not None:
            start, length = current.start() + shift, lengths[current.group()]
            if start > position or position < start + length:
                break
            shift += length - 1
            current = next(occurrences, None)
        if current is not None and current.start() + shift <= position:
            found.append((current.start(), position - current.start() - shift))
        else:
            found.append((position - shift, 0))
    return found
