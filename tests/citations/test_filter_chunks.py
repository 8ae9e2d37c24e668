import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citations.filter import main
from tests.support.node_data import DOC, chunk


def kept(acl, roles, **kwargs):
    return main([chunk(acl)], roles, **kwargs)["kept_count"] == 1


def reason(acl, roles, **kwargs):
    result = main([chunk(acl)], roles, **kwargs)
    return result["dropped"][0]["reason"] if result["dropped"] else None


# --- ACL forms -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "acl",
    [
        ["运维工程师", "物业经理"],
        '["运维工程师","物业经理"]',
        '[ "运维工程师" , "物业经理" ]',
        "运维工程师,物业经理",
        "运维工程师，物业经理",
        "运维工程师;物业经理",
        "运维工程师；物业经理",
        "运维工程师|物业经理",
        "运维工程师、物业经理",
        " 物业经理 ",
        ",运维工程师,物业经理,",
        "物业经理",
    ],
)
def test_every_acl_form_is_read(acl):
    assert kept(acl, "物业经理")
    assert not kept(acl, "前台")


@pytest.mark.parametrize("acl", ["__unset__", None, "", [], "[]"])
def test_missing_or_empty_acl_is_visible_to_everyone(acl):
    assert kept(acl, "前台")
    assert kept(acl, None)


@pytest.mark.parametrize(
    "acl", ["  ", " [] ", "[ ]", ",", " , ", "\t,", "，\u3000", '[""]', '[" "]', [" "], [""], ",,"]
)
def test_a_value_that_names_no_role_is_malformed_not_public(acl):
    # Only "", "[]" and [] mean "visible to everyone": the pre-filter's `is ""` / `is "[]"` cannot admit any
    # other blank value, so the filter node hides it too (and says how to store a public document).
    result = main([chunk(acl)], "前台")
    assert result["kept_count"] == 0 and result["dropped"][0]["reason"] == "malformed_acl"
    assert "names no role" in result["dropped"][0]["detail"]


@pytest.mark.parametrize(
    "acl",
    [
        '["运维工程师"',
        '{"a": 1}',
        '["a", null]',
        '["a", {"b": 1}]',
        ["a", None],
        ["a", ["b"]],
        '"[bad"',
        True,
        {"role": "a"},
        ["a", float("nan")],
    ],
)
def test_unreadable_acl_fails_closed_and_says_so(acl):
    if acl == '"[bad"':  # a plain string that only looks odd is a single role, not malformed
        assert reason(acl, '"[bad"') is None
        return
    assert reason(acl, "a") == "malformed_acl"


def test_numbers_in_a_list_are_role_names():
    assert kept([1, 2.0], "2") and kept("[3]", ["3"])


def test_user_roles_take_the_same_forms():
    for roles in (["物业经理"], '["物业经理"]', "前台,物业经理", "前台；物业经理", "物业经理"):
        assert kept("物业经理", roles)


@pytest.mark.parametrize("roles", [None, "", [], "[]"])
def test_no_roles_keep_only_unrestricted_chunks(roles):
    result = main([chunk("a", "1"), chunk(None, "2"), chunk("[]", "3")], roles)
    assert [c["metadata"]["segment_id"] for c in result["chunks"]] == ["2", "3"]


def test_matching_is_exact_equality_not_substring():
    assert not kept("高级运维工程师", "运维工程师")
    assert not kept("运维", "运维工程师")
    assert not kept(",hr,", "h")


def test_case_sensitive_by_default():
    assert not kept("Admin", "admin")
    assert kept("Admin", "admin", case_sensitive=False)


def test_malformed_user_roles_is_an_error():
    with pytest.raises(ValueError, match="user_roles"):
        main([chunk("a")], '["a"')


def test_kept_chunks_are_unchanged_and_in_order_and_drops_are_reported():
    items = [chunk("a", "1"), chunk("b", "2"), "junk", chunk('["a"', "4"), chunk(None, "5")]
    before = json.loads(json.dumps(items))
    result = main(items, "a")
    assert result["chunks"] == [before[0], before[4]]
    assert result["chunks"][0] is items[0]
    assert (result["kept_count"], result["dropped_count"]) == (2, 3)
    assert [(d["index"], d["segment_id"], d["reason"]) for d in result["dropped"]] == [
        (1, "2", "no_matching_role"),
        (2, "", "not_an_object"),
        (3, "4", "malformed_acl"),
    ]


