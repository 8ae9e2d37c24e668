"""A whole web search (the tool's work), the credential check (the provider's), and the tool's text summary."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import requests

from websearch.client import ProviderClient
from websearch.errors import SearchError, SearchInputError
from websearch.fetchers import FETCHERS, Search, bearer, check_code_body
from websearch.http_client import Budget
from websearch.params import base_url
from websearch.providers import AUTO_ORDER, PROVIDERS, Provider, configured, credential, keys_of, secrets_of
from websearch.redaction import redact, scrub
from websearch.results import MAX_READ_PER_PAGE, Results


def run_search(
    provider: Provider,
    query: str,
    top_k: int,
    freshness: str,
    credentials: dict[str, Any] | None,
    budget: Budget,
    session: requests.Session | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[list[dict[str, Any]], list[str], int]:
    """(results, notes, requests made). Results are at most top_k flat items in the provider's order. The budget
    covers the whole search: every request and wait, and the mapping and redaction of the results kept."""
    wanted = min(top_k, provider.max_total)
    search = open_search(provider, query, wanted, freshness, credentials, budget, session, sleep)
    if top_k > provider.max_total:
        search.notes.append(
            f"{provider.label} returns at most {provider.max_total} results per search; "
            f"top_k {top_k} was capped at {provider.max_total}"
        )
    if freshness != "any" and provider.freshness.get(freshness) is None:
        search.notes.append(f"{provider.label} has no {freshness} filter; freshness was ignored")
    if provider.name == "baidu" and freshness == "day":
        search.notes.append("Baidu AI Search has no one-day filter; searched the last 7 days (week) instead")
    try:
        FETCHERS[provider.name](search, wanted)
    finally:
        search.client.close()
    results = search.results
    if results.overlong_pages:
        search.notes.append(
            f"{provider.label} sent more than {MAX_READ_PER_PAGE} results in one page; only the "
            f"first {MAX_READ_PER_PAGE} of each page were read"
        )
    if results.duplicates:
        search.notes.append(f"{results.duplicates} result(s) repeated across {provider.label}'s pages were removed")
    if len(results.items) < wanted:
        search.notes.append(f"{provider.label} returned {len(results.items)} result(s), fewer than top_k {top_k}")
    keys = keys_of(credentials)  # a provider may echo the key inside a result: none reaches an output
    kept = []
    for item in results.items:
        if budget.remaining() <= 0:
            raise search.client.timed_out()
        kept.append(scrub(item, keys))
    return kept, scrub(search.notes, keys), search.client.requests_made


def open_search(
    provider: Provider,
    query: str,
    wanted: int,
    freshness: str,
    credentials: dict[str, Any] | None,
    budget: Budget,
    session: requests.Session | None,
    sleep: Callable[[float], None],
) -> Search:
    client = ProviderClient(provider, credentials, budget, session=session, sleep=sleep)
    key = credential(credentials, provider.key_field) if provider.key_field else ""
    return Search(
        provider,
        query,
        freshness,
        client,
        base_url(provider, credentials),
        key,
        Results(provider, wanted, budget.remaining, client.timed_out),
    )


def check_provider(
    provider: Provider,
    credentials: dict[str, Any],
    budget: Budget,
    session: requests.Session | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """The cheapest call that proves the credentials work; raises SearchError/SearchInputError when they do not."""
    search = open_search(provider, "G-Cite", 1, "any", credentials, budget, session, sleep)
    client, base, key = search.client, search.base, search.key
    try:
        if provider.name == "bocha":
            body = client.call("GET", base + "/v1/fund/remaining", headers=bearer(key))
            check_code_body(search, body)
        elif provider.name == "tavily":
            body = client.call("GET", base + "/usage", headers=bearer(key))
            if not isinstance(body, dict) or "key" not in body and "account" not in body:
                raise search.fail("usage endpoint answered in an unexpected shape")
        elif provider.name == "serpapi":
            body = client.call("GET", base + "/account.json", params={"api_key": key})
            if isinstance(body, dict) and body.get("error"):
                raise search.fail(f"returned an error with HTTP 200: {search.detail(body)}")
        else:  # Baidu, Brave and SearXNG have no free endpoint that proves the key: one smallest search
            FETCHERS[provider.name](search, 1)
    finally:
        client.close()


def check_all(
    credentials: dict[str, Any],
    seconds_each: float = 10.0,
    session: requests.Session | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, str]:
    """{provider label: failure message} for every configured provider whose check failed."""
    failures: dict[str, str] = {}
    for name in AUTO_ORDER:
        provider = PROVIDERS[name]
        if name not in configured(credentials):
            override = credential(credentials, provider.url_field)
            if override and provider.key_field:
                failures[provider.label] = f"{provider.url_field} is set but {provider.key_field} is empty"
            continue
        try:
            check_provider(provider, credentials, Budget(seconds_each), session=session, sleep=sleep)
        except (SearchError, SearchInputError) as exc:
            failures[provider.label] = redact(str(exc), secrets_of(credentials))
    return failures


def summary(provider: Provider, query: str, results: list[dict[str, Any]], notes: list[str]) -> str:
    """The tool's short text output: how many results, from whom, and every note."""
    shown = query if len(query) <= 60 else query[:59] + "…"
    lines = [f"{provider.label}: {len(results)} result{'s' * (len(results) != 1)} for “{shown}”."]
    lines += [f"- {r['title'] or r['url']}" for r in results[:10]]
    if len(results) > 10:
        lines.append(f"- … and {len(results) - 10} more")
    lines += [f"Note: {note}." for note in notes]
    return "\n".join(lines)
