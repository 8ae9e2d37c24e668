"""The cited sources as a markdown list: one line per citation, text that renders as itself, safe links only."""

import re
from urllib.parse import quote, urlsplit

from citations.dify_inputs import LONE_SURROGATE

LINK_SCHEMES = ("http", "https")
HIDDEN_SCHEMES = ("javascript", "vbscript", "data", "file")
MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]()!|~])")  # inline markup
BLOCK_START = re.compile(r"[#+=-]|\d{1,9}(?=[.)])")  # what would start a heading, list or rule at a line's start


def escape_markdown(text):
    """One line of text that renders as itself: HTML characters as entities, markdown ones backslashed."""
    text = " ".join(str(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return MARKDOWN_SPECIAL.sub(r"\\\1", text)


def url_scheme(url):
    try:
        return urlsplit(url).scheme.lower()
    except ValueError:
        return ""


def escape_block_start(text):
    """Backslash what would make a line a heading, list item or rule (`# H`, `- x`, `---`, `1. x`)."""
    match = BLOCK_START.match(text)
    if not match:
        return text
    at = match.end() if match.group().isdigit() else 0
    return text[:at] + "\\" + text[at:]


def reference_line(citation):
    title = escape_markdown(citation["document_title"] or f"C:{citation['id']}")
    url = citation.get("url") or ""
    url = url.strip() if isinstance(url, str) else ""
    scheme = url_scheme(url)
    if scheme in LINK_SCHEMES and urlsplit(url).netloc:
        line = f"[{title}]({quote(LONE_SURROGATE.sub(chr(0xFFFD), url), safe=':/?#@!$&*+,;=%~-._')})"
    else:
        line = escape_block_start(title)
    if citation.get("display_subtitle"):
        line += " — " + escape_markdown(citation["display_subtitle"])
    if url and scheme not in LINK_SCHEMES and scheme not in HIDDEN_SCHEMES:
        line += " — " + escape_markdown(url)
    return line


def references_markdown(citations):
    return "\n".join(f"{c['index']}. {reference_line(c)}" for c in citations)


def references_by_marker_markdown(citations):
    return "\n".join(f"- [C:{c['id']}] {reference_line(c)}" for c in citations)
