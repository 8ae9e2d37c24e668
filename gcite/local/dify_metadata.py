"""Dify's manual metadata filtering, as Knowledge Retrieval applies it on PostgreSQL, over plain dicts.

Used by the tests and the local chatflow runner to decide which documents a set of
`metadata_filtering_conditions` lets through. Semantics (Dify's `process_metadata_filter_func`):
- a condition whose value is None is skipped (except `empty` / `not empty`);
- `contains` / `not contains` / `start with` / `end with` are SQL LIKE on the field's text (`%` and `_` escaped);
- `is` / `is not` compare text for a string value, numbers for a number value;
- `empty` matches only a missing key: a stored JSON null is "not empty" (`doc_metadata -> name` is JSON null, not
  SQL NULL); `not empty` the opposite, so it is the one operator that admits a JSON null;
- every other comparison on a missing key or a JSON null is false (`doc_metadata ->> name` is SQL NULL, and any
  comparison with NULL is not true), `is not` / `not contains` / `not in` included: no value operator admits a
  document whose field is JSON null;
- `in` / `not in` take a list or a comma-separated string; `before` / `<`, `after` / `>`, `≤`, `≥` compare as floats;
- the conditions combine with one logical operator, `and` or `or`; with none left, every document passes.
"""

import json
from collections.abc import Callable
from typing import Any

MISSING = object()


def field_text(value: Any) -> str | None:
    """What PostgreSQL's `doc_metadata ->> name` gives: text of a scalar, jsonb's text of a container (", " and ": "
    separators, object keys in jsonb's order), SQL NULL (None) for a JSON null or a missing key."""
    if value is MISSING or value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(_jsonb_order(value), ensure_ascii=False, separators=(", ", ": "))
    return str(value)


def _jsonb_order(value: Any) -> Any:
    """jsonb stores an object's keys shortest first, then by their bytes (and keeps the last of duplicates)."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(str(k).encode("utf-8")), str(k).encode("utf-8")))
        return {k: _jsonb_order(value[k]) for k in keys}
    if isinstance(value, list):
        return [_jsonb_order(v) for v in value]
    return value


def field_float(value: Any) -> float | None:
    text = field_text(value)
    try:
        return None if text is None else float(text)
    except ValueError:
        return None


def condition_test(operator: str, value: Any) -> Callable[[Any], bool] | None:
    """A test on one stored value (MISSING when the key is absent), or None when Dify skips the condition."""
    if value is None and operator not in ("empty", "not empty"):
        return None
    if operator == "empty":
        return lambda stored: stored is MISSING
    if operator == "not empty":
        return lambda stored: stored is not MISSING
    text_tests: dict[str, Callable[[str], bool]] = {
        "contains": lambda t: str(value) in t,
        "not contains": lambda t: str(value) not in t,
        "start with": lambda t: t.startswith(str(value)),
        "end with": lambda t: t.endswith(str(value)),
    }
    if operator in text_tests:
        test = text_tests[operator]
        return lambda stored: (t := field_text(stored)) is not None and test(t)
    if operator in ("is", "=", "is not", "≠"):
        negate = operator in ("is not", "≠")
        if isinstance(value, str):
            return lambda stored: (t := field_text(stored)) is not None and ((t == value) != negate)
        if isinstance(value, (int, float)):
            return lambda stored: (f := field_float(stored)) is not None and ((f == value) != negate)
        return None  # Dify adds no filter for other value types
    if operator in ("in", "not in"):
        items = (
            [v.strip() for v in value.split(",") if v.strip()]
            if isinstance(value, str)
            else [str(v) for v in value if v is not None]
            if isinstance(value, (list, tuple))
            else [str(value)]
        )
        if not items:
            return lambda stored: operator == "not in"
        return lambda stored: (t := field_text(stored)) is not None and ((t in items) == (operator == "in"))
    compare = {
        "before": float.__lt__,
        "<": float.__lt__,
        "after": float.__gt__,
        ">": float.__gt__,
        "≤": float.__le__,
        "<=": float.__le__,
        "≥": float.__ge__,
        ">=": float.__ge__,
    }.get(operator)
    if compare is None:
        return None  # an operator Dify does not know adds no filter
    return lambda stored: (f := field_float(stored)) is not None and compare(f, float(value))


def admits(filtering: dict[str, Any], doc_metadata: dict[str, Any]) -> bool:
    """True when a document with `doc_metadata` passes the manual metadata filter."""
    tests = [
        (c["name"], condition_test(c["comparison_operator"], c.get("value"))) for c in filtering.get("conditions", [])
    ]
    results = [test(doc_metadata.get(name, MISSING)) for name, test in tests if test is not None]
    if not results:
        return True
    return all(results) if filtering.get("logical_operator") == "and" else any(results)