def test_inputs_as_json_text_and_python_repr():
    items = [chunk("a", "1", flag=True, none=None)]
    assert main(json.dumps(items), "a")["kept_count"] == 1
    assert main(str(items), "a")["kept_count"] == 1
    assert main({"result": items}, "a")["kept_count"] == 1
    with pytest.raises(ValueError, match="rag_chunks"):
        main("{oops", "a")


def test_warns_when_no_chunk_carries_the_field_and_missing_acl_hidden_fails_closed():
    items = [chunk("a", field="acess_roles"), chunk("b", field="acess_roles")]
    result = main(items, "x")
    assert result["kept_count"] == 2
    assert len(result["warnings"]) == 1 and "'access_roles'" in result["warnings"][0]
    assert "acess_roles" in result["warnings"][0]
    hidden = main(items, "x", missing_acl="hidden")
    assert hidden["kept_count"] == 0 and {d["reason"] for d in hidden["dropped"]} == {"missing_acl"}
    assert main([chunk("x")], "x")["warnings"] == []
    assert kept("", "x", missing_acl="hidden")  # an explicit empty ACL stays public


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"missing_acl": "maybe"}, "missing_acl"),
        ({"acl_field": ""}, "acl_field"),
        ({"case_sensitive": "yes"}, "case_sensitive"),
    ],
)
def test_bad_options_are_errors(kwargs, field):
    with pytest.raises(ValueError, match=field):
        main([chunk("a")], "a", **kwargs)


# --- condition -------------------------------------------------------------------------------------------


def passes(cond, doc=DOC):
    result = main([chunk(None, **doc)], None, condition=json.dumps(cond))
    return result["kept_count"] == 1


@pytest.mark.parametrize(
    "cond,expected",
    [
        ({"field": "dept", "op": "is", "value": "ops"}, True),
        ({"field": "dept", "op": "is_not", "value": "ops"}, False),
        ({"field": "level", "op": "is", "value": 3}, True),
        ({"field": "level_text", "op": "is", "value": 3}, True),
        ({"field": "dept", "op": "in", "value": ["hr", "ops"]}, True),
        ({"field": "dept", "op": "not_in", "value": ["hr", "ops"]}, False),
        ({"field": "tags", "op": "contains", "value": "电梯"}, True),
        ({"field": "tags", "op": "contains", "value": "电"}, False),  # element of a list, not a substring
        ({"field": "tag_list", "op": "contains", "value": "消防"}, True),
        ({"field": "title", "op": "contains", "value": "维保"}, True),  # plain text: substring
        ({"field": "tags", "op": "intersects", "value": ["x", "消防"]}, True),
        ({"field": "tags", "op": "intersects", "value": ["x"]}, False),
        ({"field": "empty_text", "op": "empty"}, True),
        ({"field": "nope", "op": "empty"}, True),
        ({"field": "dept", "op": "not_empty"}, True),
        ({"field": "level", "op": "gt", "value": 2}, True),
        ({"field": "level", "op": "gte", "value": 3}, True),
        ({"field": "level_text", "op": "lt", "value": 3}, False),
        ({"field": "level", "op": "lte", "value": 3}, True),
        ({"field": "updated", "op": "after", "value": "2026-05-01"}, True),
        ({"field": "updated", "op": "before", "value": "2026-05-01T00:00:00Z"}, False),
        ({"field": "stamp", "op": "after", "value": "2025-12-31"}, True),  # Dify time metadata is Unix time
        ({"field": "stamp", "op": "before", "value": 1767225601}, True),
    ],
)
def test_each_op(cond, expected):
    assert passes(cond) is expected


@pytest.mark.parametrize(
    "op,value",
    [
        ("is", "x"),
        ("is_not", "x"),
        ("in", ["x"]),
        ("not_in", ["x"]),
        ("contains", "x"),
        ("intersects", ["x"]),
        ("gt", 1),
        ("lt", 1),
        ("before", "2026-01-01"),
        ("after", "2026-01-01"),
        ("not_empty", None),
    ],
)
def test_a_missing_field_is_empty_and_every_other_comparison_is_false(op, value):
    cond = {"field": "absent", "op": op} if value is None else {"field": "absent", "op": op, "value": value}
    assert passes(cond) is False
    assert passes({"not": cond}) is True


