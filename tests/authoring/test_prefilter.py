import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citations import acl_prefilter
from citations import filter as filter_chunks
from gcite.authoring.prefilter import ROLE_CLAUSES, conditions_for_roles, templated_conditions
from gcite.local.dify_metadata import admits

FIELD = "access_roles"
ROLES = ["运维工程师", "物业经理", "前台", "运维", "Facility Manager", "Manager", "a%b", "a_b"]
ROLE = st.sampled_from(ROLES)


def node_keeps(acl, roles, missing_acl="visible", as_text=False):
    doc = {} if acl is None else {FIELD: acl}
    item = {"content": "x", "metadata": {"doc_metadata": json.dumps(doc, ensure_ascii=False) if as_text else doc}}
    return filter_chunks.main([item], roles, missing_acl=missing_acl)["kept_count"] == 1


def pre_admits(acl, roles, missing_acl="visible"):
    doc = {} if acl is None else {FIELD: acl}
    return admits(conditions_for_roles(FIELD, roles, missing_acl), doc)


# --- the slot node ---------------------------------------------------------------------------------------


def test_slots_are_filled_in_order_and_unused_ones_hold_the_sentinel():
    out = acl_prefilter.main('["物业经理","前台"]')
    assert out == {"role_1": "前台", "role_2": "物业经理", "role_3": acl_prefilter.UNUSED_SLOT, "role_count": 2}
    assert acl_prefilter.main(None, role_slots=2) == {
        "role_1": acl_prefilter.UNUSED_SLOT,
        "role_2": acl_prefilter.UNUSED_SLOT,
        "role_count": 0,
    }


@pytest.mark.parametrize(
    "roles,slots,message",
    [
        ("a,b,c,d", 3, "4 roles but the pre-filter has 3 slots"),
        ('["a"', 3, "not a valid JSON array"),
        (['a"b'], 3, "cannot match exactly"),
        ([None], 3, "is not a role name"),
        ("a", 0, "role_slots"),
        ("a", 51, "role_slots: expected a whole number from 1 to 50"),
        ("a", 10**7, "role_slots: expected a whole number from 1 to 50"),
        ("a", 10**400, "role_slots: expected a whole number from 1 to 50"),
        ("a", 3.0, "role_slots"),
        ("[" * 2000 + "]" * 2000, 3, "user_roles: .* is not a valid JSON array"),
        ([10**5000], 3, "user_roles: element .* is not a role name"),
        ("[1" + "0" * 400 + "]", 3, "user_roles: element inf is not a role name"),
    ],
)
def test_slot_node_errors(roles, slots, message):
    with pytest.raises(ValueError, match=message):
        acl_prefilter.main(roles, role_slots=slots)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.lists(ROLE | st.integers(0, 5), max_size=3).map(json.dumps),
        st.lists(ROLE, max_size=3).map(",".join),
        st.lists(ROLE, max_size=3).map("；".join),
        st.lists(ROLE | st.integers(0, 5), max_size=3),
    )
)
def test_slot_node_reads_roles_as_the_filter_node_does(roles):
    slots = acl_prefilter.main(roles, role_slots=5)
    parsed = filter_chunks.parse_roles(roles) or set()
    assert {slots[f"role_{n}"] for n in range(1, slots["role_count"] + 1)} == parsed


def test_an_unused_slot_matches_no_document():
    sentinel_only = templated_conditions(FIELD, ["{{#acl_roles.role_1#}}"])
    resolved = json.loads(json.dumps(sentinel_only).replace("{{#acl_roles.role_1#}}", acl_prefilter.UNUSED_SLOT))
    for acl in [",a,", "a", '["a"]', "a, b", "x；y", "|", ","]:
        assert not admits(resolved, {FIELD: acl})
    assert admits(resolved, {})  # still public documents


# --- the conditions --------------------------------------------------------------------------------------


def test_templated_conditions_resolve_to_the_literal_ones():
    selectors = ["{{#acl_roles.role_1#}}", "{{#acl_roles.role_2#}}"]
    templated = templated_conditions(FIELD, selectors)
    text = json.dumps(templated, ensure_ascii=False)
    for selector, role in zip(selectors, ["前台", "物业经理"]):
        text = text.replace(selector, role)
    resolved = json.loads(text)
    for clause in resolved["conditions"]:
        assert clause.pop("id").startswith("acl-")
    assert resolved == conditions_for_roles(FIELD, ["前台", "物业经理"])
    assert templated["logical_operator"] == "or"
    assert len({c["id"] for c in templated["conditions"]}) == len(templated["conditions"])


def test_no_condition_value_is_none_or_empty_for_contains():
    for clause in conditions_for_roles(FIELD, ["a", "b"])["conditions"]:
        if clause["comparison_operator"] != "empty":
            assert clause["value"] is not None
        if clause["comparison_operator"] in ("contains", "start with", "end with"):
            assert clause["value"] != ""


