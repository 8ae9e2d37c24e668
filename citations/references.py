"""The cited sources as a markdown list: one line per citation, text that renders as itself, safe links only."""

import re

from citations.dify_inputs import no_surrogate

LINK_SCHEMES = ("http", "https")
HIDDEN_SCHEMES = ("javascript", "vbscript", "data", "file")
MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]()!|~])")  # inline markup
BLOCK_START = re.compile(r"[#+=-]|\d{1,9}(?=[.)])")  # what would start a heading, list or rule at a line's start
# Bounds (issue 34, item 7: Dify fails a Code node whose string output is over 400,000 characters): a title or
# subtitle is shown to MAX_REFERENCE_TITLE_CHARS characters, a URL longer than MAX_URL_CHARS is not linked (a cut
# one would be another address), and a whole list stops at MAX_LIST_CHARS with a line counting the sources left out.
MAX_REFERENCE_TITLE_CHARS = 300
MAX_URL_CHARS = 2048
MAX_LIST_CHARS = 100_000


def shortened(text, limit=MAX_REFERENCE_TITLE_CHARS):
    """`text` to `limit` characters, its last one "…" when it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def escape_markdown(text):
    """One line of text that renders as itself: HTML characters as entities, markdown ones backslashed."""
    text = " ".join(str(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return MARKDOWN_SPECIAL.sub(r"\\\1", text)


def url_parse():
    """urllib.parse, imported on first use: importing it costs the validator Code node about 1 ms of its start in a
    fresh process, and an answer citing no web page never needs it."""
    import urllib.parse

    return urllib.parse


def split_url(url):
    """urlsplit(url), or None for a URL it refuses."""
    try:
        return url_parse().urlsplit(url)
    except ValueError:
        return None


def url_scheme(url):
    parts = split_url(url)
    return parts.scheme.lower() if parts else ""


def escape_block_start(text):
    """Backslash what would make a line a heading, list item or rule (`# H`, `- x`, `---`, `1. x`)."""
    match = BLOCK_START.match(text)
    if not match:
        return text
    at = match.end() if match.group().isdigit() else 0
    return text[:at] + "\\" + text[at:]


def reference_line(citation):
    title = escape_markdown(shortened(" ".join(str(citation["document_title"] or f"C:{citation['id']}").split())))
    url = citation.get("url") or ""
    url = url.strip() if isinstance(url, str) else ""
    if len(url) > MAX_URL_CHARS:
        url = ""  # not linked, not shown: cut, it would name another address
    parts = split_url(url) if url else None
    scheme = parts.scheme.lower() if parts else ""
    if scheme in LINK_SCHEMES and parts.netloc:
        line = f"[{title}]({url_parse().quote(no_surrogate(url), safe=':/?#@!$&*+,;=%~-._')})"
    else:
        line = escape_block_start(title)
    if citation.get("display_subtitle"):
        line += " — " + escape_markdown(shortened(" ".join(str(citation["display_subtitle"]).split())))
    if url and scheme not in LINK_SCHEMES and scheme not in HIDDEN_SCHEMES:
        line += " — " + escape_markdown(url)
    return line


def bounded_lines(lines, count):
    """The lines joined, to MAX_LIST_CHARS characters: whole lines, then one that counts the sources left out."""
    out, size = [], 0
    for n, line in enumerate(lines):
        if size + len(line) + 1 > MAX_LIST_CHARS - 100:
            out.append(f"…and {count - n} more sources (list cut at {MAX_LIST_CHARS:,} characters)")
            break
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def references_markdown(citations, lines=None):
    """`lines`: the citations' `reference_line`s, if made."""
    lines = map(reference_line, citations) if lines is None else lines
    return bounded_lines((f"{c['index']}. {line}" for c, line in zip(citations, lines)), len(citations))


def references_by_marker_markdown(citations, lines=None):
    """`lines`: the citations' `reference_line`s, if made."""
    lines = map(reference_line, citations) if lines is None else lines
    return bounded_lines((f"- [C:{c['id']}] {line}" for c, line in zip(citations, lines)), len(citations))
