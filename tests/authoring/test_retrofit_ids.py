"""Added node ids (issue 34 items 6 and 10): unique by construction and checked against every id in the file,
never by truncation; a builder's node is never taken for ours by its id alone; `--package` names the author, name
and version this checkout publishes under, and refuses another with one line."""

import io
import zipfile
from pathlib import Path

import pytest
import yaml

from gcite import ROOT
from gcite.authoring.retrofit import Options, RetrofitRefusal, retrofit
from gcite.authoring.retrofit.plan import MAX_ID, PREFIX, legacy_id, new_id
from gcite.cli.main import main
from gcite.local.llm import ExtractiveModel
from gcite.local.runner import run_chatflow
from gcite.local.services import start_local_services
from tests.support.plugins import shared_plugins
from tests.support.yamltext import safe_load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "retrofit"
IDENTIFIER = "gcite/gcite:0.0.0@" + "0" * 64
QC = "dify-qc-knowledge-chatbot.en.yml"
LLM_A, LLM_B = "1711528802931", "1711528815414"
LONG = "after_sales_and_product_usage_answer_writer_for_the_building_"  # 61 characters shared


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def nodes_of(document: dict) -> dict[str, dict]:
    return {n["id"]: n for n in document["workflow"]["graph"]["nodes"]}


def colliding() -> str:
    """Dify's "Question Classifier + Knowledge + Chatbot" with two LLM ids sharing a 61-character prefix."""
    return load(QC).replace(LLM_A, LONG + "A").replace(LLM_B, LONG + "B")


@pytest.mark.parametrize(
    "owners", [(LONG + "A", LONG + "B"), ("llm-1", "llm_1"), ("x" * 80, "x" * 81), ("a_0123456789", "a")]
)
def test_ids_are_unique_by_construction_never_by_truncation(owners):
    for kind in ("merge", "validate", "filter", "save_history", "acl_roles"):
        ids = [new_id(kind, o) for o in owners]
        assert len(set(ids)) == len(ids)
        assert all(len(i) <= MAX_ID and i.startswith(PREFIX) and i.replace("_", "").isalnum() for i in ids)
    assert len({legacy_id("filter", LONG + "A"), legacy_id("filter", LONG + "B")}) == 1  # the old bug
    assert new_id("merge", "1711528802931") == "gcite_merge_1711528802931"  # short ids as before


def test_colliding_prefixes_with_role_filtered_branches_keep_each_branch_on_its_own_chunks():
    result = retrofit(colliding(), Options(identifier=IDENTIFIER, acl="access_roles", nodes="code"))
    nodes = nodes_of(result.document)
    added = [n for n in nodes if n.startswith(PREFIX)]
    assert len(added) == len(set(added)) == len([c for c in result.changes if c.startswith("node added")])
    edges = {(e["source"], e["target"]) for e in result.document["workflow"]["graph"]["edges"]}
    retrievals = {}
    for llm in (LONG + "A", LONG + "B"):
        merge = nodes[llm]["data"]["context"]["variable_selector"][0]
        rag = next(v["value_selector"] for v in nodes[merge]["data"]["variables"] if v["variable"] == "rag_chunks")
        filter_ = nodes[rag[0]]
        assert filter_["data"]["type"] == "code" and rag[1] == "chunks"
        source = next(v["value_selector"] for v in filter_["data"]["variables"] if v["variable"] == "rag_chunks")
        assert (source[0], filter_["id"]) in edges and (filter_["id"], merge) in edges and (merge, llm) in edges
        retrievals[llm] = source[0]
    assert len(set(retrievals.values())) == 2  # each LLM reads its own branch's retrieval, through its own filter
    assert not retrofit(result.text, Options(identifier=IDENTIFIER, acl="access_roles", nodes="code")).changed


