"""Knowledge Retrieval `metadata_filtering_conditions` that pre-filter by role, exactly under a storage convention.

The storage convention: a document's ACL field holds `,role1,role2,` (a comma before and after every role, no
spaces around commas); a document visible to everyone leaves the field unset, or sets it to "" or "[]".
Under it, `contains ",role,"` is an exact element match, even though Dify's `contains` is a SQL substring match.

Every other clause below admits documents that do NOT follow the convention (JSON arrays, lists without the
outer commas, other delimiters, one space around a delimiter), so that the access filter node decides them
exactly. Each such clause contains a character or position that a conventional value never has (a quote, a
space next to a delimiter, a non-comma delimiter, a start or end that is not a comma), so none of them can
admit a conventional document whose roles do not include the user's: for conventional documents the
pre-filter is exact, and it never hides a document the access filter would keep.
"""

from typing import Any

OTHER_DELIMITERS = ("，", ";", "；", "|", "、")

# (Dify comparison_operator, value template); {role} is one role of the user.
ROLE_CLAUSES: tuple[tuple[str, str], ...] = (
    ("contains", ",{role},"),  # the convention
    ("contains", '"{role}"'),  # JSON arrays
    ("start with", "{role}"),  # first element, or the only one, of a list without the outer delimiters
    ("end with", "{role}"),  # last element of such a list
    ("contains", ", {role}"),  # comma lists with a space after the comma
    ("contains", "{role} ,"),  # … or before it
    *(("contains", d + "{role}") for d in OTHER_DELIMITERS),
    *(("contains", d + " {role}") for d in OTHER_DELIMITERS),
)


def public_clauses(acl_field: str, missing_acl: str) -> list[dict[str, Any]]:
    clauses = [condition(acl_field, "is", ""), condition(acl_field, "is", "[]")]
    if missing_acl == "visible":
        clauses.insert(0, condition(acl_field, "empty", None))  # Dify's `empty` matches only a missing key
    return clauses


def condition(name: str, operator: str, value: Any) -> dict[str, Any]:
    return {"name": name, "comparison_operator": operator, "value": value}


def conditions_for_roles(acl_field: str, roles: list[str], missing_acl: str = "visible") -> dict[str, Any]:
    """Literal conditions for one user's roles (e.g. for a back end that calls the retrieval API itself)."""
    clauses = public_clauses(acl_field, missing_acl)
    for role in roles:
        clauses += [condition(acl_field, op, template.format(role=role)) for op, template in ROLE_CLAUSES]
    return {"logical_operator": "or", "conditions": clauses}


def templated_conditions(acl_field: str, slot_selectors: list[str], missing_acl: str = "visible") -> dict[str, Any]:
    """Conditions for a chatflow: each role clause reads a slot filled by nodes/acl_prefilter.py, e.g.
    slot_selectors = ["{{#acl_roles.role_1#}}", …]. Each condition gets a stable id, as Dify's editor writes."""
    clauses = public_clauses(acl_field, missing_acl)
    for selector in slot_selectors:
        clauses += [condition(acl_field, op, template.replace("{role}", selector)) for op, template in ROLE_CLAUSES]
    for n, clause in enumerate(clauses, start=1):
        clause["id"] = f"acl-{n:03d}"
    return {"logical_operator": "or", "conditions": clauses}
