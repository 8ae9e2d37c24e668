"""Every Dify UI label the docs tell users to click or read is one checked in Dify's own front-end source.

`dify_ui_labels.json` records each checked label: its en-US and zh-Hans string, the i18n file and key in
langgenius/dify's `web/`, and the commit read. The docs name a label in bold, in a `→` path (**Plugins → Install
plugin → Local Package File**), next to a `→`, after a verb (click **…**, 点击 **…**), after "node's" / "节点的", or
in the steps of "Where the keys go in Dify". Each such label must be in the record in the page's language, or be one of
G-Cite's own labels (read from manifest.yaml, provider/, tools/ and group/, which is what Dify shows for them)."""

import functools
import json
import re
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.docs import FENCE, INLINE_CODE, READMES, pages, text
from tests.support.yamltext import safe_load

RECORD = json.loads((Path(__file__).parent / "dify_ui_labels.json").read_text(encoding="utf-8"))
LANGS = {"en": "en_US", "zh": "zh_Hans"}
BOLD = re.compile(r"\*\*([^*]+?)\*\*")
VERB = re.compile(r"(?:\b(?:click|choose|select|open|press)|点击|选择|打开)\s*$")
NODE = re.compile(r"(?:node's|节点的)\s*$")
ARROW_AFTER = re.compile(r"\s*→")
ARROW_BEFORE = re.compile(r"→\s*\Z")
KEYS_SECTION = {"en": "Where the keys go in Dify", "zh": "凭据填在 Dify 的哪里"}
# Wrong labels in pages another engineer owns right now (reported, not edited): page -> labels to let pass.


def label(entry: dict, lang: str) -> str | None:
    return entry["label_en"] if lang == "en" else entry["label_zh"]


@functools.cache
def yaml_file(path: Path) -> dict:
    return safe_load(path.read_text(encoding="utf-8"))


@functools.cache
def own_labels(lang: str) -> tuple[str, str, set[str]]:
    """(the plugin's name in the Plugins list, the tool provider's name in the tool picker, every other label)."""
    key = LANGS[lang]
    plugin = yaml_file(ROOT / "manifest.yaml")["label"][key]
    provider = yaml_file(ROOT / "provider" / "gcite.yaml")
    others = {field["label"][key] for field in provider["credentials_for_provider"].values()}
    for path in sorted((ROOT / "tools").glob("*.yaml")):
        tool = yaml_file(path)
        others.add(tool["identity"]["label"][key])
        others |= {p["label"][key] for p in tool.get("parameters") or []}
    others |= {s["label"][key] for s in yaml_file(ROOT / "group" / "gcite_endpoint.yaml")["settings"]}
    return plugin, provider["identity"]["label"][key], others


def checked(lang: str) -> set[str]:
    return {label(e, lang) for e in RECORD if label(e, lang)}


def keys_steps(markdown: str, heading: str) -> str:
    """The numbered steps under `## heading` (up to the first line that is neither a step nor its continuation)."""
    start = markdown.find(f"\n## {heading}\n")
    if start < 0:
        return ""
    lines, steps, started = markdown[start:].splitlines()[2:], [], False
    for line in lines:
        if re.match(r"^\d+\. ", line) or (started and line.startswith("   ")):
            started = True
            steps.append(line)
        elif started or line.startswith("#"):
            break
    return "\n".join(steps)


def ui_labels(markdown: str, lang: str) -> list[tuple[str, list[str]]]:
    """(the bold text, the labels it names) for every bold UI label of a page; a path names each of its parts."""
    body = INLINE_CODE.sub("\u00a4", FENCE.sub("", markdown))  # code kept as a mark, so **`x`** stays one bold span
    found = []
    for m in BOLD.finditer(body):
        inner = " ".join(m.group(1).split())
        before = body[max(0, m.start() - 20) : m.start()]  # the most the verb and node rules read
        if "→" in inner:
            found.append((inner, [part.strip() for part in inner.split("→")]))
        elif (
            ARROW_BEFORE.search(body, 0, m.start())
            or ARROW_AFTER.match(body, m.end())
            or VERB.search(before)
            or NODE.search(before[-10:])
        ):
            found.append((inner, [inner]))
    for m in BOLD.finditer(keys_steps(body, KEYS_SECTION[lang])):
        inner = " ".join(m.group(1).split())
        found.append((inner, [inner]))
    return found


def unknown(named: list[tuple[str, list[str]]], lang: str) -> list[str]:
    plugin, provider, others = own_labels(lang)
    dify = checked(lang)
    tools = {yaml_file(p)["identity"]["label"][LANGS[lang]] for p in (ROOT / "tools").glob("*.yaml")}
    bad = []
    for bold, parts in named:
        for i, part in enumerate(parts):
            if part in dify or part == plugin or part in others:
                continue
            if part == provider and i + 1 < len(parts) and parts[i + 1] in tools:  # G-Cite → Web search
                continue
            bad.append(f"**{bold}**: {part!r}")
    return bad


def docs(lang: str) -> list[Path]:
    return [READMES[lang], *pages(lang)]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_ui_label_the_docs_name_was_checked_in_difys_source(lang):
    bad = []
    for path in docs(lang):
        bad += [f"{path.relative_to(ROOT)}: {b}" for b in unknown(ui_labels(text(path), lang), lang)]
    assert not bad, "labels not in tests/docs/dify_ui_labels.json (check them in Dify's web/i18n):\n" + "\n".join(bad)


def test_the_docs_name_labels_at_all():
    named = [part for path in docs("en") for _, parts in ui_labels(text(path), "en") for part in parts]
    assert {"Plugins", "API Key Authorization Configuration", "Local Package File", "Endpoints"} <= set(named)
    named_zh = [part for path in docs("zh") for _, parts in ui_labels(text(path), "zh") for part in parts]
    assert {"插件", "API Key 授权配置", "本地插件", "API 端点"} <= set(named_zh)


def test_every_record_names_its_source():
    for entry in RECORD:
        assert entry["label_en"], entry
        assert entry["dify_file"].startswith("web/i18n/en-US/") and entry["key"], entry
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), entry
        assert re.fullmatch(r"[0-9a-f]{40}", entry.get("commit_zh", entry["commit"])), entry


def test_an_unchecked_label_is_found():
    page = (
        "1. **Plugins → Install plugin → Local package file**; then click **Authorize**.\n"
        "2. **Plugins → G-Cite → Endpoints**, and **Tools → G-Cite → Web search** (`**Not → UI**`).\n"
    )
    assert unknown(ui_labels(page, "en"), "en") == [
        "**Plugins → Install plugin → Local package file**: 'Local package file'",
        "**Authorize**: 'Authorize'",
        "**Plugins → G-Cite → Endpoints**: 'G-Cite'",
        "**Tools → G-Cite → Web search**: 'Tools'",
    ]
    assert unknown(ui_labels("**插件 → 安装插件 → 本地插件包**，点击 **授权**", "zh"), "zh") == [
        "**插件 → 安装插件 → 本地插件包**: '本地插件包'",
        "**授权**: '授权'",
    ]
    assert not unknown(ui_labels("**Plugins → G-Cite citations → API Key Authorization Configuration**", "en"), "en")
