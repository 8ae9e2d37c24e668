import re

import pytest

from citations import merge as merge_chunks
from gcite.authoring.schema import ITEM_SCHEMAS, UnifiedChunk, json_schema_of, with_item_schema
from tests.support import ROOT, sdk
from tests.support.web_shapes import WEB_SHAPES
from tests.support.yamltext import safe_load

LANGS = ("en_US", "zh_Hans")


def load(path):
    return safe_load((ROOT / path).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def reg():
    return sdk.registration()


def test_the_plugin_loads_through_plugin_registration_with_the_merge_tool(reg):
    assert reg.configuration.name == "gcite"
    tools = {t.identity.name for p in reg.tools_configuration for t in p.tools}
    assert {"merge_chunks", "validate_citations"} <= tools
    assert reg.get_tool_cls("gcite", "merge_chunks").__name__ == "MergeChunksTool"


def test_manifest_follows_the_daemon_rules_not_just_the_sdk():
    manifest = load("manifest.yaml")
    assert re.fullmatch(r"[a-z0-9_-]{1,64}", manifest["author"])
    assert re.fullmatch(r"[a-z0-9_-]{1,128}", manifest["name"])
    assert re.fullmatch(r"\d{1,4}\.\d{1,4}\.\d{1,4}", str(manifest["version"]))
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(manifest["meta"]["version"]))
    assert manifest["meta"]["runner"] == {"language": "python", "version": "3.12", "entrypoint": "main"}
    assert (ROOT / manifest["privacy"]).is_file()
    assert (ROOT / "_assets" / manifest["icon"]).is_file()
    for key in ("label", "description"):
        assert set(LANGS) <= set(manifest[key])


def test_every_label_and_description_is_bilingual():
    provider = load("provider/gcite.yaml")
    assert (ROOT / "_assets" / provider["identity"]["icon"]).is_file()
    assert provider["identity"]["author"] == load("manifest.yaml")["author"]
    assert not any(c.get("required") for c in (provider.get("credentials_for_provider") or {}).values())
    texts = [provider["identity"]["label"], provider["identity"]["description"]]
    for tool_path in provider["tools"]:
        tool = load(tool_path)
        texts += [tool["identity"]["label"], tool["description"]["human"]]
        assert tool["description"]["llm"].strip()
        for parameter in tool.get("parameters", []):
            texts += [parameter["label"], parameter["human_description"]]
    for text in texts:
        assert set(LANGS) <= set(text), text


def test_runtime_requirements_are_bounded():
    """Each runtime requirement has a version and an upper bound, dify-plugin>=0.9.0 (the Marketplace's rule, which
    lives in gcite.release.marketplace)."""
    from gcite.release.marketplace import check_dependencies

    assert check_dependencies({"requirements.txt": (ROOT / "requirements.txt").read_bytes()}) == []


# --- the merge tool --------------------------------------------------------------------------------------

RAG = [
    {
        "content": "巡更需先打卡",
        "metadata": {
            "score": 0.7,
            "dataset_name": "楼宇知识库",
            "segment_id": "s1",
            "doc_metadata": {"document_title": "巡更指南"},
        },
    }
]


def test_merge_tool_invoked_through_the_sdk_gives_the_node_outputs(reg):
    web = WEB_SHAPES["tavily_plugin_json"][0]
    variables = sdk.invoke(
        reg, "merge_chunks", {"rag_chunks": RAG, "web_chunks": web, "max_web_results": 5.0, "max_chunks": 30}
    )
    assert variables == merge_chunks.main(RAG, web)
    assert variables["chunk_count"] == 2
    assert variables["formatted_chunks"].startswith("[C:1]\n巡更需先打卡")


def test_merge_tool_defaults_apply_when_form_parameters_are_absent(reg):
    web = [{"title": f"t{i}", "url": f"https://e.com/{i}", "content": "x"} for i in range(9)]
    assert sdk.invoke(reg, "merge_chunks", {"web_chunks": web})["chunk_count"] == 5


def test_merge_tool_accepts_a_json_string_where_dify_casts_one(reg):
    import json

    variables = sdk.invoke(reg, "merge_chunks", {"rag_chunks": json.dumps(RAG), "web_chunks": ""})
    assert variables["chunk_count"] == 1


@pytest.mark.parametrize(
    "parameters,field",
    [
        ({"rag_chunks": "{broken"}, "rag_chunks"),
        ({"web_chunks": {"weird": True}}, "web_chunks"),
        ({"max_chunks": 0}, "max_chunks"),
    ],
)
def test_merge_tool_raises_naming_the_parameter(reg, parameters, field):
    with pytest.raises(ValueError, match=field):
        sdk.invoke(reg, "merge_chunks", parameters)


# --- UnifiedChunk: model, YAML schema and node output agree -----------------------------------------------


@pytest.mark.parametrize("path,output,model", ITEM_SCHEMAS)
def test_tool_yaml_declares_the_model_schema(path, output, model):
    assert load(path)["output_schema"]["properties"][output]["items"] == json_schema_of(model)
    text = (ROOT / path).read_text(encoding="utf-8")
    assert with_item_schema(text, output, model) == text, "run `python -m gcite sync-schema`"


