"""Reading every form Dify writes, within bounds (issue 33 item 1, issue 34 item 5): the export API's JSON form with
emoji escaped as surrogate pairs keeps the characters exactly; alias bombs, deep nesting, lone surrogates, oversize
and malformed text are each one refusal line naming the position and the next step, never a traceback, a
`MemoryError` or a `RecursionError`; the CLI and the runner read through the same bounded loader."""

import json
import time
from pathlib import Path

import pytest
import yaml

from gcite import load_yaml, safeyaml
from gcite.authoring.retrofit import Options, RetrofitRefusal, retrofit
from gcite.cli.main import main
from tests.support.yamltext import safe_load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "retrofit"
IDENTIFIER = "gcite/gcite:0.0.0@" + "0" * 64
ICON = "📖🤖🇯🇵"


def options(**kwargs) -> Options:
    return Options(identifier=IDENTIFIER, **kwargs)


def export_api_form(icon: str = ICON) -> str:
    document = safe_load((FIXTURES / "dify-qc-knowledge-chatbot.en.yml").read_text(encoding="utf-8"))
    document["app"]["icon"] = icon
    # Dify's export API: the YAML in a JSON string, non-ASCII escaped (an emoji as a surrogate pair)
    return json.dumps({"data": yaml.dump(document, allow_unicode=True)})


def test_the_export_api_form_with_emoji_round_trips_the_icon_exactly():
    text = export_api_form()
    assert "\\ud83d\\udcd6" in text  # the surrogate-pair escape Dify's JSON writes
    result = retrofit(text, options())
    assert result.document["app"]["icon"] == ICON
    assert safe_load(result.text)["app"]["icon"] == ICON
    assert result.text.encode("utf-8")  # no lone surrogate anywhere in the output
    assert any("export API" in n for n in result.notes)
    # and a second run on the output changes nothing
    assert not retrofit(result.text, options()).changed


def bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, levels):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "text, reason",
    [
        (bomb(), "YAML nodes once its aliases are expanded"),
        ("[" * 50_000 + "]" * 50_000, "nested more than 100 levels deep at line 1, column 101"),
        ("a:\n" + "".join("  " * n + f"k{n}:\n" for n in range(1, 300)), "nested more than 100 levels deep at line"),
        ("{" * 200_000, "nested more than 100 levels deep"),
        ('{"data": "app: \\ud83d x"}', "lone surrogate U+D83D at line 1, column 6"),
        ("app: b: c", "not valid YAML (mapping values are not allowed here at line 1, column 7)"),
        ("x" * (safeyaml.MAX_BYTES + 1), "larger than 10 MiB"),
        ("\t- :", "not valid YAML"),
        # PyYAML's pure-Python reader raised ValueError from chr() (make fuzz, retrofit_reader/crash-a613909a…)
        ('app:\n  icon: "\\U0911F060"\n', "invalid Unicode character escape code at line 2, column 12"),
    ],
)
def test_unreadable_text_is_one_line_with_the_position_and_the_next_step(text, reason):
    started = time.monotonic()
    with pytest.raises(RetrofitRefusal) as refused:
        retrofit(text, options())
    message = str(refused.value)
    assert reason in message and "\n" not in message, message
    assert message.endswith("export the app again from Dify (Studio → app menu → Export DSL) and retrofit that file")
    assert time.monotonic() - started < 10


def test_an_escape_past_u10ffff_is_one_error_without_libyaml_too(monkeypatch):
    monkeypatch.setattr(safeyaml, "safe_loader", lambda: yaml.SafeLoader)  # PyYAML without its C extension
    with pytest.raises(RetrofitRefusal, match=r"^not a Dify app DSL: not valid YAML \(chr\(\) arg not in range"):
        retrofit('app:\n  icon: "\\U0911F060"\n', options())


def test_aliases_that_do_not_expand_much_are_read():
    # Dify's yaml.dump writes an anchor and an alias for a value it exports twice: read as any YAML
    assert load_yaml("a: &x {k: v}\nb: *x\n") == {"a": {"k": "v"}, "b": {"k": "v"}}


def test_the_cli_reads_through_the_bounded_loader(tmp_path, capsys):
    path = tmp_path / "bomb.yml"
    path.write_text(bomb(), encoding="utf-8")
    assert main(["retrofit", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "aliases are expanded" in err and "Traceback" not in err
    with pytest.raises(yaml.YAMLError) as error:  # every other reader of chatflow files: the same loader
        load_yaml(bomb())
    assert "aliases are expanded" in error.value.problem
