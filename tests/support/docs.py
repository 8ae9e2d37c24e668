"""The documentation as the tests read it: README*.md, docs/*.md and their Chinese twins docs/zh/*.md; markdown
links and GitHub's heading anchors."""

import re
import unicodedata
from pathlib import Path

from tests.support import ROOT

DOCS = ROOT / "docs"
ZH = DOCS / "zh"
READMES = {"en": ROOT / "README.md", "zh": ROOT / "README.zh-CN.md"}
FENCE = re.compile(r"^ *```.*?^ *```[^\n]*$", re.MULTILINE | re.DOTALL)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(([^()\s]+)\)")


def pages(lang: str) -> list[Path]:
    """Every docs page of one language, by name."""
    return sorted((DOCS if lang == "en" else ZH).glob("*.md"))


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def all_text(lang: str) -> str:
    """The README and every page of one language, joined."""
    return "\n".join(text(p) for p in [READMES[lang], *pages(lang)])


def prose(markdown: str) -> str:
    """The text outside fenced code blocks and inline code (where a `[x](y)` is not a link)."""
    return INLINE_CODE.sub("", FENCE.sub("", markdown))


def section(markdown: str, heading: str) -> str:
    """The text under the `## heading` line, up to the next heading of level 2 (or 1)."""
    start = markdown.index(f"\n## {heading}\n") + len(heading) + 5
    end = re.search(r"^##? ", markdown[start:], re.MULTILINE)
    return markdown[start : start + end.start()] if end else markdown[start:]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text (code, emphasis and link targets dropped) lower-cased, every
    punctuation mark and symbol but `-` and `_` removed, each space a `-`."""
    rendered = LINK.sub(lambda m: m.group(1), heading).replace("`", "")
    kept = "".join(
        c
        for c in rendered.strip().lower()
        if c in "-_ " or not unicodedata.category(c).startswith(("P", "S", "Z", "C"))
    )
    return kept.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every heading anchor of a page, the repeated ones numbered -1, -2 … as GitHub numbers them."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    for line in FENCE.sub("", markdown).splitlines():
        match = re.match(r"^#{1,6} (.+?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        n = counts.get(base, 0)
        counts[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> list[tuple[str, str]]:
    """(link text, target) of every markdown link and image in a file."""
    return [(m.group(1), m.group(2)) for m in LINK.finditer(prose(text(path)))]


def all_docs() -> list[Path]:
    return [*READMES.values(), *pages("en"), *pages("zh")]
