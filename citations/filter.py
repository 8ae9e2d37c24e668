"""G-Cite access filter: keep only the Knowledge Retrieval chunks a user may see, exactly, failing closed.

The Code node `nodes/filter_chunks.py` is generated from this module (`make dsl`). It does what Dify's metadata
filter cannot: match an element of a role list stored as a JSON-array or delimited string, treat an empty list
as "visible to everyone", and nest AND/OR/NOT conditions.

Outputs:
  chunks         the kept items, unchanged and in input order (at most `max_chunks`, default 30: the first ones)
  kept_count     how many are in `chunks`
  dropped_count  how many were dropped
  dropped        one entry per dropped item: {index, segment_id, reason, detail}
  warnings       what an operator should look at (e.g. no chunk carries the ACL field)

Roles must come from a trusted source (the back end's `inputs`), never from what the end user types.
"""

import datetime
import itertools
import json
import math
import re

from citations.dify_inputs import TooDeep, load_json, no_surrogate, python_data, shown_json

ROLE_DELIMITERS = re.compile(r"[,，;；|、]")
MISSING_ACL_CHOICES = ("visible", "hidden")
PUBLIC_ACL_TEXTS = ("", "[]")  # the only stored values meaning "visible to everyone" (the pre-filter's `is` clauses)
ARRAY_LIMIT = 30  # a Dify Code node outputs at most 30 items in one array: `dropped` and `warnings` are capped at it
DEFAULT_MAX_CHUNKS = 30  # … and so is `chunks` by default (the plugin tool passes no limit)
MAX_DETAIL = 2000  # characters of `detail` per dropped item
DETAIL_ROLES = 50  # roles named in a `no_matching_role` detail
MAX_ACL_CHARS = 65536  # a longer ACL (or a list of more roles than this) is malformed: it bounds the work per chunk
MAX_CONDITION_DEPTH = 32  # nesting of all/any/not

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
            value = load_json(text)
        except TooDeep:
            raise ValueError(f"{field}: JSON nested too deeply to be a list of chunks") from None
        except ValueError:
            try:
                value = python_data(text)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                raise ValueError(
                    f"{field}: expected a list of chunks, or JSON text of one; got {text[:80]!r}"
                ) from None
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
        raise Malformed(f"element {shown_json(element)} is not a role name")
    if isinstance(element, float):
        if not math.isfinite(element):
            raise Malformed(f"element {element!r} is not a role name")
        return str(int(element)) if element.is_integer() else str(element)
    try:
        return str(element).strip()
    except ValueError:  # an int too long to print
        raise Malformed(f"element {shown_json(element)} is not a role name") from None


def parse_roles(value):
    """A role set from a list, a JSON-array string, a delimited string or a single role.
    None for "no restriction" (missing, null, "", [], "[]"); raises Malformed when unreadable or too long."""
    if value is None:
        return None
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_ACL_CHARS:
        raise Malformed(
            f"{len(value)} {'characters' if isinstance(value, str) else 'roles'} is more than "
            f"{MAX_ACL_CHARS}: too long for a list of roles"
        )
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            raise Malformed(f"{shown_json(text)} is an object, not a list of roles")
        if text.startswith("["):
            try:
                value = load_json(text)
            except ValueError:
                raise Malformed(f"{shown_json(text)} is not a valid JSON array") from None
            if not isinstance(value, list):
                raise Malformed(f"{shown_json(text)} is not a JSON array")
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
    """The document's metadata: an object, or JSON text of one (read as the object). Absent is {}; anything
    else raises Malformed, so the chunk fails closed."""
    metadata = item.get("metadata")
    doc_meta = metadata.get("doc_metadata") if isinstance(metadata, dict) else None
    if doc_meta is None or doc_meta == "":
        return {}
    if isinstance(doc_meta, str):
        try:
            doc_meta = load_json(doc_meta)
        except ValueError:
            raise Malformed(f"doc_metadata {shown_json(doc_meta)} is not a JSON object") from None
    if not isinstance(doc_meta, dict):
        raise Malformed(f"doc_metadata {shown_json(doc_meta)} is not an object")
    return doc_meta


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
            condition = load_json(condition)
        except TooDeep:
            raise ValueError(f"condition: nested more than {MAX_CONDITION_DEPTH} levels deep") from None
        except ValueError as error:
            raise ValueError(f"condition: not valid JSON ({error})") from None
    if condition == {}:
        return None
    check_condition(condition, "condition")
    return condition


