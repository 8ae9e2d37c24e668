"""Each provider's result as one flat item `{title, url, content, site_name, published_date, score, provider}`, the
shape the merge node reads without loss. Text and URLs follow the merge node's own rules (`citations.merge`)."""

from __future__ import annotations

import datetime
import email.utils
import math
import re
from collections.abc import Callable
from typing import Any

from citations import merge
from websearch.providers import Provider

ISO_DATE = re.compile(r"^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:$|[T ]\d)")
# A kept result's fields are cut here, above where the merge node cuts them (merge.MAX_CONTENT_CHARS,
# merge.MAX_LINE_CHARS), so what the merge node makes of them is unchanged while 50 results stay small.
MAX_CONTENT_CHARS = 16_000
MAX_LINE_CHARS = 1_000


def text(value: Any) -> str:
    if value is None or isinstance(value, (dict, list, bool)):
        return ""
    return str(value).strip()


def plain(value: Any) -> str:
    """Provider text without HTML tags and entities (Brave marks matches with <strong>): the merge node's rule."""
    return merge.plain_text(text(value))


def one_line(value: Any) -> str:
    return re.sub(r"\s+", " ", plain(value)).strip()


def first(item: dict[str, Any], *fields: str) -> Any:
    for name in fields:
        value = item.get(name)
        if value not in (None, ""):
            return value
    return None


def iso_date(value: Any) -> str:
    """YYYY-MM-DD for ISO dates, RFC 2822 dates (Tavily news) and 'Aug 12, 2025' (Google); else the text as given."""
    raw = text(value)
    match = ISO_DATE.match(raw)
    if match:
        try:
            return datetime.date(*(int(g) for g in match.groups())).isoformat()
        except ValueError:
            return raw
    for parse in (
        lambda s: email.utils.parsedate_to_datetime(s).date(),
        lambda s: datetime.datetime.strptime(s, "%b %d, %Y").date(),
        lambda s: datetime.datetime.strptime(s, "%B %d, %Y").date(),
    ):
        try:
            return parse(raw).isoformat()
        except (TypeError, ValueError, IndexError, OverflowError):  # year 99999999999: this field only
            continue
    return raw


def score_of(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def web_url(value: Any) -> str:
    """The URL when it is http(s) with a host, else "" (a `javascript:` link from a provider is never passed on):
    the merge node's rule (tabs and line breaks removed, an absurdly long URL refused)."""
    return merge.web_url(text(value))


def url_key(url: str) -> str:
    """The same page under one key, as the merge node tells duplicates apart."""
    try:
        return merge.url_identity(url)
    except ValueError:
        return url


def flat(provider: Provider, title: Any, url: Any, content: Any, site: Any, date: Any, score: Any) -> dict[str, Any]:
    return {
        "title": merge.cut(one_line(title), MAX_LINE_CHARS),
        "url": web_url(url),
        "content": merge.cut(plain(content), MAX_CONTENT_CHARS),
        "site_name": merge.cut(one_line(site), MAX_LINE_CHARS),
        "published_date": merge.cut(iso_date(date), MAX_LINE_CHARS),
        "score": score_of(score),
        "provider": provider.name,
    }


def map_bocha(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    # `datePublished` is the publish time (UTC+8); `dateLastCrawled` is the same moment mislabelled `Z`.
    return flat(
        p,
        r.get("name"),
        r.get("url"),
        first(r, "summary", "snippet"),
        r.get("siteName"),
        first(r, "datePublished", "dateLastCrawled"),
        None,
    )


def map_tavily(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    return flat(p, r.get("title"), r.get("url"), r.get("content"), "", r.get("published_date"), r.get("score"))


def map_baidu(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    return flat(
        p,
        first(r, "title", "web_anchor"),
        r.get("url"),
        r.get("content"),
        r.get("website"),
        r.get("date"),
        r.get("rerank_score"),
    )


def map_serpapi(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    return flat(p, r.get("title"), r.get("link"), r.get("snippet"), r.get("source"), r.get("date"), None)


def map_brave(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    profile = r.get("profile") if isinstance(r.get("profile"), dict) else {}
    return flat(
        p, r.get("title"), r.get("url"), r.get("description"), profile.get("name"), first(r, "page_age", "age"), None
    )


def map_searxng(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    return flat(
        p, r.get("title"), r.get("url"), r.get("content"), "", first(r, "publishedDate", "pubdate"), r.get("score")
    )


MAPPERS: dict[str, Callable[[Provider, dict[str, Any]], dict[str, Any]]] = {
    "bocha": map_bocha,
    "tavily": map_tavily,
    "baidu": map_baidu,
    "serpapi": map_serpapi,
    "brave": map_brave,
    "searxng": map_searxng,
}
