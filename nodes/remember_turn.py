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

# The opening of a citation marker as the validator reads it (kept in step with it by a test).
MARKER_OPENING = re.compile(r"[\[【［][ \t\u00a0\u3000]*[Cc][ \t\u00a0\u3000]*[:：]")
NEUTRAL_BRACKET = {"[": "(", "【": "（", "［": "（"}
DEFAULT_MAX_TURNS = 3
MAX_TEXT = 2000  # characters kept of each query or answer


def neutralise_markers(text):
    return MARKER_OPENING.sub(lambda m: NEUTRAL_BRACKET[m.group(0)[0]] + m.group(0)[1:], text)


def parse_history(value):
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"history: not valid JSON: {value[:60]!r}") from None
    if not isinstance(value, list):
        raise ValueError(f"history: expected a list of turns, got {type(value).__name__}")
    turns = []
    for n, turn in enumerate(value):
        if not isinstance(turn, dict) or not isinstance(turn.get("query"), str) or not isinstance(turn.get("answer"), str):
            raise ValueError(f"history[{n}]: expected {{query, answer}} text")
        turns.append({"query": turn["query"], "answer": turn["answer"]})
    return turns


def clean(text, field):
    if text is None:
        return ""
    if not isinstance(text, str):
        raise ValueError(f"{field}: expected text, got {type(text).__name__}")
    return neutralise_markers(text.strip())[:MAX_TEXT]


def history_text(turns):
    return "\n\n".join(f"用户：{t['query']}\n助手：{t['answer']}" for t in turns)


def main(history=None, query=None, answer=None, max_turns=DEFAULT_MAX_TURNS) -> dict:
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 0:
        raise ValueError(f"max_turns: expected a whole number >= 0, got {max_turns!r}")
    turns = parse_history(history) + [{"query": clean(query, "query"), "answer": clean(answer, "answer")}]
    turns = turns[-max_turns:] if max_turns else []
    return {"history": turns, "history_text": history_text(turns)}