def check_condition(node, path, depth=0):
    if depth > MAX_CONDITION_DEPTH:
        raise ValueError(f"{path}: nested more than {MAX_CONDITION_DEPTH} levels deep")
    if not isinstance(node, dict):
        raise ValueError(f"{path}: expected an object, got {type(node).__name__}")
    groups = [k for k in GROUPS if k in node]
    if groups:
        if len(node) != 1:
            raise ValueError(
                f"{path}: a group has exactly one key ({'/'.join(GROUPS)}), got {shown_json(sorted(map(str, node)))}"
            )
        key = groups[0]
        if key == "not":
            check_condition(node["not"], f"{path}.not", depth + 1)
            return
        members = node[key]
        if not isinstance(members, list) or not members:
            raise ValueError(f"{path}.{key}: expected a non-empty list of conditions")
        for n, member in enumerate(members):
            check_condition(member, f"{path}.{key}[{n}]", depth + 1)
        return
    unknown = set(node) - {"field", "op", "value"}
    if unknown:
        raise ValueError(
            f"{path}: unknown keys {shown_json(sorted(map(str, unknown)))}; expected all/any/not or field/op/value"
        )
    field, op = node.get("field"), node.get("op")
    if not isinstance(field, str) or not field.strip():
        raise ValueError(f"{path}: `field` must be a non-empty string")
    if op not in ALL_OPS:
        raise ValueError(f"{path}: unknown op {shown_json(op)}; expected one of {', '.join(ALL_OPS)}")
    check_value(op, node, path)


def is_number(value):
    """An int or float that is finite as a float (an int past float range is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def number_problem(value):
    """Why a number-typed condition value is unusable, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or is_number(value):
        return None
    return (
        f"number {shown_json(value)} is out of range" if isinstance(value, int) else f"{value!r} is not a finite number"
    )


def check_value(op, node, path):
    has_value, value = "value" in node, node.get("value")
    for item in value if isinstance(value, list) else [value]:
        problem = number_problem(item)
        if problem:
            raise ValueError(f"{path}: {problem}")
    if op in PRESENCE_OPS:
        if has_value:
            raise ValueError(f"{path}: op {op!r} takes no `value`")
        return
    if not has_value:
        raise ValueError(f"{path}: op {op!r} needs a `value`")
    if op in SCALAR_OPS and not (isinstance(value, str) or is_number(value)):
        raise ValueError(f"{path}: op {op!r} needs a string or number value, got {type(value).__name__}")
    if op in LIST_OPS and not (isinstance(value, list) and all(isinstance(v, str) or is_number(v) for v in value)):
        raise ValueError(f"{path}: op {op!r} needs a list of strings or numbers, got {shown_json(value)}")
    if op in NUMBER_OPS and not is_number(value):
        raise ValueError(f"{path}: op {op!r} needs a number, got {shown_json(value)}")
    if op in DATE_OPS:
        try:
            as_instant(value)
        except Uncomparable as error:
            raise ValueError(
                f"{path}: op {op!r} needs a date (YYYY-MM-DD, ISO datetime or Unix time in seconds "
                f"within years 1-9999), got {shown_json(value)}: {error}"
            ) from None


# --- Condition: evaluation -------------------------------------------------------------------------------


def is_empty(value):
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() in ("", "[]")
    return isinstance(value, (list, dict)) and not value


