"""docs/retrofit.md and docs/zh/retrofit.md: the rules to paste are the ones retrofit adds, every option of the
command is explained, and the sample output is what the command prints for the fixture it was taken from."""

import re

import pytest

from gcite.authoring.retrofit import Options, chunks_section, citation_rules, retrofit
from gcite.cli.main import build_parser
from tests.support import ROOT

PAGES = {"en": ROOT / "docs" / "retrofit.md", "zh": ROOT / "docs" / "zh" / "retrofit.md"}
SAMPLES = {"en": "own-0.3.0-code-after-llm.en.yml", "zh": "svcvit-image-knowledge-base.zh.yml"}


def page(lang: str) -> str:
    return PAGES[lang].read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", sorted(PAGES))
def test_the_rules_to_paste_are_the_rules_retrofit_adds(lang):
    assert f"```\n{citation_rules(lang)}\n```" in page(lang)
    assert f"```\n{chunks_section(lang)}\n```" in page(lang)


@pytest.mark.parametrize("lang", sorted(PAGES))
def test_every_option_is_explained(lang):
    commands = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices)
    options = {o for action in commands.choices["retrofit"]._actions for o in action.option_strings} - {"-h", "--help"}
    for option in options:
        assert re.search(rf"`[^`\n]*{re.escape(option)}(?![\w-])[^`\n]*`", page(lang)), option


@pytest.mark.parametrize("lang", sorted(PAGES))
def test_the_sample_output_is_what_the_command_prints(lang):
    fixture = ROOT / "tests" / "fixtures" / "retrofit" / SAMPLES[lang]
    identifier = "gcite/gcite:0.1.0@" + "0" * 64
    changes = retrofit(fixture.read_text(encoding="utf-8"), Options(identifier=identifier)).changes
    block = re.search(r"```\n(node added: .*?)\nwrote ", page(lang), re.DOTALL).group(1)
    assert block.splitlines() == changes


SOURCE_SAMPLES = {"en": "dify-qc-knowledge-chatbot.en.yml", "zh": "svcvit-image-knowledge-base.zh.yml"}


@pytest.mark.parametrize("lang", sorted(PAGES))
def test_the_source_list_sample_is_what_the_option_adds(lang):
    text = (ROOT / "tests" / "fixtures" / "retrofit" / SOURCE_SAMPLES[lang]).read_text(encoding="utf-8")
    identifier = "gcite/gcite:0.1.0@" + "0" * 64
    plain = retrofit(text, Options(identifier=identifier)).changes
    added = [
        line
        for line in retrofit(text, Options(identifier=identifier, sources_in_answer=True)).changes
        if line not in plain
    ]
    block = re.search(r"```\n(answer extended: .*?)\n```", page(lang), re.DOTALL).group(1)
    assert block.splitlines() == added
