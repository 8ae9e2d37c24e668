"""`retrofit --sources-in-answer`: the Answer node showing a retrofitted LLM's text then lists the sources it cited,
wired as in our own chatflows (`chatflows.source_list`); the builder's Answer text and variables are kept; a second run
changes nothing; an Answer showing two retrofitted LLMs is refused; a workflow's End nodes output the list. Run on the
runner, the answer ends with the list of exactly the cited sources in the validate node's numbering, and the
streaming endpoint's protocol still passes only the answer."""

import copy
import re
from pathlib import Path

import pytest
import yaml

from citations.answer_layout import SOURCE_LIST, source_list
from gcite.authoring import chatflows
from gcite.authoring.retrofit import PREFIX, Options, RetrofitRefusal, retrofit
from gcite.local.llm import ExtractiveModel, first_sentence, message_text, numbered_chunks
from gcite.local.runner import run_chatflow
from gcite.local.services import start_local_services
from gcite.protocol import translate
from tests.support.plugins import shared_plugins
from tests.support.yamltext import safe_load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "retrofit"
POSITIVE = sorted(FIXTURES.glob("*.yml"))
IDENTIFIER = "gcite/gcite:0.0.0@" + "0" * 64
# four chunks of the built-in knowledge base come back for it
QUESTION = "巡更打卡、异常上报、消防通道和会议室预约分别怎么做？"


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def options(**kwargs) -> Options:
    return Options(identifier=IDENTIFIER, sources_in_answer=True, **kwargs)


def nodes_of(document: dict) -> dict[str, dict]:
    return {n["id"]: n for n in document["workflow"]["graph"]["nodes"]}


def edges_of(document: dict) -> set[tuple[str, str]]:
    return {(e["source"], e["target"]) for e in document["workflow"]["graph"]["edges"]}


def retrofitted_llms(document: dict) -> list[str]:
    return [
        n
        for n, node in nodes_of(document).items()
        if node["data"].get("type") == "llm"
        and ((node["data"].get("context") or {}).get("variable_selector") or [""])[0].startswith(PREFIX)
    ]


def validate_of(llm: str) -> str:
    return f"{PREFIX}validate_{llm}"[:50]


# --- the wiring -------------------------------------------------------------------------------------------------


def test_the_appended_list_is_what_our_own_chatflows_show_after_the_llm_text():
    # the Code-node chatflows, and the plugin ones built with --answer llm-node (their default is cited_answer)
    texts = {path.name: path.read_text(encoding="utf-8") for path in sorted(chatflows.DSL_DIR.glob("*_code*.yml"))}
    texts["plugin llm-node"] = chatflows.chatflow_text(chatflows.Variant(answer="llm-node"))
    for name, text in texts.items():
        answer = nodes_of(safe_load(text))["answer"]["data"]["answer"]
        assert answer == "{{#llm.text#}}" + source_list("validate"), name
    assert source_list("v") == "\n\n{{#v.references_by_marker_markdown#}}"
    assert SOURCE_LIST in chatflows.VALIDATE_OUTPUTS


@pytest.mark.parametrize("path", POSITIVE, ids=lambda p: p.name)
def test_each_answer_showing_a_retrofitted_llm_lists_its_sources_and_keeps_its_own_text(path):
    before = safe_load(path.read_text(encoding="utf-8"))
    result = retrofit(path.read_text(encoding="utf-8"), options())
    after = result.document
    old, new = nodes_of(before), nodes_of(after)
    llms = retrofitted_llms(after)
    extended = []
    for node_id, node in old.items():
        if node["data"].get("type") != "answer":
            continue
        shown = [llm for llm in llms if f"{{{{#{llm}.text#}}}}" in node["data"]["answer"]]
        if not shown:
            assert new[node_id] == node, node_id  # an Answer not showing a retrofitted LLM is left alone
            continue
        validate = validate_of(shown[0])
        data = new[node_id]["data"]
        assert data["answer"] == node["data"]["answer"].rstrip() + source_list(validate)
        assert {k: v for k, v in data.items() if k != "answer"} == {
            k: v for k, v in node["data"].items() if k != "answer"
        }  # variables, title: kept
        assert (validate, node_id) in edges_of(after)  # the list is upstream of the Answer that shows it
        extended.append(node_id)
    lines = [line for line in result.changes if line.startswith("answer extended: ")]
    assert len(lines) == len(extended) and all(f"({n})" in " ".join(lines) for n in extended)
    if after["app"]["mode"] == "advanced-chat":
        assert extended  # every advanced-chat fixture has an Answer showing the LLM's text
    else:  # a workflow: each End node with the citations output also outputs the list
        ends = [
            n
            for n in new.values()
            if n["data"].get("type") == "end" and any(o["variable"] == "citations" for o in n["data"]["outputs"])
        ]
        assert ends
        for end in ends:
            citations = next(o for o in end["data"]["outputs"] if o["variable"] == "citations")
            assert {
                "variable": "references",
                "value_selector": [citations["value_selector"][0], SOURCE_LIST],
                "value_type": "string",
            } in end["data"]["outputs"]
    second = retrofit(result.text, options())
    assert second.changes == [] and second.text == result.text