def as_text(value, case_sensitive):
    try:
        text = (
            value
            if isinstance(value, str)
            else json.dumps(value, ensure_ascii=False)
            if isinstance(value, (list, dict))
            else (str(int(value)) if isinstance(value, float) and value.is_integer() else str(value))
        )
    except (ValueError, TypeError, RecursionError):  # an int too long to print, a non-JSON value, deep nesting
        raise Uncomparable(f"value {shown_json(value)} cannot be compared as text") from None
    text = text.strip()
    return text if case_sensitive else text.casefold()


def as_list(value):
    """A list-valued field: a list, or a JSON-array string; None when the value is not a list."""
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            parsed = load_json(value)
        except ValueError:
            raise Uncomparable(f"{shown_json(value)} is not a valid JSON array") from None
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
    raise Uncomparable(f"{field}: {shown_json(value)} is not a number")


def as_instant(value, field="value"):
    """A UTC datetime from a Unix time in seconds (Dify's time metadata), a YYYY-MM-DD date or an ISO datetime.
    A time outside years 1-9999 (a millisecond Unix time is one) is Uncomparable."""
    if is_number(value):
        try:
            return datetime.datetime.fromtimestamp(value, tz=datetime.timezone.utc)
        except (ValueError, OverflowError, OSError):
            raise Uncomparable(
                f"{field}: {shown_json(value)} is out of range as a Unix time in seconds (a millisecond time?)"
            ) from None
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            instant = datetime.datetime.fromisoformat(text)
        except ValueError:
            raise Uncomparable(f"{field}: {shown_json(value)} is not a date") from None
        return instant if instant.tzinfo else instant.replace(tzinfo=datetime.timezone.utc)
    raise Uncomparable(f"{field}: {shown_json(value)} is not a date")


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


def evaluator(node, case_sensitive):
    """`holds(node, ·, case_sensitive)` as a function of a document's metadata, built once per run: the groups
    as loops over their members, each comparison with its expected value prepared (see `comparison`)."""
    if "all" in node or "any" in node:
        members = [evaluator(member, case_sensitive) for member in node["all" if "all" in node else "any"]]
        if "all" in node:

            def every(doc_meta):
                for member in members:
                    if not member(doc_meta):
                        return False
                return True

            return every

        def some(doc_meta):
            for member in members:
                if member(doc_meta):
                    return True
            return False

        return some
    if "not" in node:
        inner = evaluator(node["not"], case_sensitive)
        return lambda doc_meta: not inner(doc_meta)
    field, op = node["field"], node["op"]
    if op == "empty":
        return lambda doc_meta: is_empty(doc_meta.get(field))
    if op == "not_empty":
        return lambda doc_meta: not is_empty(doc_meta.get(field))
    test = comparison(op, field, node.get("value"), case_sensitive)
    known = {}  # a text value -> its result, or the message of the Uncomparable it raised: each text read once

    def leaf(doc_meta):
        actual = doc_meta.get(field)
        if actual is None:
            return False  # a missing field is `empty`; every other comparison on it is false
        if type(actual) is not str:
            return test(actual)
        result = known.get(actual)
        if result is None:
            try:
                result = test(actual)
            except Uncomparable as error:
                result = str(error)
            known[actual] = result
        if result is True or result is False:
            return result
        raise Uncomparable(result)

    return leaf


