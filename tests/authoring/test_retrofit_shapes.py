"""More shapes (issue 33 item 2), each a fixture of ours in the shape Dify exports, retrofitted and run on the
runner: an LLM inside an iteration (retrieval inside) and inside a loop (retrieval outside), context through a
Template or Code node that only formats the retrieval result, and Dify's "Knowledge Retrieval + Chatbot" template
whose LLM has context off while its prompt uses {{#context#}} (`--enable-context`). What cannot be done is a refusal
ending with the next step."""

from pathlib import Path

import pytest
import yaml

from gcite.authoring.retrofit import Options, RetrofitRefusal, retrofit
from gcite.local.dify_rules import check_variable_ids
from gcite.local.llm import ExtractiveModel
from gcite.local.runner import parse_chatflow, run_chatflow
from gcite.local.services import start_local_services
from tests.support.plugins import shared_plugins
from tests.support.yamltext import safe_load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "retrofit"
SHAPES = sorted((FIXTURES / "shapes").glob("*.yml"))
CONTEXT_OFF = FIXTURES / "refuse" / "dify-knowledge-chatbot-context-disabled.en.yml"
IDENTIFIER = "gcite/gcite:0.0.0@" + "0" * 64
QUESTION = "巡更打卡、异常上报、消防通道和会议室预约分别怎么做？"
ALL = [*SHAPES, CONTEXT_OFF]


def options(**kwargs) -> Options:
    return Options(identifier=IDENTIFIER, enable_context=True, **kwargs)


def nodes_of(document: dict) -> dict[str, dict]:
    return {n["id"]: n for n in document["workflow"]["graph"]["nodes"]}


def shape(name: str) -> Path:
    return next(p for p in SHAPES if name in p.name)


@pytest.fixture(scope="module")
def services():
    svc = start_local_services(llm=ExtractiveModel(), shared_plugins=shared_plugins())
    yield svc
    svc.close()


@pytest.mark.parametrize("nodes", ["plugin", "code"])
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_each_shape_is_retrofitted_runs_and_cites(path, nodes, services):
    result = retrofit(path.read_text(encoding="utf-8"), options(nodes=nodes))
    assert not retrofit(result.text, options(nodes=nodes)).changed  # a second run changes nothing
    document, graph, root = parse_chatflow(result.text)
    check_variable_ids(document["workflow"])
    events = list(run_chatflow(result.text, QUESTION, {}, services))
    assert events[-1]["event"] == "workflow_finished" and events[-1]["data"]["status"] == "succeeded", events[-1]
    done = [e["data"] for e in events if e["event"] == "node_finished"]
    validated = [d for d in done if d["node_id"].startswith("gcite_validate_")]
    merged = [d for d in done if d["node_id"].startswith("gcite_merge_")]
    assert validated and len(validated) == len(merged)
    assert all(d["outputs"]["status"] == "cited" and d["outputs"]["invalid_ids"] == [] for d in validated)
    for d in merged:
        assert d["outputs"]["chunk_metadata"] and {c["source_type"] for c in d["outputs"]["chunk_metadata"]} == {"rag"}


def container_fields(document: dict, node_id: str, container: str, flag: str, key: str) -> None:
    nodes = nodes_of(document)
    node, parent = nodes[node_id], nodes[container]
    assert node["parentId"] == container and node["zIndex"] == 1002
    assert node["data"][flag] is True and node["data"][key] == container
    assert node["position"]["x"] == node["positionAbsolute"]["x"] - parent["position"]["x"]
    assert node["position"]["y"] == node["positionAbsolute"]["y"] - parent["position"]["y"]
    assert node["position"]["x"] + node["width"] <= parent["width"]
    assert node["position"]["y"] + node["height"] <= parent["height"]
    for edge in document["workflow"]["graph"]["edges"]:
        if node_id in (edge["source"], edge["target"]):
            assert edge["data"][flag] is True and edge["data"][key] == container and edge["zIndex"] == 1002


def test_inside_an_iteration_the_nodes_go_in_the_container_and_each_item_carries_its_sources(services):
    result = retrofit(shape("iteration").read_text(encoding="utf-8"), options(nodes="code"))
    nodes = nodes_of(result.document)
    iteration = next(n for n, node in nodes.items() if node["data"]["type"] == "iteration")
    added = [n for n in nodes if n.startswith("gcite_")]
    assert {n.split("_")[1] for n in added} == {"merge", "validate", "section"}
    for node_id in added:
        container_fields(result.document, node_id, iteration, "isInIteration", "iteration_id")
    section = next(n for n in added if n.startswith("gcite_section_"))
    assert nodes[iteration]["data"]["output_selector"] == [section, "output"]
    events = list(run_chatflow(result.text, QUESTION, {}, services))
    answer = "".join(e["answer"] for e in events if e["event"] == "message")
    sections = [s for s in answer.split("\n\n") if s.strip()]
    # each item: its text with [C:N] markers, then the list of the sources it cited, numbered from 1 again
    texts, lists = sections[0::2], sections[1::2]
    assert len(texts) == len(lists) >= 3
    assert all("[C:1]" in t for t in texts) and all(s.startswith("- [C:1] ") for s in lists)


