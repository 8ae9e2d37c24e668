"""The Chinese and English chatflow variants: labels, prompt and refusal phrase per language, run on the runner."""

import re

import pytest

from citations.phrases import normal_text, parse_phrases
from gcite.authoring import chatflows
from gcite.authoring.variants import TEXT
from gcite.local.llm import ExtractiveModel
from gcite.local.runner import Services, run_chatflow
from gcite.local.web_search import SampleSearchHttpClient
from tests.support.plugins import shared_plugins
from tests.support.yamltext import safe_load

REFUSAL_ZH = "根据现有资料无法确定"  # the phrases every part of G-Cite agrees on
REFUSAL_EN = "The available sources do not answer this question"
CJK = re.compile(r"[\u3400-\u9fff]")
VARIANTS = {
    "plugin-zh": "gcite_chatflow.yml",
    "code-zh": "gcite_chatflow_code.yml",
    "plugin-en": "gcite_chatflow.en.yml",
    "code-en": "gcite_chatflow_code.en.yml",
}
ENGLISH_KB = {
    "dataset_id": "ds-en",
    "dataset_name": "Office handbook",
    "documents": [
        {
            "document_id": "doc-rooms",
            "document_name": "meeting-rooms.md",
            "doc_metadata": {
                "document_title": "Meeting room rules",
                "access_roles": "",
                "source_file_url": "https://kb.example.com/meeting-rooms.pdf",
            },
            "segments": [
                {
                    "segment_id": "seg-rooms-1",
                    "content": "Meeting rooms are booked in the office app, for at most 4 hours per booking. "
                    "A booking nobody checks in to within 15 minutes is released.",
                }
            ],
        },
        {
            "document_id": "doc-visitors",
            "document_name": "visitors.md",
            "doc_metadata": {"document_title": "Visitor policy", "access_roles": ",reception,"},
            "segments": [
                {
                    "segment_id": "seg-visitors-1",
                    "content": "Visitors show an ID at reception and receive a temporary access card.",
                }
            ],
        },
    ],
}


def load(variant: str) -> dict:
    return safe_load((chatflows.DSL_DIR / VARIANTS[variant]).read_text(encoding="utf-8"))


def nodes(document: dict) -> dict[str, dict]:
    return {n["id"]: n["data"] for n in document["workflow"]["graph"]["nodes"]}


def checker(document: dict) -> str:
    """The node that checks the citations: the plugin chatflows' cited_answer (`cite`), else the validator."""
    return "cite" if "cite" in nodes(document) else "validate"


def prompt_of(document: dict) -> str:
    """The prompt the builder writes: the LLM node's system prompt, or cited_answer's instructions (the tool adds
    the citation rules, with the refusal phrase, in the instructions' language)."""
    found = nodes(document)
    if "cite" in found:
        return found["cite"]["tool_parameters"]["instructions"]["value"]
    return found["llm"]["prompt_template"][0]["text"]


def validator_phrases(document: dict) -> str:
    validate = nodes(document)[checker(document)]
    if validate["type"] == "tool":
        phrases = validate["tool_configurations"]["insufficient_phrases"]
        return phrases["value"] if isinstance(phrases, dict) else phrases
    selector = next(v["value_selector"] for v in validate["variables"] if v["variable"] == "insufficient_phrases")
    assert selector[0] == "conversation"
    return next(v["value"] for v in document["workflow"]["conversation_variables"] if v["name"] == selector[1])


# --- the files ---------------------------------------------------------------------------------------------


def test_the_default_build_writes_both_languages_of_both_chatflows():
    assert sorted(p.name for p in chatflows.generated()) == sorted(VARIANTS.values())
    assert sorted(p.name for p in chatflows.DSL_DIR.glob("*.yml")) == sorted(VARIANTS.values())


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_prompt_labels_and_refusal_phrase_are_in_the_variants_language(variant):
    document = load(variant)
    english = variant.endswith("-en")
    refusal, other = (REFUSAL_EN, REFUSAL_ZH) if english else (REFUSAL_ZH, REFUSAL_EN)
    prompt = prompt_of(document)
    assert other not in prompt
    if checker(document) == "validate":
        assert f'"{refusal}"' in prompt
    # the validate node recognises the phrase the prompt asks for first, and the other language's (an answer in the
    # question's language may refuse in it)
    assert validator_phrases(document).split("|") == [refusal, other]
    assert normal_text(refusal) in parse_phrases(validator_phrases(document))
    labels = [d["title"] for d in nodes(document).values()] + [document["app"]["name"], document["app"]["description"]]
    labels += [v["label"] for v in nodes(document)["start"]["variables"]]
    labels += [v["description"] for v in document["workflow"]["conversation_variables"]]
    if english:
        assert not [text for text in labels + [prompt] if CJK.search(text)]
    else:
        assert CJK.search(prompt) and all(CJK.search(text) for text in labels if text not in ("LLM",))
    assert "欧爪宝" not in prompt and "楼" not in prompt  # a neutral persona, no one building's assistant
    persona = TEXT["en" if english else "zh"]["persona"]
    assert prompt.split("\n")[1] == persona  # the first line under the role heading: the line to replace


