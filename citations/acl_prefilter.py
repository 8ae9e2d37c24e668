"""G-Cite pre-filter roles: a user's roles laid out in the fixed slots the Knowledge Retrieval conditions use.

The Code node `nodes/acl_prefilter.py` is generated from this module (`make dsl`). Knowledge Retrieval's manual
metadata conditions are fixed in the chatflow, but a user has any number of roles: each condition reads a slot
(the output `role_1` of this node, …) and this node fills the slots. An unused slot holds a sentinel that no document
contains, never `None` (Dify skips the condition) or `""` (`contains ""` matches every document).

Outputs: role_1 .. role_N (N = role_slots, default 3, at most 50) and role_count.
Roles must come from a trusted source (the back end's `inputs`), never from what the end user types.
"""

import json
import math
import re

from citations.dify_inputs import has_lone_surrogate, shown

ROLE_DELIMITERS = re.compile(r"[,，;；|、]")
UNUSED_SLOT = "\u2063gcite:no-role\u2063"  # matches no stored ACL: invisible separators around a reserved name
FORBIDDEN_IN_ROLE = ('"', "\\", UNUSED_SLOT)
DEFAULT_ROLE_SLOTS = 3
MAX_ROLE_SLOTS = 50  # each slot adds 16 Knowledge Retrieval conditions; checked before any other work


def parse_user_roles(value):
    """Role names from a list, a JSON-array string, a delimited string or a single role (as the filter node)."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            raise ValueError(f"user_roles: {text[:60]!r} is an object, not a list of roles")
        if not text.startswith("["):
            return sorted({r.strip() for r in ROLE_DELIMITERS.split(text)} - {""})
        try:
            value = json.loads(text, parse_int=lambda digits: int(digits) if len(digits) <= 100 else float(digits))
        except (ValueError, RecursionError):
            raise ValueError(f"user_roles: {text[:60]!r} is not a valid JSON array") from None
    if not isinstance(value, (list, tuple)):
        value = [value]
    roles = set()
    for element in value:
        if (
            isinstance(element, bool)
            or not isinstance(element, (str, int, float))
            or (isinstance(element, float) and not math.isfinite(element))
        ):
            raise ValueError(f"user_roles: element {shown(element)} is not a role name")
        if isinstance(element, float) and element.is_integer():
            element = int(element)
        try:
            roles.add(str(element).strip())
        except ValueError:  # an int too long to print
            raise ValueError(f"user_roles: element {shown(element)} is not a role name") from None
    return sorted(roles - {""})


def main(user_roles=None, role_slots=DEFAULT_ROLE_SLOTS) -> dict:
    if isinstance(role_slots, bool) or not isinstance(role_slots, int) or not 1 <= role_slots <= MAX_ROLE_SLOTS:
        raise ValueError(f"role_slots: expected a whole number from 1 to {MAX_ROLE_SLOTS}, got {shown(role_slots)}")
    roles = parse_user_roles(user_roles)
    for role in roles:
        if any(bad in role for bad in FORBIDDEN_IN_ROLE) or ROLE_DELIMITERS.search(role) or has_lone_surrogate(role):
            raise ValueError(f"user_roles: role {shown(role)} contains a character the pre-filter cannot match exactly")
    if len(roles) > role_slots:
        raise ValueError(
            f"user_roles: {len(roles)} roles but the pre-filter has {role_slots} slots; "
            f"add slots to the Knowledge Retrieval conditions (hiding a role would hide documents)"
        )
    outputs = {f"role_{n}": UNUSED_SLOT for n in range(1, role_slots + 1)}
    for n, role in enumerate(roles, start=1):
        outputs[f"role_{n}"] = role
    outputs["role_count"] = len(roles)
    return outputs
