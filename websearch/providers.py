"""The providers the web search can call: endpoints, caps, freshness values and where each keeps its credentials.

Everything a provider's requests need that is a fact about the provider lives in this table; how each request is
built is `websearch.fetchers`, how each result is read is `websearch.mappers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FRESHNESS = ("any", "day", "week", "month", "year")


@dataclass(frozen=True)
class Provider:
    name: str  # the `provider` parameter's value
    label: str  # how messages name it
    key_field: str | None  # credential holding the API key (None: SearXNG needs none)
    url_field: str  # credential holding the base URL (an override for keyed providers)
    default_base: str | None
    max_per_request: int  # most results one request can return
    max_total: int  # most results the tool can collect, paging included
    validation: str  # README/help text: what credential validation costs
    freshness: dict[str, str | None] = field(default_factory=dict)


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider(
            "bocha",
            "Bocha",
            "bocha_api_key",
            "bocha_base_url",
            "https://api.bochaai.com",
            50,
            50,
            "account balance, free",
            {"any": "noLimit", "day": "oneDay", "week": "oneWeek", "month": "oneMonth", "year": "oneYear"},
        ),
        Provider(
            "tavily",
            "Tavily",
            "tavily_api_key",
            "tavily_base_url",
            "https://api.tavily.com",
            20,
            20,
            "usage endpoint, free",
            {"any": None, "day": "day", "week": "week", "month": "month", "year": "year"},
        ),
        Provider(
            "baidu",
            "Baidu AI Search",
            "baidu_api_key",
            "baidu_base_url",
            "https://qianfan.baidubce.com",
            50,
            50,
            "one search with top_k 1",
            {"any": None, "day": "week", "week": "week", "month": "month", "year": "year"},
        ),
        Provider(
            "serpapi",
            "SerpAPI",
            "serpapi_api_key",
            "serpapi_base_url",
            "https://serpapi.com",
            10,
            50,
            "account endpoint, free",
            {"any": None, "day": "qdr:d", "week": "qdr:w", "month": "qdr:m", "year": "qdr:y"},
        ),
        Provider(
            "brave",
            "Brave Search",
            "brave_api_key",
            "brave_base_url",
            "https://api.search.brave.com",
            20,
            50,
            "one search with count 1",
            {"any": None, "day": "pd", "week": "pw", "month": "pm", "year": "py"},
        ),
        Provider(
            "searxng",
            "SearXNG",
            None,
            "searxng_base_url",
            None,
            50,
            50,
            "one search on your own instance",
            {"any": None, "day": "day", "week": "week", "month": "month", "year": "year"},
        ),
    )
}
# `provider: auto` takes the first configured one in this order (the README states it).
AUTO_ORDER = ("bocha", "tavily", "baidu", "serpapi", "brave", "searxng")
SERPAPI_PAGE = 10  # Google answers 10 organic results per page; `start` pages through them
BRAVE_MAX_PAGES = 10  # Brave's `offset` goes from 0 to 9
SEARXNG_MAX_PAGES = 10


def credential(credentials: dict[str, Any] | None, name: str) -> str:
    value = (credentials or {}).get(name)
    return value.strip() if isinstance(value, str) else ""


def configured(credentials: dict[str, Any] | None) -> list[str]:
    """Providers with what they need (an API key; SearXNG: a base URL), in `auto` order."""
    out = []
    for name in AUTO_ORDER:
        provider = PROVIDERS[name]
        needed = provider.key_field or provider.url_field
        if credential(credentials, needed):
            out.append(name)
    return out


def secrets_of(credentials: dict[str, Any] | None) -> list[str]:
    """Every credential value (keys and URLs), longest first, to redact from any text we pass on."""
    values = {v.strip() for v in (credentials or {}).values() if isinstance(v, str) and len(v.strip()) >= 4}
    return sorted(values, key=len, reverse=True)


def keys_of(credentials: dict[str, Any] | None) -> list[str]:
    """The configured API keys (the secret-input credentials), longest first: scrubbed from every output."""
    fields = {p.key_field for p in PROVIDERS.values() if p.key_field}
    values = {credential(credentials, name) for name in fields}
    return sorted((v for v in values if len(v) >= 4), key=len, reverse=True)