def test_variants_differ_only_in_language_not_in_the_graph():
    for kind in ("plugin", "code"):
        zh, en = load(f"{kind}-zh"), load(f"{kind}-en")

        def shape(d):
            return (
                [(n["id"], n["data"]["type"]) for n in d["workflow"]["graph"]["nodes"]],
                [(e["source"], e["target"]) for e in d["workflow"]["graph"]["edges"]],
            )

        assert shape(zh) == shape(en)
        assert nodes(zh)["kr"]["metadata_filtering_conditions"] == nodes(en)["kr"]["metadata_filtering_conditions"]
        assert [v["id"] for v in zh["workflow"]["conversation_variables"]] == [
            v["id"] for v in en["workflow"]["conversation_variables"]
        ]


# --- run on the runner ---------------------------------------------------------------------------------------


def run(variant: str, query: str, svc: Services, roles: str = "") -> list[dict]:
    text = (chatflows.DSL_DIR / VARIANTS[variant]).read_text(encoding="utf-8")
    try:
        # as G-Cite's readers run it: a cited_answer node streams canonical markers
        return list(run_chatflow(text, query, {"user_roles": roles, "citation_style": "markers"}, svc))
    finally:
        svc.close()


def finished(events: list[dict], node_id: str) -> dict:
    return next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == node_id)


def llm_text(events: list[dict]) -> str:
    """The model's answer: the LLM node's text, or what cited_answer streamed (markers style)."""
    if any(e["event"] == "node_finished" and e["data"]["node_id"] == "llm" for e in events):
        return finished(events, "llm")["outputs"]["text"]
    return "".join(e["answer"] for e in events if e["event"] == "message")


def check_outputs(events: list[dict]) -> dict:
    node = (
        "cite" if any(e["event"] == "node_finished" and e["data"]["node_id"] == "cite" for e in events) else "validate"
    )
    return finished(events, node)["outputs"]


@pytest.mark.parametrize("variant", ["plugin-en", "code-en"])
def test_an_english_question_gets_an_english_cited_answer(variant):
    svc = Services(
        knowledge_base=ENGLISH_KB,
        search_http=SampleSearchHttpClient(fail=True),
        tavily_fail=True,
        shared_plugins=shared_plugins(),
    )
    events = run(variant, "How long can I book a meeting room?", svc)
    assert [e["event"] for e in events][-2:] == ["message_end", "workflow_finished"]
    assert not any(e["event"] == "error" for e in events)
    text = llm_text(events)
    assert text.startswith("Meeting rooms are booked in the office app") and "[C:1]" in text
    assert not CJK.search(text)
    assert check_outputs(events)["status"] == "cited"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_english_refusal_is_insufficient_evidence(variant):  # in the Chinese flows too
    svc = Services(
        knowledge_base={"dataset_id": "d", "dataset_name": "empty", "documents": []},
        search_http=SampleSearchHttpClient(fail=True),
        tavily_fail=True,
        shared_plugins=shared_plugins(),
    )
    events = run(variant, "What will the weather be tomorrow?", svc)
    assert llm_text(events) == REFUSAL_EN + "."
    outputs = check_outputs(events)
    assert outputs["status"] == "insufficient_evidence" and outputs["citations"] == []


def test_the_stand_in_llm_answers_in_the_questions_language():
    from gcite.local.engine import SystemPromptMessage, UserPromptMessage

    def answer(question: str, context: str = "") -> str:
        chunks = ExtractiveModel().invoke_llm(
            prompt_messages=[SystemPromptMessage(content=context), UserPromptMessage(content=question)],
            model_parameters={},
        )
        return "".join(c.delta.message.content for c in chunks)

    assert answer("Is it going to rain?") == REFUSAL_EN + "."
    assert answer("明天会下雨吗？") == REFUSAL_ZH + "。"
    context = "[C:1]\nRooms are booked for at most 4 hours. Extra text.\n\n[C:2]\n会议室须提前预约，单次最长 4 小时。"
    assert answer("How many hours can rooms be booked?", context) == "Rooms are booked for at most 4 hours[C:1]."
    assert answer("会议室单次最长预约多久？", context) == "会议室须提前预约，单次最长 4 小时[C:2]。"


