"""The documentation's shape: a short front page per language, every docs page in both languages, every relative
link (file and #anchor) resolving."""

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.support import ROOT
from tests.support.docs import DOCS, FENCE, READMES, all_docs, anchors, links, pages, slug, text

# the subjects of the manual (issue 23); pages other work adds come on top of these
SUBJECTS = {
    "merge-node",
    "validator",
    "chatflows",
    "access-control",
    "web-search",
    "endpoint",
    "protocol",
    "page",
    "packaging",
    "cli",
    "development",
}


def test_the_front_pages_are_short():
    for path in READMES.values():
        assert len(text(path).splitlines()) <= 200, path.name


def test_every_subject_has_a_page():
    assert SUBJECTS <= {p.stem for p in pages("en")}


def test_every_page_exists_in_both_languages():
    english, chinese = {p.name for p in pages("en")}, {p.name for p in pages("zh")}
    assert english == chinese, f"only English: {sorted(english - chinese)}; only Chinese: {sorted(chinese - english)}"


@pytest.mark.parametrize("path", pages("en") + pages("zh"), ids=lambda p: str(p.relative_to(DOCS)))
def test_every_page_links_its_twin_and_the_front_page(path):
    page = text(path)
    twin = f"zh/{path.name}" if path.parent == DOCS else f"../{path.name}"
    front = "../README.md" if path.parent == DOCS else "../../README.zh-CN.md"
    assert f"]({twin})" in page and f"]({front})" in page, path.name
    assert len(re.findall(r"^# ", FENCE.sub("", text(path)), re.MULTILINE)) == 1, "one title per page"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_front_page_indexes_every_page_of_its_language(lang):
    readme = text(READMES[lang])
    for page in pages(lang):
        target = f"docs/{page.name}" if lang == "en" else f"docs/zh/{page.name}"
        assert f"]({target})" in readme, f"{READMES[lang].name} does not link {target}"


def resolve(source: Path, target: str) -> tuple[Path, str]:
    path, _, anchor = target.partition("#")
    return (source if not path else (source.parent / unquote(path)).resolve()), unquote(anchor)


@pytest.mark.parametrize("path", all_docs(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path):
    checked = 0
    for label, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …
            continue
        file, anchor = resolve(path, target)
        assert file.exists(), f"{path.name}: [{label}]({target}): no file {file}"
        if anchor:
            assert file.suffix == ".md", f"{path.name}: [{label}]({target}): an anchor into a file that is not markdown"
            assert anchor in anchors(text(file)), (
                f"{path.name}: [{label}]({target}): {file.name} has no heading with anchor #{anchor}"
            )
        checked += 1
    assert checked, f"{path.name} links nothing"


def test_the_anchor_rule_is_githubs():
    assert slug("The merge node (`nodes/merge_chunks.py`)") == "the-merge-node-nodesmerge_chunkspy"
    assert (
        slug("Checking stored ACL values: `python -m gcite acl audit` / `acl fix`")
        == "checking-stored-acl-values-python--m-gcite-acl-audit--acl-fix"
    )
    assert slug("检查与修正：`acl audit` / `acl fix`") == "检查与修正acl-audit--acl-fix"
    assert slug("知识库引用的链接（source_file_url）") == "知识库引用的链接source_file_url"
    assert anchors("# A\n## Notes\n```\n# not a heading\n```\n## Notes\n") == {"a", "notes", "notes-1"}


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\n## Here\n\n[ok](#here) [bad](#there) `[code](#nowhere)` [gone](b.md)\n")
    page = tmp_path / "a.md"
    found = [(target, resolve(page, target)) for _, target in links(page)]
    assert [t for t, _ in found] == ["#here", "#there", "b.md"]
    assert [a in anchors(text(page)) for t, (f, a) in found if t.startswith("#")] == [True, False]
    assert not found[2][1][0].exists()


def test_the_docs_show_the_venv_command():
    for path in all_docs():
        for line in text(path).splitlines():
            for command in re.findall(r"(?<![\w/.])python3? -m gcite\b[^`\n]*", line):
                # a bare `python -m gcite` at the start of a shell line must be the set-up's Python
                assert not line.lstrip().startswith(command), f"{path.name}: {line.strip()} (use .venv/bin/python)"
