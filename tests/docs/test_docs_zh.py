"""The documentation, in both languages and on every page, names only commands and options that exist, every
command, every endpoint setting, every tool and tool parameter, and every protocol event."""

import argparse
import re

import pytest

from gcite.cli.main import build_parser
from gcite.protocol import EVENTS
from tests.support import ROOT
from tests.support.docs import DOCS, READMES, ZH, all_docs, all_text, section, text
from tests.support.yamltext import safe_load

LANGS = ["en", "zh"]
PAGE = {"en": DOCS, "zh": ZH}
EVENTS_HEADING = {"en": "Events", "zh": "事件"}


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})


COMMANDS = subparsers(build_parser())
# `python -m gcite acl audit …`, `gcite serve`, and the CLI table's first cells (`run DSL文件 …`)
MENTION = re.compile(r"(?:python -m gcite|`gcite) (acl (?:audit|fix)|[a-z][a-z-]*)((?:[^`\n|]|\\\|)*)")
TABLE_ROW = re.compile(r"^\| `([a-z][a-z-]*)((?: [^`]*)?)`", re.MULTILINE)


def mentions(markdown: str, cli_table: str = "") -> list[tuple[str, str]]:
    found = [(m.group(1), m.group(2)) for m in MENTION.finditer(markdown)]
    found += [(m.group(1), m.group(2)) for m in TABLE_ROW.finditer(cli_table)]
    return found


def command(name: str) -> argparse.ArgumentParser | None:
    if name.startswith("acl "):
        return subparsers(COMMANDS["acl"]).get(name.split()[1])
    return COMMANDS.get(name)


def check_mentions(where: str, named: list[tuple[str, str]]) -> None:
    for name, rest in named:
        if name in ("acl",):  # "acl audit / acl fix" in a table cell
            continue
        parser = command(name)
        assert parser is not None, f"{where} names `gcite {name}`, which is no command"
        options = {o for action in parser._actions for o in action.option_strings}
        for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest):
            assert option in options, f"{where}: `gcite {name}` has no option {option}"


@pytest.mark.parametrize("path", all_docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_gcite_command_and_option_named_exists(path):
    check_mentions(str(path.relative_to(ROOT)), mentions(text(path)))


@pytest.mark.parametrize("lang", LANGS)
def test_the_cli_reference_names_only_what_exists(lang):
    cli = text(PAGE[lang] / "cli.md")
    named = mentions(cli, section(cli, "`python -m gcite`"))
    assert {name for name, _ in named} >= set(COMMANDS)  # the table has a row for every command
    check_mentions(f"{lang}/cli.md", named)


def test_a_wrong_option_is_found():
    with pytest.raises(AssertionError, match="no option --colour"):
        check_mentions("x", mentions("`python -m gcite serve --colour`"))
    with pytest.raises(AssertionError, match="no command"):
        check_mentions("x", mentions("| `frobnicate --now` | … |", "| `frobnicate --now` | … |"))


@pytest.mark.parametrize("lang", LANGS)
def test_every_command_is_documented(lang):
    cli = text(PAGE[lang] / "cli.md")
    for name in COMMANDS:
        assert re.search(rf"`{re.escape(name)}[ `]|gcite {re.escape(name)}\b", cli), f"{lang}/cli.md: {name}"


@pytest.mark.parametrize("lang", LANGS)
def test_every_endpoint_setting_is_named(lang):
    page = text(PAGE[lang] / "endpoint.md")
    group = safe_load((ROOT / "group" / "gcite_endpoint.yaml").read_text(encoding="utf-8"))
    names = [setting["name"] for setting in group["settings"]]
    assert "token_secret" in names
    for name in names:
        assert f"`{name}`" in page, f"{lang}/endpoint.md: {name}"


@pytest.mark.parametrize("lang", LANGS)
def test_the_endpoints_error_table_lists_each_code_it_answers_once(lang):
    """Each code the chat endpoint answers a refused request with (endpoints/chat.py MESSAGES, but the
    mid-stream internal_error) is in the page's status table, in a row of its own status, and only there."""
    from endpoints.chat import MESSAGES
    from endpoints.chat_protocol import INTERNAL_ERROR

    rows = re.findall(r"^\| (\d{3}) \| (.+?) \|", text(PAGE[lang] / "endpoint.md"), re.MULTILINE)
    listed = [code for _, codes in rows for code in re.findall(r"`([a-z_]+)`", codes)]
    assert sorted(listed) == sorted(set(MESSAGES) - {INTERNAL_ERROR}), f"{lang}/endpoint.md"


@pytest.mark.parametrize("lang", LANGS)
def test_every_protocol_event_is_in_the_protocol_table(lang):
    events = section(text(PAGE[lang] / "protocol.md"), EVENTS_HEADING[lang])
    rows = re.findall(r"^\| `([a-z_]+)` \|", events, re.MULTILINE)
    assert rows == list(EVENTS)


@pytest.mark.parametrize("lang", LANGS)
def test_every_tool_parameter_is_named(lang):
    docs = all_text(lang)
    for path in sorted((ROOT / "tools").glob("*.yaml")):
        tool = safe_load(path.read_text(encoding="utf-8"))
        assert f"`{tool['identity']['name']}`" in docs, f"{lang}: {path.name}"
        for parameter in tool.get("parameters") or []:
            assert f"`{parameter['name']}`" in docs, f"{lang}: {path.name}: {parameter['name']}"


@pytest.mark.parametrize("lang", LANGS)
def test_the_secret_command_is_named_where_the_endpoint_settings_are(lang):
    settings = text(PAGE[lang] / "endpoint.md")
    assert ".venv/bin/python -m gcite secret" in settings.split("token_secret", 1)[1][:1500]


@pytest.mark.parametrize("lang", LANGS)
def test_the_sample_users_and_how_to_get_their_tokens_are_documented(lang):
    from gcite.local.serve import SAMPLE_USERS

    page = text(PAGE[lang] / "page.md")
    assert "/local/users" in page and "--user" in page
    for user in SAMPLE_USERS:
        assert f"`{user['id']}`" in page and user["name"] in page, user["id"]
        for role in user["roles"]:
            assert role in page


def test_the_english_docs_say_where_the_search_keys_go():
    keys = " ".join(section(text(DOCS / "web-search.md"), "Where the keys go in Dify").split())  # lines joined
    provider = safe_load((ROOT / "provider" / "gcite.yaml").read_text(encoding="utf-8"))
    assert "Plugins" in keys and "G-Cite" in keys
    for name, field in provider["credentials_for_provider"].items():
        if not name.endswith("_base_url") or name == "searxng_base_url":  # the keys (overrides are for gateways)
            assert field["label"]["en_US"] in keys, name
    zh = " ".join(section(text(ZH / "web-search.md"), "凭据填在 Dify 的哪里").split())
    for name, field in provider["credentials_for_provider"].items():
        if not name.endswith("_base_url") or name == "searxng_base_url":
            assert field["label"]["zh_Hans"] in zh, name


def test_the_readmes_are_the_front_pages():
    for path in READMES.values():
        readme = text(path)
        assert "docs/page-cited-answer.png" in readme and "make demo" in readme and "make test" in readme
        assert ".venv/bin/python -m gcite" in readme