def comparison(op, field, expected, case_sensitive):
    """`compare(op, field, ·, expected, case_sensitive)` with what depends on `expected` alone worked out once."""
    try:
        if op in ("is", "is_not"):
            number = float(expected) if is_number(expected) else None
            text, equal = as_text(expected, case_sensitive), op == "is"

            def same(actual):
                if number is not None and is_number(actual):
                    return (float(actual) == number) is equal
                return (as_text(actual, case_sensitive) == text) is equal

            return same
        if op in ("in", "not_in"):
            texts, inside = {as_text(v, case_sensitive) for v in expected}, op == "in"
            return lambda actual: (as_text(actual, case_sensitive) in texts) is inside
        if op == "contains":
            needle = as_text(expected, case_sensitive)

            def contains(actual):
                elements = as_list(actual)
                if elements is not None:
                    return needle in {as_text(e, case_sensitive) for e in elements}
                return needle in as_text(actual, case_sensitive)

            return contains
        if op == "intersects":
            texts = {as_text(v, case_sensitive) for v in expected}

            def intersects(actual):
                try:
                    roles = parse_roles(actual)
                except Malformed as error:
                    raise Uncomparable(f"{field}: {error}") from None
                return bool(fold(roles or set(), case_sensitive) & texts)

            return intersects
        if op in NUMBER_OPS:
            bound = float(expected)
            return {
                "gt": lambda actual: as_number(actual, field) > bound,
                "gte": lambda actual: as_number(actual, field) >= bound,
                "lt": lambda actual: as_number(actual, field) < bound,
                "lte": lambda actual: as_number(actual, field) <= bound,
            }[op]
        instant = as_instant(expected)
        if op == "before":
            return lambda actual: as_instant(actual, field) < instant
        return lambda actual: as_instant(actual, field) > instant
    except (Uncomparable, ValueError, TypeError, OverflowError):  # not for a checked condition: compare each time
        return lambda actual: compare(op, field, actual, expected, case_sensitive)


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
    """None when the ACL lets the user see the document, else (reason, detail).
    Visible to everyone: exactly "", "[]" or an empty list. A value that names no role (",", " ", '[""]', [" "])
    is malformed: the pre-filter cannot admit it either, so both stages hide it."""
    value = doc_meta.get(acl_field)
    if value is None:
        if missing_acl == "hidden":
            return "missing_acl", f"{acl_field} is not set and missing_acl is 'hidden'"
        return None
    if (isinstance(value, str) and value in PUBLIC_ACL_TEXTS) or (isinstance(value, list) and not value):
        return None
    try:
        allowed = parse_roles(value)
    except Malformed as error:
        return "malformed_acl", f"{acl_field}: {error}"
    if not allowed:
        return "malformed_acl", (
            f'{acl_field}: {shown_json(value)} names no role; store "" (or leave it unset) for '
            "a document visible to everyone"
        )
    if fold(allowed, case_sensitive) & user_roles:
        return None
    return "no_matching_role", f"{acl_field} allows {roles_shown(allowed)}"


def roles_shown(roles):
    """At most DETAIL_ROLES of the roles, sorted, and how many there are: bounded text and work for any ACL."""
    some = sorted(itertools.islice(roles, DETAIL_ROLES))
    more = f" and {len(roles) - len(some)} more" if len(roles) > len(some) else ""
    return shown_json(some, MAX_DETAIL - 100) + more


