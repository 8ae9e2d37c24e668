"""The web_search tool's parameters and the provider it names, each checked with an error naming the field."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import urlsplit

from websearch.errors import SearchInputError
from websearch.providers import AUTO_ORDER, FRESHNESS, PROVIDERS, Provider, configured, credential

TOP_K_MIN, TOP_K_MAX = 1, 50
DEFAULT_TOP_K = 5
DEFAULT_TIMEOUT_SECONDS = 20.0
# The plugin runtime gives a request at most MAX_REQUEST_TIMEOUT (120 s, main.py); the whole search, retries
# included, must finish well inside it.
TIMEOUT_MIN, TIMEOUT_MAX = 1.0, 100.0


def parse_top_k(value: Any) -> int:
    if value is None or value == "":
        return DEFAULT_TOP_K
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not TOP_K_MIN <= value <= TOP_K_MAX:
        raise SearchInputError(f"top_k: expected a whole number from {TOP_K_MIN} to {TOP_K_MAX}, got {value!r}")
    return value


def parse_timeout(value: Any) -> float:
    if value is None or value == "":
        return DEFAULT_TIMEOUT_SECONDS
    try:
        seconds = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        seconds = math.nan
    if not TIMEOUT_MIN <= seconds <= TIMEOUT_MAX:  # also false for NaN
        raise SearchInputError(
            f"timeout_seconds: expected a number of seconds from {TIMEOUT_MIN:g} to {TIMEOUT_MAX:g}, got {value!r}"
        )
    return seconds


def parse_freshness(value: Any) -> str:
    if value is None or value == "":
        return "any"
    if not isinstance(value, str) or value.strip().lower() not in FRESHNESS:
        raise SearchInputError(f"freshness: expected one of {', '.join(FRESHNESS)}, got {value!r}")
    return value.strip().lower()


def parse_query(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SearchInputError(
            "query: expected the text to search for, got " + ("nothing" if not value else repr(value)[:40])
        )
    return value.strip()


def choose_provider(value: Any, credentials: dict[str, Any] | None) -> Provider:
    name = "auto" if value in (None, "") else value
    if not isinstance(name, str) or (name.strip().lower() not in PROVIDERS and name.strip().lower() != "auto"):
        raise SearchInputError(f"provider: expected auto or one of {', '.join(AUTO_ORDER)}, got {value!r}")
    name = name.strip().lower()
    ready = configured(credentials)
    if name == "auto":
        if not ready:
            raise SearchInputError(
                "provider: no search provider is configured; add an API key (Bocha, Tavily, Baidu AI Search, "
                "SerpAPI, Brave Search) or a SearXNG base URL in the G-Cite plugin's credentials"
            )
        return PROVIDERS[ready[0]]
    provider = PROVIDERS[name]
    if name not in ready:
        what = "API key" if provider.key_field else "base URL"
        raise SearchInputError(
            f"provider: {provider.label} is not configured; add its {what} in the G-Cite plugin's credentials"
        )
    return provider


def base_url(provider: Provider, credentials: dict[str, Any] | None) -> str:
    override = credential(credentials, provider.url_field)
    url = override or provider.default_base or ""
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok = False
    if not ok:
        raise SearchInputError(f"{provider.url_field}: expected an http(s) URL such as https://host[:port][/path]")
    return url.rstrip("/")