@pytest.mark.parametrize("name", ["dify-qc-knowledge-chatbot.en.yml", "own-0.4.0-workflow-extractor.en.yml"])
def test_the_option_on_an_app_retrofitted_before_adds_only_the_list(name):
    first = retrofit(load(name), Options(identifier=IDENTIFIER))
    later = retrofit(first.text, options())
    direct = retrofit(load(name), options())
    assert later.changes and all(
        line.startswith(("answer extended: ", "edge added: gcite_validate_", "output added: End "))
        for line in later.changes
    )
    assert nodes_of(later.document) == nodes_of(direct.document)
    assert edges_of(later.document) == edges_of(direct.document)
    assert retrofit(later.text, options()).changes == []


def test_a_list_already_wired_by_hand_is_not_added_again():
    first = retrofit(load("svcvit-image-knowledge-base.zh.yml"), Options(identifier=IDENTIFIER))
    document = copy.deepcopy(first.document)
    validate = validate_of("1743994891832")
    nodes_of(document)["answer"]["data"]["answer"] += f"\n\n参考：\n{{{{#{validate}.references_markdown#}}}}"
    document["workflow"]["graph"]["edges"].append({"source": validate, "target": "answer"})
    again = retrofit(yaml.safe_dump(document, allow_unicode=True), options())
    assert not any(line.startswith("answer extended: ") for line in again.changes)
    assert nodes_of(again.document)["answer"] == nodes_of(document)["answer"]


def test_an_answer_showing_two_retrofitted_llms_is_refused_with_its_reason():
    document = safe_load(load("dify-qc-knowledge-chatbot.en.yml"))
    nodes_of(document)["1711528833796"]["data"]["answer"] = "{{#1711528802931.text#}}\n\n{{#1711528815414.text#}}"
    text = yaml.safe_dump(document, allow_unicode=True)
    with pytest.raises(RetrofitRefusal) as refused:
        retrofit(text, options())
    assert str(refused.value) == (
        '--sources-in-answer: Answer "Answer 2" (1711528833796) shows the text of LLMs "LLM" (1711528802931) and '
        '"LLM" (1711528815414), whose [C:N] markers number different chunk lists, so one source list cannot serve '
        "both; split the Answer node or leave the option out"
    )
    assert retrofit(text, Options(identifier=IDENTIFIER)).changed  # without the option it is retrofitted


def test_an_llm_whose_text_no_answer_shows_is_named_in_a_note():
    document = safe_load(load("svcvit-image-knowledge-base.zh.yml"))
    nodes_of(document)["answer"]["data"]["answer"] = "{{#sys.query#}}"
    result = retrofit(yaml.safe_dump(document, allow_unicode=True), options())
    assert not any(line.startswith("answer extended: ") for line in result.changes)
    assert nodes_of(result.document)["answer"]["data"]["answer"] == "{{#sys.query#}}"
    assert any(
        note.startswith(
            '--sources-in-answer: no Answer node shows {{#1743994891832.text#}} (the text of LLM "LLM" (1743994891832)'
        )
        for note in result.notes
    )


# --- on the runner ----------------------------------------------------------------------------------------------