def test_nested_groups():
    cond = {
        "all": [
            {"any": [{"field": "dept", "op": "is", "value": "hr"}, {"field": "level", "op": "gte", "value": 3}]},
            {"not": {"field": "tags", "op": "contains", "value": "保密"}},
        ]
    }
    assert passes(cond)
    assert not passes({"all": [cond, {"field": "dept", "op": "is", "value": "hr"}]})


@pytest.mark.parametrize(
    "cond,message",
    [
        ("{not json", "not valid JSON"),
        ({"field": "a", "op": "eq", "value": 1}, "unknown op 'eq'"),
        ({"field": "a", "op": "gt", "value": [1]}, "needs a number"),
        ({"field": "a", "op": "gt", "value": True}, "needs a number"),
        ({"field": "a", "op": "in", "value": "x"}, "needs a list"),
        ({"field": "a", "op": "is", "value": ["x"]}, "string or number"),
        ({"field": "a", "op": "before", "value": "soon"}, "needs a date"),
        ({"field": "a", "op": "empty", "value": 1}, "takes no `value`"),
        ({"field": "a", "op": "is"}, "needs a `value`"),
        ({"field": "", "op": "is", "value": 1}, "field"),
        ({"all": []}, "non-empty list"),
        ({"any": {"field": "a"}}, "non-empty list"),
        ({"all": [{"field": "a", "op": "is", "value": 1}], "any": []}, "exactly one key"),
        ({"all": [{"field": "a", "op": "is", "value": 1, "extra": 2}]}, r"condition.all\[0\]: unknown keys"),
        ([1], "expected an object"),
    ],
)
def test_condition_mistakes_are_errors_never_a_silent_pass(cond, message):
    with pytest.raises(ValueError, match=message):
        main([chunk(None)], None, condition=cond if isinstance(cond, str) else json.dumps(cond))
    with pytest.raises(ValueError, match=message):
        main([], None, condition=cond if isinstance(cond, str) else json.dumps(cond))  # even with no chunks


def test_a_document_whose_value_cannot_be_compared_is_dropped_alone():
    items = [
        chunk(None, "1", updated="soon"),
        chunk(None, "2", updated="2026-06-01"),
        chunk(None, "3", level="high"),
        chunk(None, "4", tags='["broken'),
    ]
    cond = {
        "any": [
            {"field": "updated", "op": "after", "value": "2026-01-01"},
            {"field": "level", "op": "gt", "value": 1},
            {"field": "tags", "op": "contains", "value": "x"},
        ]
    }
    result = main(items, None, condition=json.dumps(cond))
    assert [c["metadata"]["segment_id"] for c in result["chunks"]] == ["2"]
    assert {d["segment_id"]: d["reason"] for d in result["dropped"]} == {
        "1": "uncomparable_value",
        "3": "uncomparable_value",
        "4": "uncomparable_value",
    }
    assert "soon" in result["dropped"][0]["detail"]


def test_condition_applies_as_well_as_the_acl():
    cond = json.dumps({"field": "dept", "op": "is", "value": "ops"})
    items = [chunk("a", "1", dept="ops"), chunk("b", "2", dept="ops"), chunk("a", "3", dept="hr")]
    result = main(items, "a", condition=cond)
    assert [c["metadata"]["segment_id"] for c in result["chunks"]] == ["1"]
    assert [d["reason"] for d in result["dropped"]] == ["no_matching_role", "condition_false"]


def test_condition_given_as_an_object():
    assert (
        main([chunk(None, dept="ops")], None, condition={"field": "dept", "op": "is", "value": "ops"})["kept_count"]
        == 1
    )


# --- property: a chunk whose ACL does not intersect the user's roles is never kept ------------------------

ROLE = st.sampled_from(["运维工程师", "物业经理", "前台", "admin", "Admin", "运维", "a b"])


