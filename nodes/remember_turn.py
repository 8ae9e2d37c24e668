"""G-Cite conversation memory: the last turns, with every citation marker taken out.

A Dify Code node (standard library only, Python 3.10 syntax, self-contained). Markers in an earlier answer pointed
at that turn's source list; the next turn numbers its sources afresh, so an old `[C:3]` must never look like a
citation of the current sources. The chatflow keeps its own history (two conversation variables) instead of the
LLM node's memory, which would replay the raw answers with their markers. The answer comes in already without
markers (the validator's `answer_without_markers`); any citation-like opening left over (an unclosed `[C:1`, or
one the user typed) is neutralised here as the merge node does for chunk text.

Outputs: history (array[object], the last `max_turns` turns {query, answer}) and history_text (string for the
prompt).
"""

import json
import re
import unicodedata
from functools import lru_cache

# The opening of a citation marker as the validator reads it, neutralised as the merge node does, look-alikes
# included (the same code as nodes/merge_chunks.py; a test keeps the two in step).
MARKER_OPENING = re.compile(r"[\[【［][\s\u00a0\u3000]*[Cc][\s\u00a0\u3000]*[:：]")
NEUTRAL_BRACKET = {"[": "(", "【": "（", "［": "（", "]": ")", "】": "）", "］": "）"}
CLOSING_BRACKET = {"[": "]", "【": "】", "［": "］"}
ANY_BRACKET = re.compile(r"[\[\]【】［］]")
FOLD_REMOVED = ("Cf", "Mn", "Mc", "Me")  # format characters (zero-width …) and combining marks
FOLD_INVISIBLE = "\u115f\u1160\u3164\uffa0"  # Hangul fillers: letters that show as nothing
# Homoglyphs of the marker's letters that no Unicode normalisation maps, but a model may read as them.
FOLD_LOOKALIKES = str.maketrans({
    "\u0421": "C", "\u0441": "c", "\u03f9": "C", "\u03f2": "c", "\u2ca4": "C", "\u2ca5": "c", "\u13df": "C",
    "\ua4da": "C", "\u2236": ":", "\ua789": ":", "\u02f8": ":", "\u0589": ":", "\u05c3": ":", "\u2045": "[",
    "\u2046": "]",
})
# The characters whose fold may differ from themselves: all but ASCII (never folded), the CJK unified ideographs
# and the Hangul syllables (no decomposition, no format character or mark: each folds to itself).
MAY_FOLD = re.compile("[^\x00-\x7f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3]")
DEFAULT_MAX_TURNS = 3
TURN_LABELS = ("用户：", "助手：")  # how `history_text` labels the user's and the assistant's words
MAX_TURNS = 30  # `history` is an array[object]: a Code node outputs at most 30 objects in one array
MAX_TEXT = 2000  # characters kept of each query or answer
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # cannot be encoded as UTF-8 (nor stored by Dify): becomes U+FFFD


# Repeated from nodes/merge_chunks.py (fold_char … original_positions): a Code node stands alone, so the
# look-alike rule is written here too; change them together.
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
        form[offset] = NEUTRAL_BRACKET.get(text[index]) if len(form) == 1 and text[index] in NEUTRAL_BRACKET \
            else NEUTRAL_BRACKET[form[offset]]
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


def parse_history(value):
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise ValueError(f"history: not valid JSON (or nested too deeply): {value[:60]!r}") from None
    if not isinstance(value, list):
        raise ValueError(f"history: expected a list of turns, got {type(value).__name__}")
    turns = []
    for n, turn in enumerate(value):
        if not isinstance(turn, dict) or not isinstance(turn.get("query"), str) or not isinstance(turn.get("answer"), str):
            raise ValueError(f"history[{n}]: expected {{query, answer}} text")
        turns.append(turn)
    return [{"query": clean(t["query"], "query"), "answer": clean(t["answer"], "answer")} for t in turns[-MAX_TURNS:]]


def clean(text, field):
    if text is None:
        return ""
    if not isinstance(text, str):
        raise ValueError(f"{field}: expected text, got {type(text).__name__}")
    return neutralise_markers(LONE_SURROGATE.sub("\ufffd", text.strip()[:MAX_TEXT]))


def shown(value):
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        text = f"a {type(value).__name__} too large to show"
    return text if len(text) <= 60 else text[:57] + "..."


def history_text(turns):
    user, assistant = TURN_LABELS
    return "\n\n".join(f"{user}{t['query']}\n{assistant}{t['answer']}" for t in turns)


def main(history=None, query=None, answer=None, max_turns=DEFAULT_MAX_TURNS) -> dict:
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or not 0 <= max_turns <= MAX_TURNS:
        raise ValueError(f"max_turns: expected a whole number from 0 to {MAX_TURNS}, got {shown(max_turns)}")
    turns = parse_history(history) + [{"query": clean(query, "query"), "answer": clean(answer, "answer")}]
    turns = turns[-max_turns:] if max_turns else []
    return {"history": turns, "history_text": history_text(turns)}