def main(
    rag_chunks=None,
    user_roles=None,
    acl_field="access_roles",
    condition="",
    case_sensitive=True,
    missing_acl="visible",
    max_chunks=DEFAULT_MAX_CHUNKS,
) -> dict:
    if not isinstance(acl_field, str) or not acl_field.strip():
        raise ValueError("acl_field: expected the name of a document metadata field")
    acl_field = acl_field.strip()
    if missing_acl not in MISSING_ACL_CHOICES:
        raise ValueError(
            f"missing_acl: expected one of {', '.join(MISSING_ACL_CHOICES)}, got {shown_json(missing_acl)}"
        )
    if not isinstance(case_sensitive, bool):
        raise ValueError(f"case_sensitive: expected true or false, got {shown_json(case_sensitive)}")
    if max_chunks is not None and (isinstance(max_chunks, bool) or not isinstance(max_chunks, int) or max_chunks < 1):
        raise ValueError(
            f"max_chunks: expected a whole number >= 1 (or none for no limit), got {shown_json(max_chunks)}"
        )
    try:
        roles = fold(parse_roles(user_roles) or set(), case_sensitive)
    except Malformed as error:
        raise ValueError(f"user_roles: {error}") from None
    expression = parse_condition(condition)
    items = parse_items(rag_chunks, "rag_chunks")

    holds_for = None if expression is None else evaluator(expression, case_sensitive)
    verdicts = {}  # an ACL text -> its verdict: the chunks of one document repeat it, and it is read once
    kept, dropped, tagged = [], [], 0
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            dropped.append(drop(index, item, "not_an_object", f"item is {type(item).__name__}"))
            continue
        try:
            doc_meta = doc_metadata_of(item)
        except Malformed as error:
            dropped.append(drop(index, item, "malformed_acl", str(error)))
            continue
        value = doc_meta.get(acl_field)
        if type(value) is str:
            tagged += 1
            verdict = verdicts.get(value, False)
            if verdict is False:
                verdict = verdicts[value] = acl_verdict(doc_meta, acl_field, roles, missing_acl, case_sensitive)
        else:
            tagged += value is not None
            verdict = acl_verdict(doc_meta, acl_field, roles, missing_acl, case_sensitive)
        if verdict is None and holds_for is not None:
            try:
                if not holds_for(doc_meta):
                    verdict = ("condition_false", "the condition does not hold")
            except Uncomparable as error:
                verdict = ("uncomparable_value", str(error))
        if verdict is None:
            kept.append(item)
        else:
            dropped.append(drop(index, item, *verdict))

    warnings = []
    if items and tagged == 0:
        fields_seen = fields_of(items)
        warnings.append(
            f"no chunk carries the ACL field {acl_field[:60]!r}: check its name"
            + (" - with missing_acl='visible' every chunk is public" if missing_acl == "visible" else "")
            + (f" (fields present: {', '.join(sorted(fields_seen)[:10])})" if fields_seen else "")
        )
    if max_chunks is not None and len(kept) > max_chunks:
        warnings.append(
            f"{len(kept)} chunks passed the filter; `chunks` holds the first {max_chunks} in input order "
            f"(a Code node outputs at most {ARRAY_LIMIT} objects in one array): lower Knowledge "
            f"Retrieval's top_k to {max_chunks} or less"
        )
        kept = kept[:max_chunks]
    return {
        "chunks": kept,
        "kept_count": len(kept),
        "dropped_count": len(dropped),
        "dropped": capped(dropped),
        "warnings": capped_strings(warnings),
    }


def fields_of(items):
    """The metadata field names the warning shows: of each chunk's first 10, until 10 or more are known."""
    fields_seen = set()
    for item in items:
        if len(fields_seen) >= 10:
            break
        if not isinstance(item, dict):
            continue
        try:
            doc_meta = doc_metadata_of(item)
        except Malformed:
            continue
        fields_seen.update(no_surrogate(str(name)[:60]) for name in list(doc_meta)[:10])
    return fields_seen


def capped(dropped):
    """At most ARRAY_LIMIT entries: past it, the last one counts the rest."""
    if len(dropped) <= ARRAY_LIMIT:
        return dropped
    rest = len(dropped) - (ARRAY_LIMIT - 1)
    return dropped[: ARRAY_LIMIT - 1] + [
        {"index": -1, "segment_id": "", "reason": "truncated", "detail": f"and {rest} more dropped"}
    ]


def capped_strings(lines):
    if len(lines) <= ARRAY_LIMIT:
        return lines
    return lines[: ARRAY_LIMIT - 1] + [f"and {len(lines) - (ARRAY_LIMIT - 1)} more"]


def drop(index, item, reason, detail):
    detail = detail if len(detail) <= MAX_DETAIL else detail[: MAX_DETAIL - 3] + "..."
    return {
        "index": index,
        "segment_id": no_surrogate(segment_id_of(item)[:200]),
        "reason": reason,
        "detail": no_surrogate(detail),
    }