def encode(roles, form):
    roles = list(roles)
    return {
        "list": roles,
        "json": json.dumps(roles, ensure_ascii=False),
        "comma": ",".join(roles),
        "convention": "," + ",".join(roles) + ",",
        "full": "，".join(roles),
        "pipe": " | ".join(roles),
        "dun": "、".join(roles),
        "semi": "；".join(roles),
    }[form]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sets(ROLE, max_size=3),
            st.sampled_from(["list", "json", "comma", "convention", "full", "pipe", "dun", "semi"]),
        ),
        max_size=8,
    ),
    st.sets(ROLE, max_size=3),
    st.sampled_from(["list", "json", "comma"]),
)
def test_no_chunk_outside_the_users_roles_is_ever_kept(docs, user, user_form):
    items = [chunk(encode(roles, form), str(n)) for n, (roles, form) in enumerate(docs)]
    result = main(items, encode(user, user_form) if user else None)
    kept_ids = {c["metadata"]["segment_id"] for c in result["chunks"]}
    for n, (roles, form) in enumerate(docs):
        # an empty role set is public in every form but the convention's ",,", which names no role (malformed)
        visible = (not roles and form != "convention") or bool(set(roles) & set(user))
        assert (str(n) in kept_ids) == visible


def test_dropped_is_capped_at_thirty_entries_but_counted_in_full():
    result = main([chunk("b", str(n)) for n in range(45)], "a")
    assert result["dropped_count"] == 45 and len(result["dropped"]) == 30
    assert result["dropped"][-1] == {
        "index": -1,
        "segment_id": "",
        "reason": "truncated",
        "detail": "and 16 more dropped",
    }


# --- hostile input (issue: hardening) -------------------------------------------------------------------

AFTER_2024 = {"field": "d", "op": "after", "value": "2024-01-01"}


@pytest.mark.parametrize("stored", [1.7e12, 1e20, -1e20, 10**30, "9999-12-31T23:59:59+14:00x"])
def test_a_document_date_out_of_range_costs_that_document_only(stored):
    items = [chunk(None, "bad", d=stored), chunk(None, "good", d="2025-06-01")]
    result = main(items, "a", condition=AFTER_2024)
    assert [c["metadata"]["segment_id"] for c in result["chunks"]] == ["good"]
    assert result["dropped"][0]["reason"] == "uncomparable_value"


def test_a_unix_time_in_seconds_still_compares():
    assert main([chunk(None, d=1.75e9)], "a", condition=AFTER_2024)["kept_count"] == 1  # 2025-06
    assert main([chunk(None, d=1.6e9)], "a", condition=AFTER_2024)["kept_count"] == 0  # 2020-09


@pytest.mark.parametrize("value", [1.7e12, 1e20, 10**400, "10000-01-01", float("inf")])
def test_a_condition_date_out_of_range_is_an_error_naming_the_condition(value):
    with pytest.raises(ValueError, match=r"condition\.all\[0\]"):
        main([], "a", condition={"all": [{"field": "d", "op": "before", "value": value}]})


@pytest.mark.parametrize(
    "cond",
    [
        {"field": "x", "op": "is", "value": 10**400},
        {"field": "x", "op": "gt", "value": -(10**400)},
        {"field": "x", "op": "in", "value": ["a", 10**400]},
        {"field": "x", "op": "is", "value": float("nan")},
    ],
)
def test_a_number_past_float_range_in_the_condition_is_an_error(cond):
    with pytest.raises(ValueError, match="condition: (number .* is out of range|nan is not a finite number)"):
        main([], "a", condition=cond)


def test_huge_numbers_in_documents_cost_that_document_only():
    items = [chunk("a", "1", x=10**5000), chunk("a", "2", x=10**400), chunk("a", "3", x="5")]
    for op, value in (("is", "5"), ("gt", 1), ("contains", "5"), ("in", ["5"])):
        result = main(items, "a", condition={"field": "x", "op": op, "value": value})
        assert "3" in [c["metadata"]["segment_id"] for c in result["chunks"]]
    text = '[{"content":"x","metadata":{"doc_metadata":{"access_roles":"a","x":1' + "0" * 400 + "}}}]"
    assert (
        main(text, "a", condition={"field": "x", "op": "gt", "value": 1})["dropped"][0]["reason"]
        == "uncomparable_value"
    )
    acl = [{"content": "x", "metadata": {"doc_metadata": {"access_roles": [10**5000]}}}]
    assert main(acl, "a")["dropped"][0]["reason"] == "malformed_acl"


