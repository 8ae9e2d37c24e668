"""G-Cite access filter: keep only the Knowledge Retrieval chunks a user may see, exactly, failing closed.

A Dify Code node (standard library only, Python 3.10 syntax, self-contained). It does what Dify's metadata
filter cannot: match an element of a role list stored as a JSON-array or delimited string, treat an empty list
as "visible to everyone", and nest AND/OR/NOT conditions.

Outputs:
  chunks         the kept items, unchanged and in input order
  kept_count     how many were kept
  dropped_count  how many were dropped
  dropped        one entry per dropped item: {index, segment_id, reason, detail}
  warnings       what an operator should look at (e.g. no chunk carries the ACL field)

Roles must come from a trusted source (the back end's `inputs`), never from what the end user types.
"""

import ast
import datetime
import json
import math
import re

ROLE_DELIMITERS = re.compile(r"[,，;；|、]")
MISSING_ACL_CHOICES = ("visible", "hidden")
MAX_DROPPED_REPORTED = 30  # a Dify Code node outputs at most 30 objects in one array

# Condition language: {"all": [...]}, {"any": [...]}, {"not": {...}}, {"field": f, "op": op, "value": v}
SCALAR_OPS = ("is", "is_not", "contains")
LIST_OPS = ("in", "not_in", "intersects")
NUMBER_OPS = ("gt", "gte", "lt", "lte")
DATE_OPS = ("before", "after")
PRESENCE_OPS = ("empty", "not_empty")
ALL_OPS = SCALAR_OPS + LIST_OPS + NUMBER_OPS + DATE_OPS + PRESENCE_OPS
GROUPS = ("all", "any", "not")


class Malformed(ValueError):
    """A stored value that cannot be read."""


class Uncomparable(ValueError):
    """A document value that a condition cannot compare."""


# --- Inputs ----------------------------------------------------------------------------------------------

def parse_items(value, field):
    """A list as given; a dict envelope's `result`; JSON or Dify's Python-repr text of a list; None/"" empty."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        try:
            value = json.loads(text)
        except ValueError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                raise ValueError(f"{field}: expected a list of chunks, or JSON text of one; got {text[:80]!r}") from None
    if isinstance(value, dict):
        if isinstance(value.get("result"), list):
            return value["result"]
        raise ValueError(f"{field}: expected the Knowledge Retrieval node's `result` list, got an object")
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{field}: expected a list of chunks, got {type(value).__name__}")
    return value


def role_text(element):
    if isinstance(element, bool) or not isinstance(element, (str, int, float)):
        raise Malformed(f"element {element!r} is not a role name")
    if isinstance(element, float):
        if not math.isfinite(element):
            raise Malformed(f"element {element!r} is not a role name")
        return str(int(element)) if element.is_integer() else str(element)
    return str(element).strip()


def parse_roles(value):
    """A role set from a list, a JSON-array string, a delimited string or a single role.
    None for "no restriction" (missing, null, "", [], "[]"); raises Malformed when unreadable."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            raise Malformed(f"{text[:60]!r} is an object, not a list of roles")
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError:
                raise Malformed(f"{text[:60]!r} is not a valid JSON array") from None
            if not isinstance(value, list):
                raise Malformed(f"{text[:60]!r} is not a JSON array")
        else:
            roles = {r.strip() for r in ROLE_DELIMITERS.split(text)} - {""}
            return roles or None
    if isinstance(value, (list, tuple)):
        roles = {role_text(element) for element in value} - {""}
        return roles or None
    return {role_text(value)} - {""} or None


def fold(roles, case_sensitive):
    return roles if case_sensitive else {r.casefold() for r in roles}


def doc_metadata_of(item):
    metadata = item.get("metadata")
    doc_meta = metadata.get("doc_metadata") if isinstance(metadata, dict) else None
    return doc_meta if isinstance(doc_meta, dict) else {}


def segment_id_of(item):
    metadata = item.get("metadata") if isinstance(item, dict) else None
    value = metadata.get("segment_id") if isinstance(metadata, dict) else None
    return "" if value is None else str(value)


# --- Condition: validation -------------------------------------------------------------------------------

def parse_condition(condition):
    if condition is None or (isinstance(condition, str) and not condition.strip()):
        return None
    if isinstance(condition, str):
        try:
            condition = json.loads(condition)
        except ValueError as error:
            raise ValueError(f"condition: not valid JSON ({error})") from None
    if condition == {}:
        return None
    check_condition(condition, "condition")
    return condition