# Values that name no role. Only "", "[]" and [] mean "visible to everyone" (the pre-filter's `is ""` / `is "[]"`);
# every other blank value is one the pre-filter cannot admit, so the filter node hides it too (malformed_acl).
BLANK_ACLS = [" ", "  ", ",", ",,", " , ", "\t,", "，\u3000", "[ ]", '[""]', '[" "]', '["", ""]', [" "], [""], "[] "]
EDGE_ACLS = ["", "[]", [], *BLANK_ACLS]


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(st.none(), st.sampled_from(EDGE_ACLS), st.sets(ROLE, min_size=1, max_size=4)),
    st.sets(ROLE, max_size=3),
    st.sampled_from(["visible", "hidden"]),
    st.booleans(),
)
def test_exact_under_the_convention_and_for_the_edge_values(stored, user, missing_acl, doc_metadata_as_text):
    # doc_metadata given as JSON text is read as the object it spells (Dify's SQL sees the stored object).
    acl = ("," + ",".join(sorted(stored)) + ",") if isinstance(stored, (set, frozenset)) else stored
    assert pre_admits(acl, sorted(user), missing_acl) == node_keeps(
        acl, sorted(user), missing_acl, doc_metadata_as_text
    )


@pytest.mark.parametrize("acl", BLANK_ACLS)
def test_a_value_that_names_no_role_is_hidden_by_both_stages(acl):
    for user in ([], ["前台"], ["前台", "物业经理"]):
        assert not pre_admits(acl, user) and not node_keeps(acl, user)


@pytest.mark.parametrize("acl", ["", "[]", []])
def test_the_public_values_are_admitted_by_both_stages(acl):
    for user in ([], ["前台"]):
        assert pre_admits(acl, user) and node_keeps(acl, user) and node_keeps(acl, user, as_text=True)


FORMS = {
    "convention": lambda r: "," + ",".join(r) + ",",
    "json": lambda r: json.dumps(r, ensure_ascii=False),
    "json_spaced": lambda r: json.dumps(r, ensure_ascii=False, separators=(" , ", ": ")),
    "comma": ",".join,
    "comma_space": ", ".join,
    "space_comma": " ,".join,
    "full": "，".join,
    "semi": ";".join,
    "semi_full": "；".join,
    "pipe": "|".join,
    "pipe_spaced": " | ".join,
    "dun": "、".join,
    "dun_space": "、 ".join,
}


@settings(max_examples=800, deadline=None)
@given(st.lists(ROLE, min_size=1, max_size=4, unique=True), st.sampled_from(sorted(FORMS)), st.sets(ROLE, max_size=3))
def test_never_hides_a_document_the_filter_would_keep(stored, form, user):
    acl = FORMS[form](stored)
    if node_keeps(acl, sorted(user)):
        assert pre_admits(acl, sorted(user)), (acl, user)


def test_what_leaks_for_documents_outside_the_convention():
    # Outside the convention the pre-filter may admit a document the filter node then drops: such a
    # chunk is in the Knowledge Retrieval node's output (streamed to the API caller), not in the answer.
    assert pre_admits("运维工程师,物业经理", ["运维"]) and not node_keeps("运维工程师,物业经理", ["运维"])
    assert not pre_admits(",运维工程师,物业经理,", ["运维"])  # the same roles in the convention: exact


def test_every_role_clause_is_safe_on_conventional_values():
    # A clause other than the convention's own must not match any conventional value.
    for op, template in ROLE_CLAUSES[1:]:
        one = {
            "logical_operator": "or",
            "conditions": [{"name": FIELD, "comparison_operator": op, "value": template.format(role="Manager")}],
        }
        for stored in ([], ["Manager"], ["Facility Manager"], ["Manager", "x"], ["x", "Manager"]):
            assert not admits(one, {FIELD: "," + ",".join(stored) + ","}), (op, template, stored)


# --- Dify's semantics, as gcite.local.dify_metadata models them -------------------------------------------------


def cond(op, value, logical="or"):
    return {"logical_operator": logical, "conditions": [{"name": "f", "comparison_operator": op, "value": value}]}


@pytest.mark.parametrize(
    "filtering,doc,expected",
    [
        (cond("contains", None), {"f": "x"}, True),  # None skips the condition: no filter at all
        (cond("contains", ""), {"f": "anything"}, True),  # "" matches everything that has the key
        (cond("contains", ""), {}, False),
        (cond("empty", None), {}, True),
        (cond("empty", None), {"f": None}, False),  # a stored JSON null is "not empty"
        (cond("not contains", "x"), {}, False),  # negations exclude documents without the key
        (cond("is not", "x"), {}, False),
        (cond("is", 3), {"f": "3"}, True),
        (cond("in", "a, b"), {"f": "b"}, True),
        (cond("after", 10), {"f": 11}, True),
        (cond("contains", "hr"), {"f": "chrome"}, True),  # LIKE is a substring match
    ],
)
def test_dify_semantics(filtering, doc, expected):
    assert admits(filtering, doc) is expected


def test_and_or():
    two = [
        {"name": "a", "comparison_operator": "is", "value": "1"},
        {"name": "b", "comparison_operator": "is", "value": "2"},
    ]
    assert admits({"logical_operator": "or", "conditions": two}, {"a": "1"})
    assert not admits({"logical_operator": "and", "conditions": two}, {"a": "1"})