def test_deep_json_is_malformed_acl_or_an_error_naming_the_input():
    items = [chunk("[" * 1000, "deep"), chunk("a", "ok"), chunk('["a", ' + "[" * 5000 + "]" * 5000 + "]", "deep2")]
    result = main(items, "a")
    assert [c["metadata"]["segment_id"] for c in result["chunks"]] == ["ok"]
    assert [d["reason"] for d in result["dropped"]] == ["malformed_acl", "malformed_acl"]
    with pytest.raises(ValueError, match="rag_chunks: JSON nested too deeply"):
        main("[" * 2000 + "]" * 2000, "a")
    with pytest.raises(ValueError, match="condition: nested more than 32 levels"):
        main([], "a", condition='{"not":' * 10000 + '{"field":"a","op":"empty"}' + "}" * 10000)
    deep = {"field": "a", "op": "empty"}
    for _ in range(10000):
        deep = {"not": deep}
    with pytest.raises(ValueError, match=r"condition(\.not)+: nested more than 32 levels"):
        main([], "a", condition=deep)
    contains = {"field": "t", "op": "contains", "value": "a"}
    assert main([chunk(None, t="[" * 5000)], "a", condition=contains)["dropped"][0]["reason"] == "uncomparable_value"


def test_a_dropped_items_detail_is_bounded_for_any_acl():
    roles = [f"role{n}" for n in range(5000)]
    result = main([chunk(",".join(roles), str(n)) for n in range(3)] + [chunk(roles, "list")], "nobody")
    assert result["dropped_count"] == 4
    for dropped in result["dropped"]:
        assert dropped["reason"] == "no_matching_role" and len(dropped["detail"]) <= 2000
        assert dropped["detail"].endswith("and 4950 more")
    assert main([chunk(",a,b,", "s")], "x")["dropped"][0]["detail"] == 'access_roles allows ["a", "b"]'


def test_an_acl_past_the_length_bound_fails_closed_whoever_asks():
    roles = [f"role{n}" for n in range(100_000)]
    for acl in (",".join(roles), roles, json.dumps(roles)):
        result = main([chunk(acl)], "role1")
        assert result["kept_count"] == 0 and result["dropped"][0]["reason"] == "malformed_acl"
        assert "too long for a list of roles" in result["dropped"][0]["detail"]
    assert kept(",".join(roles[:6000]), "role5999")  # 65,536 characters is the bound


def test_doc_metadata_given_as_json_text_is_read_and_unreadable_text_fails_closed():
    def item(doc_metadata):
        return {"content": "x", "metadata": {"segment_id": "s", "doc_metadata": doc_metadata}}

    assert main([item(json.dumps({"access_roles": ",a,"}))], "a")["kept_count"] == 1
    assert main([item(json.dumps({"access_roles": ",a,"}))], "b")["dropped"][0]["reason"] == "no_matching_role"
    assert main([item(json.dumps({}))], "b")["kept_count"] == 1  # no ACL field: missing_acl decides
    for bad in ("{not json", "[1, 2]", '"text"', 5, ["a"], "[" * 3000):
        assert main([item(bad)], "a")["dropped"][0]["reason"] == "malformed_acl", bad
    assert main([item(None)], "a")["kept_count"] == 1 and main([item("")], "a")["kept_count"] == 1


def test_kept_chunks_are_capped_for_a_code_node_keeping_the_first_in_input_order():
    items = [chunk("a", str(n)) for n in range(45)]
    result = main(items, "a")
    assert [c["metadata"]["segment_id"] for c in result["chunks"]] == [str(n) for n in range(30)]
    assert result["kept_count"] == 30 and result["dropped_count"] == 0
    assert len(result["warnings"]) == 1 and result["warnings"][0].startswith("45 chunks passed the filter")
    assert main(items, "a", max_chunks=None)["kept_count"] == 45  # the plugin tool's setting
    assert main(items, "a", max_chunks=50)["kept_count"] == 45
    with pytest.raises(ValueError, match="max_chunks"):
        main(items, "a", max_chunks=0)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 120), st.integers(0, 120), st.booleans())
def test_every_array_output_fits_a_code_node(n_kept, n_dropped, misspelt):
    field = "acess_roles" if misspelt else "access_roles"
    items = [chunk("a", f"k{n}", field=field) for n in range(n_kept)] + [chunk("b", f"d{n}") for n in range(n_dropped)]
    result = main(items, "a")
    for name in ("chunks", "dropped", "warnings"):
        assert len(result[name]) <= 30, name
    assert result["kept_count"] == len(result["chunks"])