def check_condition(node, path):
    if not isinstance(node, dict):
        raise ValueError(f"{path}: expected an object, got {type(node).__name__}")
    groups = [k for k in GROUPS if k in node]
    if groups:
        if len(node) != 1:
            raise ValueError(f"{path}: a group has exactly one key ({'/'.join(GROUPS)}), got {sorted(node)}")
        key = groups[0]
        if key == "not":
            check_condition(node["not"], f"{path}.not")
            return
        members = node[key]
        if not isinstance(members, list) or not members:
            raise ValueError(f"{path}.{key}: expected a non-empty list of conditions")
        for n, member in enumerate(members):
            check_condition(member, f"{path}.{key}[{n}]")
        return
    unknown = set(node) - {"field", "op", "value"}
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}; expected all/any/not or field/op/value")
    field, op = node.get("field"), node.get("op")
    if not isinstance(field, str) or not field.strip():
        raise ValueError(f"{path}: `field` must be a non-empty string")
    if op not in ALL_OPS:
        raise ValueError(f"{path}: unknown op {op!r}; expected one of {', '.join(ALL_OPS)}")
    check_value(op, node, path)


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_value(op, node, path):
    has_value, value = "value" in node, node.get("value")
    if op in PRESENCE_OPS:
        if has_value:
            raise ValueError(f"{path}: op {op!r} takes no `value`")
        return
    if not has_value:
        raise ValueError(f"{path}: op {op!r} needs a `value`")
    if op in SCALAR_OPS and not (isinstance(value, str) or is_number(value)):
        raise ValueError(f"{path}: op {op!r} needs a string or number value, got {type(value).__name__}")
    if op in LIST_OPS and not (isinstance(value, list) and all(isinstance(v, str) or is_number(v) for v in value)):
        raise ValueError(f"{path}: op {op!r} needs a list of strings or numbers, got {json.dumps(value)[:60]}")
    if op in NUMBER_OPS and not is_number(value):
        raise ValueError(f"{path}: op {op!r} needs a number, got {json.dumps(value)[:60]}")
    if op in DATE_OPS:
        try:
            as_instant(value)
        except Uncomparable:
            raise ValueError(f"{path}: op {op!r} needs a date (YYYY-MM-DD, ISO datetime or Unix time), "
                             f"got {json.dumps(value)[:60]}") from None


# --- Condition: evaluation -------------------------------------------------------------------------------

def is_empty(value):
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() in ("", "[]")
    return isinstance(value, (list, dict)) and not value


def as_text(value, case_sensitive):
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) \
        else (str(int(value)) if isinstance(value, float) and value.is_integer() else str(value))
    text = text.strip()
    return text if case_sensitive else text.casefold()


def as_list(value):
    """A list-valued field: a list, or a JSON-array string; None when the value is not a list."""
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            raise Uncomparable(f"{value[:60]!r} is not a valid JSON array") from None
        return parsed if isinstance(parsed, list) else None
    return None


def as_number(value, field):
    if is_number(value):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            return number
    raise Uncomparable(f"{field}: {value!r} is not a number")


def as_instant(value, field="value"):
    """A UTC datetime from a Unix time (Dify's time metadata), a YYYY-MM-DD date or an ISO datetime."""
    if is_number(value):
        return datetime.datetime.fromtimestamp(value, tz=datetime.timezone.utc)
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            instant = datetime.datetime.fromisoformat(text)
        except ValueError:
            raise Uncomparable(f"{field}: {value!r} is not a date") from None
        return instant if instant.tzinfo else instant.replace(tzinfo=datetime.timezone.utc)
    raise Uncomparable(f"{field}: {value!r} is not a date")


def holds(node, doc_meta, case_sensitive):
    """True when `node` holds for a document; evaluated left to right, stopping at the first decisive branch."""
    if "all" in node:
        return all(holds(member, doc_meta, case_sensitive) for member in node["all"])
    if "any" in node:
        return any(holds(member, doc_meta, case_sensitive) for member in node["any"])
    if "not" in node:
        return not holds(node["not"], doc_meta, case_sensitive)
    field, op, expected = node["field"], node["op"], node.get("value")
    actual = doc_meta.get(field)
    if op == "empty":
        return is_empty(actual)
    if op == "not_empty":
        return not is_empty(actual)
    if actual is None:
        return False  # a missing field is `empty`; every other comparison on it is false
    return compare(op, field, actual, expected, case_sensitive)


