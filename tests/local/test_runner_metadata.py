"""Knowledge Retrieval's metadata filter as Dify's SQL runs it on PostgreSQL (`doc_metadata` is JSONB): a JSON null
is not `empty` (only a missing key is), and no value operator admits a JSON null. The built-in knowledge base holds
what operators' data looks like: a JSON-null ACL, a blank ACL and an ACL outside the `,role1,role2,` convention."""

import pytest

from gcite.authoring import chatflows
from gcite.local.dify_metadata import admits, field_text
from gcite.local.knowledge import load_json
from gcite.local.runner import Services, run_chatflow
from gcite.local.service_api import dify_sse
from tests.support.plugins import shared_plugins

OPERATORS = [
    ("contains", ""),
    ("contains", "x"),
    ("not contains", "x"),
    ("start with", ""),
    ("end with", ""),
    ("is", ""),
    ("is", "x"),
    ("is not", "x"),
    ("is", 0),
    ("is not", 0),
    ("=", 0),
    ("≠", 0),
    ("in", ["x"]),
    ("not in", ["x"]),
    ("not in", "x,y"),
    ("<", 1),
    (">", -1),
    ("≤", 0),
    ("≥", 0),
    ("before", 1),
    ("after", -1),
]


def only(name: str, operator: str, value) -> dict:
    return {"logical_operator": "and", "conditions": [{"name": name, "comparison_operator": operator, "value": value}]}


@pytest.mark.parametrize("operator,value", OPERATORS)
def test_no_value_operator_admits_a_json_null_or_a_missing_key(operator, value):
    assert not admits(only("acl", operator, value), {"acl": None})
    assert not admits(only("acl", operator, value), {"other": "x"})


def test_empty_is_a_missing_key_and_a_json_null_is_not_empty():
    assert admits(only("acl", "empty", None), {}) and not admits(only("acl", "empty", None), {"acl": None})
    assert admits(only("acl", "not empty", None), {"acl": None}) and not admits(only("acl", "not empty", None), {})
    assert admits(only("acl", "empty", None), {"other": None})
    assert not admits(only("acl", "empty", None), {"acl": ""})  # "" is a value: not empty either


def test_contains_the_empty_string_matches_every_document_that_has_a_non_null_value():
    for stored in ("", " ", "[]", ",a,", 0, False, [], {}):
        assert admits(only("acl", "contains", ""), {"acl": stored}), stored
    assert not admits(only("acl", "contains", ""), {"acl": None})


def test_containers_read_as_postgresqls_jsonb_text():
    assert field_text(["a", "b"]) == '["a", "b"]'
    assert field_text({"bb": 1, "a": [True, None], "c": "x"}) == '{"a": [true, null], "c": "x", "bb": 1}'
    assert admits(only("acl", "contains", '"a"'), {"acl": ["a"]})


def test_the_knowledge_base_holds_null_blank_and_unconventional_acls():
    acls = {
        d["document_id"]: d["doc_metadata"].get("access_roles", "<missing>")
        for d in load_json("knowledge_base.json")["documents"]
    }
    assert acls["doc-parking"] is None  # what Dify's batch metadata editor writes for a field added without a value
    assert acls["doc-fire-drill"].strip() == "" and acls["doc-fire-drill"] != ""
    assert acls["doc-elevator"] == "保安;物业经理"  # outside the ,role1,role2, convention
    assert acls["doc-hvac"] == ",运维工程师,物业经理," and acls["doc-patrol"] == ""


@pytest.fixture(scope="module")
def retrievals():
    """What the runner's Knowledge Retrieval admitted, per role, with the shipped pre-filter."""
    seen: dict[str, dict] = {}
    streams: dict[str, str] = {}
    svc = Services(
        tool_credentials={"langgenius/tavily:": {"tavily_api_key": "tvly-TEST"}}, shared_plugins=shared_plugins()
    )
    try:
        for roles in ("物业经理", "前台", "保安"):
            records: list[dict] = []
            svc.retrieval_log = records.append
            events = run_chatflow(
                chatflows.PLUGIN_DSL.read_text(encoding="utf-8"),
                "电梯困人和停车场临时停放怎么处理",
                {"user_roles": roles},
                svc,
            )
            streams[roles] = "".join(dify_sse(e) for e in events)
            seen[roles] = records[0]
    finally:
        svc.close()
    return seen, streams


def test_the_runner_admits_exactly_what_difys_filter_admits(retrievals):
    seen, _ = retrievals
    documents = load_json("knowledge_base.json")["documents"]
    for roles, record in seen.items():
        expected = [
            d["document_id"] for d in documents if admits(record["metadata_filtering_conditions"], d["doc_metadata"])
        ]
        assert record["admitted"] == expected, roles
        assert "doc-parking" not in record["admitted"], roles  # a JSON-null ACL: hidden for everyone (fails closed)


def test_an_unconventional_acl_is_decided_by_the_filter_node(retrievals):
    seen, streams = retrievals
    elevator = "五分钟内通知维保单位"
    assert "doc-elevator" in seen["物业经理"]["admitted"] and elevator in streams["物业经理"]
    assert "doc-elevator" in seen["保安"]["admitted"] and elevator in streams["保安"]
    assert "doc-elevator" not in seen["前台"]["admitted"] and elevator not in streams["前台"]
    assert "停车场管理规定" not in streams["物业经理"]  # the JSON-null document never reaches anyone