# --- documentation: both languages, and nothing that points at a document users do not have ---------------------

UNAVAILABLE = re.compile(r"\bthe design\b|design's|§\s*\d|\bappendix\b|附录|设计文档|设计默认", re.IGNORECASE)
USER_DOCS = [
    "README.md",
    "README.zh-CN.md",
    "plugin_readme/README.md",
    "plugin_readme/README_zh_Hans.md",
    *sorted(str(p.relative_to(chatflows.ROOT)) for p in (chatflows.ROOT / "docs").rglob("*.md")),
]


@pytest.mark.parametrize("name", USER_DOCS + sorted(VARIANTS.values()))
def test_user_facing_text_refers_to_no_document_users_do_not_have(name):
    path = chatflows.DSL_DIR / name if name.endswith(".yml") else chatflows.ROOT / name
    text = path.read_text(encoding="utf-8")
    if name.endswith(".yml"):  # the DSL's own words: labels, descriptions and the prompt, not the embedded node code
        document = safe_load(text)
        text = "\n".join(
            [
                document["app"]["name"],
                document["app"]["description"],
                *[str(d.get("title", "")) for d in nodes(document).values()],
                prompt_of(document),
                *[v["description"] for v in document["workflow"]["conversation_variables"]],
            ]
        )
    assert not UNAVAILABLE.findall(text), name


def test_the_chinese_readme_is_linked_from_the_top_and_covers_what_a_user_does():
    root = chatflows.ROOT
    english = (root / "README.md").read_text(encoding="utf-8")
    chinese = (root / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "[简体中文](README.zh-CN.md)" in english.split("\n## ")[0]
    assert "[English](README.md)" in chinese.split("\n## ")[0]
    # the manual: docs/*.md in English, docs/zh/*.md in Chinese, page for page
    english = "\n".join([english, *(p.read_text(encoding="utf-8") for p in sorted((root / "docs").glob("*.md")))])
    pages = sorted((root / "docs" / "zh").glob("*.md"))
    chinese = "\n".join([chinese, *(p.read_text(encoding="utf-8") for p in pages)])
    headings = [line.lstrip("#").strip() for line in chinese.splitlines() if line.startswith(("# ", "## "))]
    for topic in ("安装插件", "导入对话流", "配置", "权限控制", "对话端点", "G-Cite 流式协议", "命令行"):
        assert any(topic in h for h in headings), topic
    for fact in (
        REFUSAL_ZH,
        REFUSAL_EN,
        "THIRD_PARTY_SIGNATURE_VERIFICATION_PUBLIC_KEYS",
        "/app/storage/public_keys/",
        "gcite keygen",
        "package --sign",
        "gcite verify",
        "source_file_url",
        "/gcite/chat",
        "3 + 16 × N",
        "--persona",
        "1.4.0",
    ):
        assert fact in chinese and fact in english, fact
    assert len(re.findall(r"[\u4e00-\u9fff]", chinese)) > 3000  # complete pages, not a summary


@pytest.mark.parametrize("variant,labels", [("code-en", ("User: ", "Assistant: ")), ("code-zh", ("用户：", "助手："))])
def test_the_memory_labels_turns_in_the_variants_language(variant, labels):
    svc = Services(
        knowledge_base=ENGLISH_KB,
        search_http=SampleSearchHttpClient(fail=True),
        tavily_fail=True,
        shared_plugins=shared_plugins(),
    )
    events = run(variant, "How long can I book a meeting room?", svc)
    text = finished(events, "remember")["outputs"]["history_text"]
    assert text.startswith(labels[0] + "How long can I book a meeting room?\n" + labels[1])


def test_the_validate_node_gets_the_question_for_the_support_check():
    plugin, code = nodes(load("plugin-en"))["cite"], nodes(load("code-en"))["validate"]
    assert plugin["tool_parameters"]["query"] == {"type": "mixed", "value": "{{#sys.query#}}"}
    assert {"variable": "question", "value_selector": ["sys", "query"]} in code["variables"]
