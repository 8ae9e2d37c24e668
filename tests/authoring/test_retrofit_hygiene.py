"""Retrofit hygiene (issue 34 item 10): a web search never sends an environment variable, a secret, a system
variable other than the question or a conversation variable to the search provider; names from the DSL reach the
terminal with control and bidi characters escaped; the output is never written through a symlink."""

from pathlib import Path

import pytest
import yaml

from gcite.authoring.retrofit import Options, RetrofitRefusal, retrofit
from gcite.authoring.retrofit.graph import printable
from gcite.cli.main import main
from tests.support.yamltext import safe_load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "retrofit"
IDENTIFIER = "gcite/gcite:0.0.0@" + "0" * 64
APP = "svcvit-image-knowledge-base.zh.yml"


def document() -> dict:
    return safe_load((FIXTURES / APP).read_text(encoding="utf-8"))


def with_query(selector: list[str]) -> str:
    d = document()
    for node in d["workflow"]["graph"]["nodes"]:
        if node["data"]["type"] == "knowledge-retrieval":
            node["data"]["query_variable_selector"] = selector
    return yaml.safe_dump(d, allow_unicode=True)


@pytest.mark.parametrize(
    "selector, why",
    [
        (["env", "SEARCH_API_KEY"], "the environment variable env.SEARCH_API_KEY"),
        (["sys", "user_id"], "the system variable sys.user_id, not the user's question"),
        (["sys", "app_id"], "the system variable sys.app_id"),
        (["conversation", "notes"], "the conversation variable conversation.notes"),
    ],
)
def test_a_web_search_never_takes_its_query_from_settings_or_system_variables(selector, why):
    with pytest.raises(RetrofitRefusal) as refused:
        retrofit(with_query(selector), Options(identifier=IDENTIFIER, web="gcite"))
    message = str(refused.value)
    assert why in message and "third-party search provider" in message
    assert message.endswith("in Dify, or retrofit without --web gcite")
    # without a web search nothing is sent anywhere: the same file is retrofitted
    assert retrofit(with_query(selector), Options(identifier=IDENTIFIER)).changed


def test_the_question_is_searched():
    result = retrofit(with_query(["sys", "query"]), Options(identifier=IDENTIFIER, web="gcite"))
    web = next(n for n in result.document["workflow"]["graph"]["nodes"] if n["id"].startswith("gcite_web_"))
    assert web["data"]["tool_parameters"]["query"]["value"] == "{{#sys.query#}}"


HOSTILE = "LLM\x1b[2K\r\u202eedge removed: everything\u2028\u200b"


def test_names_from_the_dsl_are_printed_escaped(tmp_path, capsys):
    d = document()
    for node in d["workflow"]["graph"]["nodes"]:
        node["data"]["title"] = HOSTILE
    path = tmp_path / "app.yml"
    path.write_text(yaml.safe_dump(d, allow_unicode=True), encoding="utf-8")
    assert main(["retrofit", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    for raw in ("\x1b", "\r", "\u202e", "\u2028", "\u200b"):
        assert raw not in out
    assert "LLM\\u001b[2K\\u000d\\u202eedge removed: everything\\u2028\\u200b" in out
    assert printable("普通的标题 📖") == "普通的标题 📖"


def test_a_refusal_naming_a_hostile_title_is_escaped_too(tmp_path, capsys):
    d = document()
    for node in d["workflow"]["graph"]["nodes"]:
        if node["data"]["type"] == "llm":
            node["data"]["title"] = HOSTILE
            node["data"]["context"] = {"enabled": False, "variable_selector": []}
    path = tmp_path / "app.yml"
    path.write_text(yaml.safe_dump(d, allow_unicode=True), encoding="utf-8")
    assert main(["retrofit", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\u202e" not in err and "\\u202e" in err


def test_the_output_is_never_written_through_a_symlink(tmp_path, capsys):
    app = tmp_path / "app.yml"
    app.write_text((FIXTURES / APP).read_text(encoding="utf-8"), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep me", encoding="utf-8")
    (tmp_path / "app.gcite.yml").symlink_to(elsewhere)
    assert main(["retrofit", str(app)]) == 2
    err = capsys.readouterr().err
    assert "is a symbolic link; the result is never written through one" in err
    assert elsewhere.read_text(encoding="utf-8") == "keep me"
    link = tmp_path / "out.gcite.yml"
    link.symlink_to(tmp_path / "missing.yml")  # a dangling link: not created through either
    assert main(["retrofit", str(app), "--out", str(link)]) == 2
    assert not (tmp_path / "missing.yml").exists()
