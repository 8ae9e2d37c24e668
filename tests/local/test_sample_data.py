"""The built-in sample data holds one building in Chinese and English: the same documents, roles and ACL cases, so
an English question cites the knowledge base (through the runner, the shipped chatflows and `make demo`)."""

import io

import pytest

from gcite.authoring import chatflows
from gcite.cli import demo
from gcite.client import collect, dify_events
from gcite.local.knowledge import load_json
from gcite.local.runner import run_chatflow
from gcite.local.services import local_services
from tests.support.plugins import shared_plugins

DOCUMENTS = load_json("knowledge_base.json")["documents"]
ENGLISH = [d for d in DOCUMENTS if d["document_id"].endswith("-en")]
CHINESE = [d for d in DOCUMENTS if not d["document_id"].endswith("-en")]


def acl(document):
    return document["doc_metadata"].get("access_roles", "<unset>")


def test_every_chinese_document_has_an_english_twin_with_the_same_acl():
    twins = {d["document_id"]: d for d in ENGLISH}
    assert len(CHINESE) == len(ENGLISH) == 7
    for document in CHINESE:
        twin = twins[document["document_id"] + "-en"]
        assert acl(twin) == acl(document), document["document_id"]
        assert len(twin["segments"]) == len(document["segments"])
        assert all(s["content"].isascii() or "°" in s["content"] for s in twin["segments"])  # English text
    cases = [acl(d) for d in ENGLISH]
    assert None in cases and " " in cases and "" in cases and "[]" in cases  # null, blank, public both ways
    assert "保安;物业经理" in cases and ",运维工程师,物业经理," in cases  # outside and inside the convention


from citations.answer_layout import machine_inputs  # noqa: E402


def answer(dsl, query, roles):
    with local_services(shared_plugins=shared_plugins()) as services:
        # as gcite.client's readers run it: the plugin chatflow's cited_answer node streams canonical markers
        events = list(
            run_chatflow(dsl.read_text(encoding="utf-8"), query, machine_inputs({"user_roles": roles}), services)
        )
    return collect(dify_events(events))


@pytest.mark.parametrize(
    "dsl",
    [chatflows.DSL_DIR / "gcite_chatflow.en.yml", chatflows.DSL_DIR / "gcite_chatflow_code.en.yml"],
    ids=lambda p: p.name,
)
def test_an_english_question_cites_the_knowledge_base(dsl):
    result = answer(dsl, "How do I book a meeting room?", "物业经理")
    assert result["status"] == "cited", result
    rag = [c for c in result["citations"] if c["source_type"] == "rag"]
    assert [c["document_title"] for c in rag][:1] == ["Meeting room rules"], result["citations"]
    assert "mini-program" in result["answer"] and "4 hours" in result["answer"]


@pytest.mark.parametrize(
    "dsl,question,title,passage",
    [
        ("gcite_chatflow.en.yml", "How do I register a visitor?", "Visitor policy", "temporary access card"),
        ("gcite_chatflow.yml", "访客怎么登记？", "访客管理制度", "被访员工确认"),  # the web page says 被访人
    ],
    ids=["en", "zh"],
)
def test_a_restricted_document_is_cited_for_its_role_only(dsl, question, title, passage):
    """What docs/page.md tells the reader to try: the visitor policy (roles 前台, 物业经理) as chen and as guest."""
    reception = answer(chatflows.DSL_DIR / dsl, question, "前台")
    guest = answer(chatflows.DSL_DIR / dsl, question, "")
    titles = lambda result: [c["document_title"] for c in result["citations"]]  # noqa: E731
    assert title in titles(reception), reception
    assert title not in titles(guest) and passage not in guest["answer"], guest


def test_make_demo_with_the_english_question_cites_the_knowledge_base():
    out = io.StringIO()
    assert demo.run(out, ("How do I book a meeting room?",))
    text = out.getvalue()
    cited = text.split("-- cited sources", 1)[1]
    assert "Meeting room rules" in cited and "(rag, chunk" in cited, text


def test_chinese_questions_still_cite_the_chinese_documents():
    result = answer(chatflows.PLUGIN_DSL, "会议室怎么预约？", "物业经理")
    assert "会议室使用规范" in [c["document_title"] for c in result["citations"]], result
    assert not any(c["document_title"].isascii() and c["source_type"] == "rag" for c in result["citations"])