class CitesLastThenFirst(ExtractiveModel):
    """Cites the last numbered chunk, then the first, then a chunk that does not exist, and leaves the others out:
    the validate node renumbers them 1, 2 and drops the invalid one. An LLM given no chunks repeats the question."""

    def invoke_llm(self, *, prompt_messages, model_parameters, tools=None, stop=None, stream=True):
        self.prompts.append(list(prompt_messages))
        chunks = numbered_chunks("\n".join(message_text(m) for m in prompt_messages if m.role.value == "system"))
        if len(chunks) < 3:
            answer = message_text(prompt_messages[-1])
        else:
            (last, last_text), (first, first_text) = chunks[-1], chunks[0]
            answer = (
                f"{first_sentence(last_text)}[C:{last}]。{first_sentence(first_text)}[C:{first}][C:{last}]。"
                f"另有一句[C:{len(chunks) + 5}]。"
            )
        return self._chunks(prompt_messages, (answer[i : i + 4] for i in range(0, len(answer), 4)))


@pytest.fixture(scope="module")
def services():
    svc = start_local_services(llm=CitesLastThenFirst(), shared_plugins=shared_plugins())
    yield svc
    svc.close()


def node_outputs(events: list[dict], prefix: str) -> dict:
    return next(
        e["data"]["outputs"]
        for e in events
        if e["event"] == "node_finished" and e["data"]["node_id"].startswith(prefix)
    )


# own-0.3.0's Answer streams a template's own text before the retrieval has run: the endpoint holds it until the
# chunk list comes, so that one cites as the others do
@pytest.mark.parametrize(
    "name,nodes",
    [
        ("svcvit-image-knowledge-base.zh.yml", "plugin"),
        ("svcvit-image-knowledge-base.zh.yml", "code"),
        ("own-0.3.0-code-after-llm.en.yml", "code"),
    ],
)
def test_the_answer_ends_with_the_list_of_exactly_the_cited_sources_and_the_endpoint_drops_it(name, nodes, services):
    result = retrofit(load(name), options(nodes=nodes))
    events = list(run_chatflow(result.text, QUESTION, {}, services))
    assert events[-1]["event"] == "workflow_finished" and events[-1]["data"]["status"] == "succeeded"
    chunks = {c["id"]: c for c in node_outputs(events, f"{PREFIX}merge_")["chunk_metadata"]}
    validated = node_outputs(events, f"{PREFIX}validate_")
    llm_text = next(
        e["data"]["outputs"]["text"]
        for e in events
        if e["event"] == "node_finished" and e["data"]["node_type"] == "llm"
    )
    last, first = str(len(chunks)), "1"
    assert len(chunks) >= 3 and re.findall(r"\[C:(\d+)\]", llm_text) == [last, first, last, str(len(chunks) + 5)]
    # the validate node numbers the sources by first appearance; the invalid id and the uncited chunks are not in it
    assert validated["id_map"] == {last: 1, first: 2} and validated["invalid_ids"] == [str(len(chunks) + 5)]
    answer = "".join(e["answer"] for e in events if e["event"] == "message")
    body, _, listed = answer.rpartition("\n\n")
    lines = listed.split("\n")
    assert [line.split("]")[0] for line in lines] == [f"- [C:{last}", f"- [C:{first}"]  # line k = source number k
    for line, cited in zip(lines, (last, first), strict=True):
        assert chunks[cited]["document_title"] in line
    assert listed == validated[SOURCE_LIST] and llm_text in body
    # the streaming endpoint: the answer without the list, the citations in the validate node's numbering
    protocol = list(translate(events))
    text = "".join(data["text"] for kind, data in protocol if kind == "text")
    assert text.endswith(validated["answer_without_markers"]) and "[C:" not in text
    assert not any(chunks[c]["document_title"] in text for c in (last, first))
    done = protocol[-1]
    assert [kind for kind, _ in protocol].index("sources") < [kind for kind, _ in protocol].index("text")
    assert done[0] == "done" and [(c["number"], c["id"]) for c in done[1]["citations"]] == [(1, last), (2, first)]


def test_a_workflow_s_end_node_outputs_the_list(services):
    result = retrofit(load("own-0.4.0-workflow-extractor.en.yml"), options())
    events = list(run_chatflow(result.text, QUESTION, {"question": QUESTION}, services))
    outputs = events[-1]["data"]["outputs"]
    validated = node_outputs(events, f"{PREFIX}validate_")
    assert outputs["references"] == validated[SOURCE_LIST] and outputs["references"].startswith("- [C:")
    assert [c["id"] for c in outputs["citations"]] == list(validated["id_map"])