def test_inside_a_loop_with_the_retrieval_outside(services):
    result = retrofit(shape("loop").read_text(encoding="utf-8"), options())
    nodes = nodes_of(result.document)
    loop = next(n for n, node in nodes.items() if node["data"]["type"] == "loop")
    merge = next(n for n in nodes if n.startswith("gcite_merge_"))
    for node_id in (merge, next(n for n in nodes if n.startswith("gcite_validate_"))):
        container_fields(result.document, node_id, loop, "isInLoop", "loop_id")
    edges = {(e["source"], e["target"]) for e in result.document["workflow"]["graph"]["edges"]}
    retrieval = next(n for n, node in nodes.items() if node["data"]["type"] == "knowledge-retrieval")
    assert (retrieval, merge) not in edges and (f"{loop}start", merge) in edges  # no edge crosses the container
    assert nodes[merge]["data"]["tool_parameters"]["rag_chunks"]["value"] == [retrieval, "result"]
    assert any("assign" in n and "loop variable" in n for n in result.notes)


@pytest.mark.parametrize("name", ["template-context", "code-context"])
def test_a_formatting_node_is_bypassed_and_explained(name):
    text = shape(name).read_text(encoding="utf-8")
    result = retrofit(text, options())
    nodes = nodes_of(result.document)
    merge = next(n for n in nodes if n.startswith("gcite_merge_"))
    retrieval = next(n for n, node in nodes.items() if node["data"]["type"] == "knowledge-retrieval")
    assert nodes[merge]["data"]["tool_parameters"]["rag_chunks"]["value"] == [retrieval, "result"]
    formatter = next(
        n
        for n, node in nodes.items()
        if node["data"]["type"] in ("template-transform", "code") and not n.startswith("gcite_")
    )
    assert formatter in nodes  # kept; the note says where it stands now
    assert any(formatter in n and "no longer feeds the context" in n for n in result.notes)


@pytest.mark.parametrize(
    "template, why",
    [
        ("{{ chunks[0].content }}", "picks among the chunks ([)"),
        ("{% for c in chunks %}{% if c.score > 0.5 %}{{ c.content }}{% endif %}{% endfor %}", "picks among the chunks"),
        ("{{ chunks | first }}", "picks among the chunks"),
    ],
)
def test_a_template_that_does_more_than_format_is_refused_with_what_to_change(template, why):
    document = safe_load(shape("template-context").read_text(encoding="utf-8"))
    tpl = next(n for n in document["workflow"]["graph"]["nodes"] if n["data"]["type"] == "template-transform")
    tpl["data"]["template"] = template
    with pytest.raises(RetrofitRefusal) as refused:
        retrofit(yaml.safe_dump(document, allow_unicode=True), options())
    message = str(refused.value)
    assert why in message and "in Dify, set the context of LLM" in message
    assert message.endswith("then export the app and retrofit that file")


def test_a_template_using_another_value_is_refused_with_what_to_change():
    with pytest.raises(RetrofitRefusal) as refused:
        retrofit(
            (FIXTURES / "refuse" / "svcvit-document-chat-context-via-template.zh.yml").read_text(encoding="utf-8"),
            options(),
        )
    assert "which also uses 1720795163496.class_name; in Dify, set the context of LLM" in str(refused.value)


def test_context_switched_off_names_the_flag_and_the_flag_wires_it():
    text = CONTEXT_OFF.read_text(encoding="utf-8")
    with pytest.raises(RetrofitRefusal) as refused:
        retrofit(text, Options(identifier=IDENTIFIER))
    assert '--enable-context wires it to "Knowledge Retrieval" (1711528915811)\'s result' in str(refused.value)
    result = retrofit(text, options())
    llm = nodes_of(result.document)["1711528917469"]["data"]
    assert llm["context"] == {"enabled": True, "variable_selector": ["gcite_merge_1711528917469", "formatted_chunks"]}
    assert any(c.startswith("context enabled: LLM") for c in result.changes)
    # Dify's template says "avoid mentioning ... the context": a warning
    assert any("Avoid mentioning that you obtained the information from the context." in w for w in result.warnings)


def test_options_retrofit_does_not_add_inside_a_container_are_refused_with_the_next_step():
    for option, kwargs in (("--acl", {"acl": "access_roles"}), ("--web gcite", {"web": "gcite"})):
        with pytest.raises(RetrofitRefusal) as refused:
            retrofit(shape("iteration").read_text(encoding="utf-8"), options(**kwargs))
        assert str(refused.value).startswith(option) and str(refused.value).endswith(f"retrofit without {option}")


NEXT_STEPS = (
    "retrofit that file",
    "retrofit without --",
    "(docs/retrofit.md, The manual recipe)",
    "leave the option out",
    "(not on its .gcite.yml)",
    "to the G-Cite team",
)


@pytest.mark.parametrize("path", sorted((FIXTURES / "refuse").glob("*.yml")), ids=lambda p: p.name)
def test_every_refusal_ends_with_the_next_step(path):
    with pytest.raises(RetrofitRefusal) as refused:
        retrofit(path.read_text(encoding="utf-8"), Options(identifier=IDENTIFIER))
    message = str(refused.value)
    assert "\n" not in message and message.endswith(NEXT_STEPS), message
