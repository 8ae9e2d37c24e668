"""A diff a builder can review (issue 33 item 4): the output is the input's own text with the changes spliced in.
Untouched values keep their lines exactly (key order, quoting, block style, comments); a prompt that gained the
rules shows only the lines it gained; on every fixture the lines a diff shows are at most the added nodes and
edges, the text added to prompts, and 5 lines per changed node; nothing of the builder's is rewritten beyond that."""

import difflib
from pathlib import Path

import pytest
import yaml

from gcite.authoring import chatflows
from gcite.authoring.retrofit import Options, retrofit
from gcite.authoring.retrofit.splice import splice
from tests.support.yamltext import safe_load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "retrofit"
ALL = sorted(FIXTURES.glob("*.yml")) + sorted((FIXTURES / "shapes").glob("*.yml"))
IDENTIFIER = "gcite/gcite:0.0.0@" + "0" * 64
EDGE_LINES = 13  # an edge as Dify exports it: 12 or 13 lines


def diff_lines(a: str, b: str) -> tuple[list[str], list[str]]:
    lines = [
        x
        for x in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
        if x[:1] in "+-" and x[:3] not in ("+++", "---")
    ]
    return [x for x in lines if x.startswith("-")], [x for x in lines if x.startswith("+")]


def budget(before: dict, after: dict) -> tuple[int, int, int]:
    """(lines of what was added: nodes, edges, dependencies, prompt text; removed edges; changed nodes)"""
    old = {n["id"]: n for n in before["workflow"]["graph"]["nodes"]}
    new = {n["id"]: n for n in after["workflow"]["graph"]["nodes"]}
    added = [n for i, n in new.items() if i not in old]
    edge_key = lambda e: (e["source"], e["target"], e.get("sourceHandle"))  # noqa: E731
    old_edges = {edge_key(e): e for e in before["workflow"]["graph"]["edges"]}
    new_edges = {edge_key(e): e for e in after["workflow"]["graph"]["edges"]}
    added_edges = [e for k, e in new_edges.items() if k not in old_edges]
    removed = sum(1 for k in old_edges if k not in new_edges)
    changed = [i for i in old if old[i] != new[i]] + [
        e for e in old_edges if e in new_edges and old_edges[e] != new_edges[e]
    ]
    grown = sum(
        max(
            0,
            len(yaml.safe_dump(new[i], allow_unicode=True).splitlines())
            - len(yaml.safe_dump(old[i], allow_unicode=True).splitlines()),
        )
        for i in old
        if old[i] != new[i]
    )
    deps = [d for d in after.get("dependencies") or [] if d not in (before.get("dependencies") or [])]
    lines = sum(
        len(chatflows.render(x).splitlines())
        for x in ([added] if added else []) + ([added_edges] if added_edges else []) + ([deps] if deps else [])
    )
    extra = 5 if after.get("dependencies") and not before.get("dependencies") else 0  # `dependencies: []` → list
    return lines + grown + extra, removed, len(changed) + (1 if deps else 0)


@pytest.mark.parametrize("nodes", ["plugin", "code"])
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_the_diff_shows_the_changes_and_nothing_else(path, nodes):
    text = path.read_text(encoding="utf-8")
    result = retrofit(text, Options(identifier=IDENTIFIER, nodes=nodes, enable_context=True))
    minus, plus = diff_lines(text, result.text)
    added, removed, changed = budget(safe_load(text), result.document)
    # what the builder wrote is rewritten only where it changed: removed edges and 5 lines a changed node
    assert len(minus) <= EDGE_LINES * removed + 5 * changed, (len(minus), removed, changed)
    assert len(minus) + len(plus) <= added + EDGE_LINES * removed + 5 * changed + len(minus), (
        len(plus),
        added,
        changed,
    )
    assert safe_load(result.text) == result.document


def test_a_prompt_that_gained_the_rules_shows_only_its_new_lines():
    text = (FIXTURES / "svcvit-image-knowledge-base.zh.yml").read_text(encoding="utf-8")
    result = retrofit(text, Options(identifier=IDENTIFIER))
    minus, plus = diff_lines(text, result.text)
    # the prompt's last line (its closing quote) is the only line of it that changed
    assert [m for m in minus if "</info>" in m] == ["-            </info>'"]
    assert "+            # 引用规则（G-Cite）" in plus
    # the builder's keys, order, quoting and folding are the file's own: every other line is there as it was
    assert len(minus) <= EDGE_LINES + 5 * 3


def test_comments_key_order_and_quoting_are_kept():
    text = (FIXTURES / "own-0.3.0-code-after-llm.en.yml").read_text(encoding="utf-8")
    commented = text.replace("app:\n", "# exported by hand, kept in git\napp:\n", 1).replace(
        "  mode: advanced-chat\n", "  mode: 'advanced-chat'  # a chatflow\n", 1
    )
    result = retrofit(commented, Options(identifier=IDENTIFIER))
    assert result.text.startswith("# exported by hand, kept in git\napp:\n")
    assert "  mode: 'advanced-chat'  # a chatflow\n" in result.text
    assert list(safe_load(result.text)) == list(safe_load(text))


def test_the_second_run_returns_the_text_unchanged():
    for path in ALL:
        first = retrofit(path.read_text(encoding="utf-8"), Options(identifier=IDENTIFIER, enable_context=True))
        second = retrofit(first.text, Options(identifier=IDENTIFIER, enable_context=True))
        assert not second.changed and second.text == first.text, path.name


def test_what_cannot_be_spliced_is_written_whole():
    text = "a: &x {k: v}\nb: *x\n"
    assert safe_load(splice(text, {"a": {"k": "v"}, "b": {"k": "v"}}, {"a": {"k": "w"}, "b": {"k": "v"}})) == {
        "a": {"k": "w"},
        "b": {"k": "v"},
    }
