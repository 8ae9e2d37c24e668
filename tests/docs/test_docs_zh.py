"""The Chinese README names only commands and options that exist, every endpoint setting and every protocol event."""

import argparse
import re

import yaml

from gcite.cli.main import build_parser
from gcite.protocol import EVENTS

from tests.support import ROOT
ZH = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})


COMMANDS = subparsers(build_parser())
# `python -m gcite acl audit …`, `gcite serve`, and the CLI table's first cells (`run DSL文件 …`)
MENTION = re.compile(r"(?:python -m gcite|`gcite) (acl (?:audit|fix)|[a-z][a-z-]*)((?:[^`\n|]|\\\|)*)")
TABLE_ROW = re.compile(r"^\| `([a-z][a-z-]*)((?: [^`]*)?)`", re.MULTILINE)


def mentions() -> list[tuple[str, str]]:
    found = [(m.group(1), m.group(2)) for m in MENTION.finditer(ZH)]
    cli = ZH.split("\n## 命令行\n", 1)[1].split("\n## ", 1)[0]
    found += [(m.group(1), m.group(2)) for m in TABLE_ROW.finditer(cli)]
    return found


def command(name: str) -> argparse.ArgumentParser | None:
    if name.startswith("acl "):
        return subparsers(COMMANDS["acl"]).get(name.split()[1])
    return COMMANDS.get(name)


def test_every_gcite_command_and_option_named_exists():
    named = mentions()
    assert len({name for name, _ in named}) >= 11  # demo, run, chat, serve, build-dsl, prefilter, acl …, package, …
    for name, rest in named:
        if name in ("acl",):  # "acl audit / acl fix" in a table cell
            continue
        parser = command(name)
        assert parser is not None, f"README.zh-CN.md names `gcite {name}`, which is no command"
        options = {o for action in parser._actions for o in action.option_strings}
        for option in re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest):
            assert option in options, f"README.zh-CN.md: `gcite {name}` has no option {option}"


def test_every_command_is_documented():
    for name in COMMANDS:
        assert re.search(rf"`{re.escape(name)}[ `]|gcite {re.escape(name)}\b", ZH), name


def test_every_endpoint_setting_is_named():
    group = yaml.safe_load((ROOT / "group" / "gcite_endpoint.yaml").read_text(encoding="utf-8"))
    names = [setting["name"] for setting in group["settings"]]
    assert "token_secret" in names
    for name in names:
        assert f"`{name}`" in ZH, name


def test_every_protocol_event_is_in_the_protocol_table():
    section = ZH.split("\n## G-Cite 流式协议\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE)
    assert rows == list(EVENTS)


def test_every_tool_parameter_is_named():
    for path in sorted((ROOT / "tools").glob("*.yaml")):
        tool = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert f"`{tool['identity']['name']}`" in ZH, path.name
        for parameter in tool.get("parameters") or []:
            assert f"`{parameter['name']}`" in ZH, f"{path.name}: {parameter['name']}"
