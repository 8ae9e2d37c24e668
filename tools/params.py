"""Parameter helpers shared by the tool adapters (no Tool subclass here: the SDK loads one per tool module)."""

import json
from typing import Any

from citations.dify_inputs import no_surrogate


def given(parameters: dict[str, Any], name: str, default: Any) -> Any:
    """The parameter's value, or `default` when Dify sent nothing (None, or "" for an empty form field)."""
    value = parameters.get(name)
    return default if value is None or value == "" else value


def sendable(value: Any) -> Any:
    """`value` with every lone surrogate (a string the daemon's UTF-8 stream cannot carry) replaced by U+FFFD;
    unchanged (the same object) when there is none. Without this, one such character in an output would leave the
    request unanswered."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeEncodeError:
        pass
    if isinstance(value, str):
        return no_surrogate(value)
    if isinstance(value, dict):
        return {sendable(k) if isinstance(k, str) else k: sendable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sendable(v) for v in value]
    return value