def compare(op, field, actual, expected, case_sensitive):
    if op in ("is", "is_not"):
        if is_number(expected) and is_number(actual):
            same = float(actual) == float(expected)
        else:
            same = as_text(actual, case_sensitive) == as_text(expected, case_sensitive)
        return same if op == "is" else not same
    if op in ("in", "not_in"):
        inside = as_text(actual, case_sensitive) in {as_text(v, case_sensitive) for v in expected}
        return inside if op == "in" else not inside
    if op == "contains":
        elements = as_list(actual)
        needle = as_text(expected, case_sensitive)
        if elements is not None:
            return needle in {as_text(e, case_sensitive) for e in elements}
        return needle in as_text(actual, case_sensitive)
    if op == "intersects":
        try:
            roles = parse_roles(actual)
        except Malformed as error:
            raise Uncomparable(f"{field}: {error}") from None
        return bool(fold(roles or set(), case_sensitive) & {as_text(v, case_sensitive) for v in expected})
    if op in NUMBER_OPS:
        a, b = as_number(actual, field), float(expected)
        return {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[op]
    a, b = as_instant(actual, field), as_instant(expected)
    return a < b if op == "before" else a > b


# --- The node --------------------------------------------------------------------------------------------

def acl_verdict(doc_meta, acl_field, user_roles, missing_acl, case_sensitive):
    """None when the ACL lets the user see the document, else (reason, detail)."""
    if doc_meta.get(acl_field) is None:
        if missing_acl == "hidden":
            return "missing_acl", f"{acl_field} is not set and missing_acl is 'hidden'"
        return None
    try:
        allowed = parse_roles(doc_meta[acl_field])
    except Malformed as error:
        return "malformed_acl", f"{acl_field}: {error}"
    if allowed is None or fold(allowed, case_sensitive) & user_roles:
        return None
    return "no_matching_role", f"{acl_field} allows {sorted(allowed)}"


def main(rag_chunks=None, user_roles=None, acl_field="access_roles", condition="", case_sensitive=True,
         missing_acl="visible") -> dict:
    if not isinstance(acl_field, str) or not acl_field.strip():
        raise ValueError("acl_field: expected the name of a document metadata field")
    acl_field = acl_field.strip()
    if missing_acl not in MISSING_ACL_CHOICES:
        raise ValueError(f"missing_acl: expected one of {', '.join(MISSING_ACL_CHOICES)}, got {missing_acl!r}")
    if not isinstance(case_sensitive, bool):
        raise ValueError(f"case_sensitive: expected true or false, got {case_sensitive!r}")
    try:
        roles = fold(parse_roles(user_roles) or set(), case_sensitive)
    except Malformed as error:
        raise ValueError(f"user_roles: {error}") from None
    expression = parse_condition(condition)
    items = parse_items(rag_chunks, "rag_chunks")

    kept, dropped, tagged, fields_seen = [], [], 0, set()
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            dropped.append(drop(index, item, "not_an_object", f"item is {type(item).__name__}"))
            continue
        doc_meta = doc_metadata_of(item)
        tagged += doc_meta.get(acl_field) is not None
        fields_seen.update(map(str, doc_meta))
        verdict = acl_verdict(doc_meta, acl_field, roles, missing_acl, case_sensitive)
        if verdict is None and expression is not None:
            try:
                if not holds(expression, doc_meta, case_sensitive):
                    verdict = ("condition_false", "the condition does not hold")
            except Uncomparable as error:
                verdict = ("uncomparable_value", str(error))
        if verdict is None:
            kept.append(item)
        else:
            dropped.append(drop(index, item, *verdict))

    warnings = []
    if items and tagged == 0:
        warnings.append(
            f"no chunk carries the ACL field {acl_field!r}: check its name"
            + (" - with missing_acl='visible' every chunk is public" if missing_acl == "visible" else "")
            + (f" (fields present: {', '.join(sorted(fields_seen)[:10])})" if fields_seen else ""))
    return {"chunks": kept, "kept_count": len(kept), "dropped_count": len(dropped), "dropped": capped(dropped),
            "warnings": warnings}


def capped(dropped):
    if len(dropped) <= MAX_DROPPED_REPORTED:
        return dropped
    rest = len(dropped) - (MAX_DROPPED_REPORTED - 1)
    return dropped[:MAX_DROPPED_REPORTED - 1] + [
        {"index": -1, "segment_id": "", "reason": "truncated", "detail": f"and {rest} more dropped"}]


def drop(index, item, reason, detail):
    return {"index": index, "segment_id": segment_id_of(item), "reason": reason, "detail": detail}
