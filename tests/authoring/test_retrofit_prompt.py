"""Prompt checks (issue 33 item 3): the builder's own refusal sentence becomes the validator's insufficient phrase
and replaces ours in the rules; instructions that contradict citing get a `warning:` line and are left as they are;
the rules name the web only when the app searches it; rules in zh, en, ja and es carry the same rules. Run on the
runner, an answer in the builder's own refusal words is `insufficient_evidence`, not `uncited`."""

import re
from pathlib import Path

import pytest
import yaml

from gcite.authoring.retrofit import Options, retrofit
from gcite.authoring.retrofit.rules import (
    LANGS,
    REFUSALS,
    RULE_HEADINGS,
    RULE_KEYS,
    builder_refusal,
    citation_rules,
    contradictions,
    detect_lang,
)
from gcite.cli.main import main
from gcite.local.llm import ExtractiveModel
from gcite.local.runner import run_chatflow
from gcite.local.services import start_local_services
from tests.support.plugins import shared_plugins
from tests.support.yamltext import safe_load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "retrofit"
IDENTIFIER = "gcite/gcite:0.0.0@" + "0" * 64
ES = "own-0.6.0-own-refusal.es.yml"
JA = "own-0.6.0-no-mention.ja.yml"
OWN_REFUSAL = "Lo siento, no cuento con esa información…"


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def options(**kwargs) -> Options:
    return Options(identifier=IDENTIFIER, **kwargs)


def llm_of(document: dict) -> dict:
    return next(n for n in document["workflow"]["graph"]["nodes"] if n["data"]["type"] == "llm")


def node_of(document: dict, prefix: str) -> dict:
    return next(n for n in document["workflow"]["graph"]["nodes"] if n["id"].startswith(prefix))


# --- the rules in four languages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("web", [False, True])
def test_every_language_carries_the_same_rules(web):
    for lang in LANGS:
        text = citation_rules(lang, web)
        numbered = re.findall(r"(?m)^(\d+)\. (.*)$", text)
        assert [int(n) for n, _ in numbered] == list(range(1, len(RULE_KEYS) + (0 if web else 0) + 1 - (not web)))
        assert text.startswith(RULE_HEADINGS[lang] + "\n")
        assert sum("[C:N]" in r for _, r in numbered) == 2  # the marker rule and the refusal rule
        assert "[C:1][C:3]" in text and "[C:1]" in text
        assert sum(REFUSALS[lang] in r for _, r in numbered) == 1
        assert "{{#" not in text and "{refusal}" not in text
    # the web rule, and only it, is what --web adds: the same count in every language
    counts = {lang: len(re.findall(r"(?m)^\d+\.", citation_rules(lang, web))) for lang in LANGS}
    assert set(counts.values()) == {len(RULE_KEYS) if web else len(RULE_KEYS) - 1}


WEB_WORDS = {"zh": ("公网", "第三方网站"), "en": ("web", "websites"), "ja": ("ウェブ",), "es": ("web",)}


@pytest.mark.parametrize("lang", LANGS)
def test_the_web_is_named_only_when_the_app_searches_it(lang):
    assert not any(w in citation_rules(lang, False) for w in WEB_WORDS[lang])
    assert all(w in citation_rules(lang, True) for w in WEB_WORDS[lang])


def test_retrofit_names_the_web_only_with_a_web_search():
    text = load("own-0.3.0-code-after-llm.en.yml")
    plain = llm_of(retrofit(text, options()).document)["data"]["prompt_template"][0]["text"]
    web = llm_of(retrofit(text, options(web="gcite")).document)["data"]["prompt_template"][0]["text"]
    assert "websites" not in plain and "web chunks" not in plain
    assert "websites" in web and "web chunks" in web
    # an app with a search tool of its own (langgenius/google) searches the web too
    other = retrofit(load("own-0.5.0-classifier-other-plugin.zh.yml"), options()).document
    assert "公网" in llm_of(other)["data"]["prompt_template"][0]["text"]


@pytest.mark.parametrize(
    "text, lang",
    [
        ("你是物业助理，请根据资料回答。", "zh"),
        ("You are a helpful assistant. Answer from the context.", "en"),
        ("あなたは施設管理の担当者です。コンテキストを使って答えてください。", "ja"),
        ("Eres el asistente del edificio. Responde a la pregunta con la información del contexto.", "es"),
    ],
)
def test_the_rules_come_in_the_prompts_language(text, lang):
    assert detect_lang(text) == (lang, True)


def test_another_language_gets_english_rules_with_a_note():
    assert detect_lang("당신은 건물 관리 도우미입니다. 문맥을 사용해 답하세요.") == ("en", False)
    document = safe_load(load(ES))
    llm_of(document)["data"]["prompt_template"][0]["text"] = "당신은 건물 관리 도우미입니다. 문맥을 사용해 답하세요."
    result = retrofit(yaml.safe_dump(document, allow_unicode=True), options())
    assert RULE_HEADINGS["en"] in llm_of(result.document)["data"]["prompt_template"][0]["text"]
    assert any("no rules of its own" in n and "English" in n for n in result.notes)


