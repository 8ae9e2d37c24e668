"""Parameter helpers shared by the tool adapters (no Tool subclass here: the SDK loads one per tool module)."""

from typing import Any


def given(parameters: dict[str, Any], name: str, default: Any) -> Any:
    """The parameter's value, or `default` when Dify sent nothing (None, or "" for an empty form field)."""
    value = parameters.get(name)
    return default if value is None or value == "" else value
