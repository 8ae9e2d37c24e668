"""G-Cite conversation memory: the last turns, with every citation marker taken out.

The Code node `nodes/remember_turn.py` is generated from this module (`make dsl`). Markers in an earlier answer pointed
at that turn's source list; the next turn numbers its sources afresh, so an old `[C:3]` must never look like a
citation of the current sources. The chatflow keeps its own history (two conversation variables) instead of the
LLM node's memory, which would replay the raw answers with their markers. The answer comes in already without
markers (the validator's `answer_without_markers`); any citation-like opening left over (an unclosed `[C:1`, or
one the user typed) is neutralised here as the merge node does for chunk text.

Outputs: history (array[object], the last `max_turns` turns {query, answer}) and history_text (string for the
prompt).
"""

import json

from citations.dify_inputs import no_surrogate, shown
from citations.neutralise import neutralise_markers

DEFAULT_MAX_TURNS = 3
TURN_LABELS = ("用户：", "助手：")  # how `history_text` labels the user's and the assistant's words
MAX_TURNS = 30  # `history` is an array[object]: a Code node outputs at most 30 objects in one array
MAX_TEXT = 2000  # characters kept of each query or answer


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
        if (
            not isinstance(turn, dict)
            or not isinstance(turn.get("query"), str)
            or not isinstance(turn.get("answer"), str)
        ):
            raise ValueError(f"history[{n}]: expected {{query, answer}} text")
        turns.append(turn)
    return [{"query": clean(t["query"], "query"), "answer": clean(t["answer"], "answer")} for t in turns[-MAX_TURNS:]]


def clean(text, field):
    if text is None:
        return ""
    if not isinstance(text, str):
        raise ValueError(f"{field}: expected text, got {type(text).__name__}")
    return neutralise_markers(no_surrogate(text.strip()[:MAX_TEXT]))


def history_text(turns):
    user, assistant = TURN_LABELS
    return "\n\n".join(f"{user}{t['query']}\n{assistant}{t['answer']}" for t in turns)


def main(history=None, query=None, answer=None, max_turns=DEFAULT_MAX_TURNS) -> dict:
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or not 0 <= max_turns <= MAX_TURNS:
        raise ValueError(f"max_turns: expected a whole number from 0 to {MAX_TURNS}, got {shown(max_turns)}")
    turns = parse_history(history) + [{"query": clean(query, "query"), "answer": clean(answer, "answer")}]
    turns = turns[-max_turns:] if max_turns else []
    return {"history": turns, "history_text": history_text(turns)}