# --- the builder's refusal sentence ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt, phrase",
    [
        ("Si no sabes, responde exactamente: 'Lo siento, no cuento con esa información…'", OWN_REFUSAL),
        (
            'If the context does not help, say "Sorry, I don\'t have that information."',
            "Sorry, I don't have that information.",
        ),
        ("资料里没有答案时，请回答“抱歉，暂时无法回答这个问题”。", "抱歉，暂时无法回答这个问题"),
        ("分からない場合は「申し訳ありませんが、分かりません」と答えてください。", "申し訳ありませんが、分かりません"),
        ('Answer in a "friendly" tone.', None),
        ("Don't make anything up.", None),
    ],
)
def test_the_builders_refusal_sentence_is_found(prompt, phrase):
    assert builder_refusal(prompt) == phrase


@pytest.mark.parametrize("nodes", ["plugin", "code"])
def test_the_builders_refusal_replaces_ours_and_is_an_insufficient_phrase(nodes):
    result = retrofit(load(ES), options(nodes=nodes))
    system = llm_of(result.document)["data"]["prompt_template"][0]["text"]
    rules = system[system.index(RULE_HEADINGS["es"]) :]
    assert OWN_REFUSAL in rules and REFUSALS["es"] not in rules
    assert system.count(OWN_REFUSAL) == 2  # the builder's own line, and the rule naming it
    validate = node_of(result.document, "gcite_validate_")["data"]
    if nodes == "plugin":
        phrases = validate["tool_configurations"]["insufficient_phrases"]
    else:
        phrases = (
            re.search(r"def main\(\s*answer, chunk_metadata=None, insufficient_phrases=(\"[^\"]*\")", validate["code"])
            .group(1)
            .strip('"')
        )
    assert phrases.split("|")[0] == OWN_REFUSAL and REFUSALS["zh"] in phrases.split("|")
    assert any("own refusal" in n for n in result.notes)
    assert not retrofit(result.text, options(nodes=nodes)).changed


class Refuses(ExtractiveModel):
    """An LLM that answers every question with the builder's own refusal sentence."""

    def invoke_llm(self, *, prompt_messages, model_parameters, tools=None, stop=None, stream=True):
        self.prompts.append(list(prompt_messages))
        return self._chunks(prompt_messages, iter([OWN_REFUSAL]))


@pytest.mark.parametrize("nodes", ["plugin", "code"])
def test_run_on_the_runner_the_builders_refusal_is_insufficient_evidence(nodes):
    text = retrofit(load(ES), options(nodes=nodes)).text
    services = start_local_services(llm=Refuses(), shared_plugins=shared_plugins())
    try:
        events = list(run_chatflow(text, "¿Cómo se reserva la sala de reuniones?", {}, services))
    finally:
        services.close()
    assert events[-1]["event"] == "workflow_finished", events[-1]
    validate = next(
        e["data"]
        for e in events
        if e["event"] == "node_finished" and e["data"]["node_id"].startswith("gcite_validate_")
    )
    assert validate["outputs"]["status"] == "insufficient_evidence"


# --- instructions that contradict citing -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sentence",
    [
        "Avoid mentioning that you obtained the information from the context.",
        "Never refer to the sources in your answer.",
        "不要在回答中提及资料来源。",
        "コンテキストから情報を得たことについて言及しないでください。",
        "No menciones las fuentes en tu respuesta.",
    ],
)
def test_instructions_against_citing_are_found(sentence):
    assert contradictions("You are a helper.\n" + sentence + "\nBe brief.") == [sentence]


@pytest.mark.parametrize(
    "sentence",
    [
        "Use the context to answer.",
        "If you don't know, say that you don't know.",
        "回答要简洁。",
        "ユーザーの質問と同じ言語で回答してください。",
        "Responde en español.",
    ],
)
def test_ordinary_instructions_are_not_warned_about(sentence):
    assert contradictions(sentence) == []


def test_a_contradicting_prompt_gets_a_warning_line_and_is_kept(tmp_path, capsys):
    path = tmp_path / JA
    path.write_text(load(JA), encoding="utf-8")
    assert main(["retrofit", str(path), "--out", str(tmp_path / "out.gcite.yml")]) == 0
    out = capsys.readouterr().out
    warnings = [line for line in out.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and "コンテキストから情報を得たことについて言及しないでください" in warnings[0]
    assert "left as it is" in warnings[0]
    system = llm_of(safe_load((tmp_path / "out.gcite.yml").read_text(encoding="utf-8")))
    assert "言及しないでください" in system["data"]["prompt_template"][0]["text"]
    assert RULE_HEADINGS["ja"] in system["data"]["prompt_template"][0]["text"]