def test_run_on_the_runner_the_taken_branch_cites_only_its_own_retrieval():
    text = retrofit(colliding(), Options(identifier=IDENTIFIER, acl="access_roles", nodes="code")).text
    services = start_local_services(llm=ExtractiveModel(), shared_plugins=shared_plugins())
    try:
        events = list(run_chatflow(text, "巡更打卡怎么做？", {"user_roles": "staff"}, services))
    finally:
        services.close()
    assert events[-1]["event"] == "workflow_finished" and events[-1]["data"]["status"] == "succeeded"
    done = {e["data"]["node_id"]: e["data"] for e in events if e["event"] == "node_finished"}
    ran_llms = [n for n in done if n.startswith(LONG)]
    assert len(ran_llms) == 1
    document = safe_load(text)
    merge = nodes_of(document)[ran_llms[0]]["data"]["context"]["variable_selector"][0]
    other = next(n for n in (LONG + "A", LONG + "B") if n != ran_llms[0])
    assert merge in done and nodes_of(document)[other]["data"]["context"]["variable_selector"][0] not in done


def test_a_builders_node_with_our_id_is_not_taken_for_ours():
    document = safe_load(load("svcvit-image-knowledge-base.zh.yml"))
    # a Code node of the builder's, with the id our merge node would have and our prefix, but not our outputs
    document["workflow"]["graph"]["nodes"].append(
        {
            "id": "gcite_merge_1743994891832",
            "data": {
                "type": "code",
                "title": "mine",
                "code": "def main():\n  return {}",
                "outputs": {"result": {"type": "string"}},
                "variables": [],
            },
        }
    )
    with pytest.raises(RetrofitRefusal) as refused:
        retrofit(yaml.safe_dump(document, allow_unicode=True), Options(identifier=IDENTIFIER))
    assert "node id gcite_merge_1743994891832 is taken by a node G-Cite did not add" in str(refused.value)
    assert str(refused.value).endswith("export the app and retrofit that file")


def test_an_llm_reading_a_builders_formatted_chunks_is_not_taken_as_retrofitted():
    document = safe_load(load("svcvit-image-knowledge-base.zh.yml"))
    nodes = nodes_of(document)
    nodes["1743994891832"]["data"]["context"]["variable_selector"] = ["gcite_mine", "formatted_chunks"]
    document["workflow"]["graph"]["nodes"].append(
        {"id": "gcite_mine", "data": {"type": "template-transform", "title": "fmt", "template": "x", "variables": []}}
    )
    with pytest.raises(RetrofitRefusal, match="no Knowledge Retrieval → LLM context path"):
        retrofit(yaml.safe_dump(document, allow_unicode=True), Options(identifier=IDENTIFIER))


def package(tmp_path: Path, author: str, name: str, version: str) -> Path:
    path = tmp_path / f"{author}-{name}-{version}.difypkg"
    manifest = yaml.safe_dump({"author": author, "name": name, "version": version, "type": "plugin"})
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("manifest.yaml", manifest)
    return path


@pytest.mark.parametrize(
    "author, name, version", [("evil", "gcite", None), ("gcite", "gcite", "9.9.9"), ("gcite", "gcite-fork", None)]
)
def test_package_of_another_author_name_or_version_is_refused(author, name, version, tmp_path, capsys):
    ours = safe_load((ROOT / "manifest.yaml").read_text(encoding="utf-8"))
    path = package(tmp_path, author, name, version or ours["version"])
    app = tmp_path / "app.yml"
    app.write_text(load(QC), encoding="utf-8")
    assert main(["retrofit", str(app), "--package", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not the G-Cite plugin this checkout builds" in err
    assert f"({ours['author']}/{ours['name']}:{ours['version']})" in err and not (tmp_path / "app.gcite.yml").exists()


def test_a_package_past_the_bounds_is_one_line(tmp_path, capsys):
    path = tmp_path / "big.difypkg"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.yaml", "author: gcite\nname: gcite\nversion: 0.1.0\n")
        with archive.open("big.bin", "w", force_zip64=True) as entry:
            block = bytes(1024 * 1024)
            for _ in range(65):
                entry.write(block)
    app = tmp_path / "app.yml"
    app.write_text(load(QC), encoding="utf-8")
    assert main(["retrofit", str(app), "--package", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "64 MiB uncompressed" in err
    (tmp_path / "bad.difypkg").write_bytes(io.BytesIO(b"PK\x03\x04garbage").getvalue())
    assert main(["retrofit", str(app), "--package", str(tmp_path / "bad.difypkg")]) == 2
    assert "not a readable plugin package" in capsys.readouterr().err