def test_node_outputs_are_exactly_the_declared_outputs_and_validate_as_unified_chunks():
    declared = load("tools/merge_chunks.yaml")["output_schema"]["properties"]
    result = merge_chunks.main(RAG, [shape for shape, _ in WEB_SHAPES.values()], max_web_results=50)
    assert set(result) == set(declared)
    type_of = {"string": str, "integer": int, "array": list}
    for name, spec in declared.items():
        assert isinstance(result[name], type_of[spec["type"]]), name
    for chunk in result["chunk_metadata"]:
        assert UnifiedChunk.model_validate(chunk).model_dump() == chunk


def test_schema_check_fails_when_the_model_gains_a_field():
    class Wider(UnifiedChunk):
        extra_field: str = ""

    assert (
        json_schema_of(Wider)
        != load("tools/merge_chunks.yaml")["output_schema"]["properties"]["chunk_metadata"]["items"]
    )


# --- the validator tool ----------------------------------------------------------------------------------


def test_validate_tool_over_the_merge_tools_output(reg):
    merged = sdk.invoke(reg, "merge_chunks", {"rag_chunks": RAG, "web_chunks": WEB_SHAPES["baidu"][0]})
    variables = sdk.invoke(
        reg,
        "validate_citations",
        {"answer": "网页说分三类[C:2]，打卡见【C：1】[C:7]。", "chunk_metadata": merged["chunk_metadata"]},
    )
    from citations import validate as validate_citations

    assert variables == validate_citations.main("网页说分三类[C:2]，打卡见【C：1】[C:7]。", merged["chunk_metadata"])
    assert variables["answer"] == "网页说分三类[1]，打卡见[2]。"
    assert variables["invalid_ids"] == ["7"]
    assert set(variables) == set(load("tools/validate_citations.yaml")["output_schema"]["properties"])


@pytest.mark.parametrize("unset", ["", [""], None])
def test_validate_tool_treats_an_unset_chunk_list_as_unknown(reg, unset):
    parameters = {"answer": "a[C:5]"} if unset is None else {"answer": "a[C:5]", "chunk_metadata": unset}
    variables = sdk.invoke(reg, "validate_citations", parameters)
    assert variables["answer"] == "a[1]" and variables["invalid_ids"] == []


def test_validate_tool_raises_naming_the_parameter(reg):
    with pytest.raises(ValueError, match=r"chunk_metadata\[0\]"):
        sdk.invoke(reg, "validate_citations", {"answer": "a", "chunk_metadata": [{"id": "x"}]})


def test_validate_outputs_validate_as_citations():
    from citations import validate as validate_citations
    from gcite.authoring.schema import Citation

    result = validate_citations.main(
        "a[C:1] b[C:2]", merge_chunks.main(RAG, WEB_SHAPES["bocha_raw"][0])["chunk_metadata"]
    )
    assert len(result["citations"]) == 2
    for citation in result["citations"]:
        assert Citation.model_validate(citation).model_dump() == citation


# --- the access filter tool ------------------------------------------------------------------------------


def acl_chunk(acl, segment_id, **meta):
    return {"content": "x", "metadata": {"segment_id": segment_id, "doc_metadata": {"access_roles": acl, **meta}}}


def test_filter_tool_through_the_sdk(reg):
    items = [
        acl_chunk('["运维工程师","物业经理"]', "1", level=3),
        acl_chunk("前台", "2", level=3),
        acl_chunk(None, "3", level=1),
    ]
    variables = sdk.invoke(
        reg,
        "filter_chunks",
        {"rag_chunks": items, "user_roles": "物业经理", "condition": '{"field": "level", "op": "gte", "value": 2}'},
    )
    assert [c["metadata"]["segment_id"] for c in variables["chunks"]] == ["1"]
    assert [d["reason"] for d in variables["dropped"]] == ["no_matching_role", "condition_false"]
    assert set(variables) == set(load("tools/filter_chunks.yaml")["output_schema"]["properties"])


def test_filter_tool_options(reg):
    items = [acl_chunk(None, "1"), acl_chunk("Admin", "2")]
    hidden = sdk.invoke(
        reg,
        "filter_chunks",
        {"rag_chunks": items, "user_roles": "admin", "missing_acl": "hidden", "case_sensitive": False},
    )
    assert [c["metadata"]["segment_id"] for c in hidden["chunks"]] == ["2"]
    default = sdk.invoke(reg, "filter_chunks", {"rag_chunks": items, "user_roles": "admin"})
    assert [c["metadata"]["segment_id"] for c in default["chunks"]] == ["1"]


@pytest.mark.parametrize(
    "parameters,field",
    [
        ({"rag_chunks": [], "user_roles": '["a"'}, "user_roles"),
        ({"rag_chunks": [], "condition": '{"field": "a", "op": "eq", "value": 1}'}, "unknown op"),
        ({"rag_chunks": [], "missing_acl": "sometimes"}, "missing_acl"),
    ],
)
def test_filter_tool_raises_on_bad_input(reg, parameters, field):
    with pytest.raises(ValueError, match=field):
        sdk.invoke(reg, "filter_chunks", parameters)


def test_filter_tool_documents_that_roles_come_from_a_trusted_source():
    parameter = next(p for p in load("tools/filter_chunks.yaml")["parameters"] if p["name"] == "user_roles")
    assert "trusted source" in parameter["human_description"]["en_US"]
    assert "可信来源" in parameter["human_description"]["zh_Hans"]
