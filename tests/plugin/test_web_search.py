"""The web_search tool's provider layer against each provider's real API shapes (mocked with `responses`).

Each provider is simulated by a callback that pages like the real API over a pool of N results, so top_k, paging
and caps are tested against the provider's own semantics, not against canned lists.
"""

import json
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.web_search_fakes import (
    ENDPOINT,
    GATEWAY,
    ITEM,
    KEY,
    PROVIDER_NAMES,
    brave_item,
    page_url,
    search,
    sent,
    serve,
    simulate,
    tavily_item,
)
from websearch import mappers, providers

# --- success, top_k, paging, caps ----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_top_k_smaller_than_available_gives_exactly_top_k_in_the_providers_order(mocked, provider):
    serve(mocked, provider, 30)
    results, notes, requests_made = search(provider, top_k=3)
    assert [r["url"] for r in results] == [page_url(n) for n in range(3)]
    assert notes == [] and requests_made == 1
    assert set(results[0]) == {"title", "url", "content", "site_name", "published_date", "score", "provider"}
    assert all(r["provider"] == provider for r in results)


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_top_k_larger_than_available_returns_what_there_is_and_says_so(mocked, provider):
    serve(mocked, provider, 4)
    results, notes, _ = search(provider, top_k=10)
    assert [r["url"] for r in results] == [page_url(n) for n in range(4)]
    label = providers.PROVIDERS[provider].label
    assert notes == [f"{label} returned 4 result(s), fewer than top_k 10"]


@pytest.mark.parametrize(
    "provider, requests_expected", [("bocha", 1), ("baidu", 1), ("serpapi", 5), ("brave", 3), ("searxng", 5)]
)
def test_top_k_50_is_met_in_one_request_or_by_paging(mocked, provider, requests_expected):
    serve(mocked, provider, 60)
    results, notes, requests_made = search(provider, top_k=50)
    assert [r["url"] for r in results] == [page_url(n) for n in range(50)]
    assert notes == [] and requests_made == requests_expected


def test_tavily_caps_top_k_at_20_and_says_so(mocked):
    serve(mocked, "tavily", 60)
    results, notes, _ = search("tavily", top_k=30)
    assert len(results) == 20
    assert notes == ["Tavily returns at most 20 results per search; top_k 30 was capped at 20"]
    assert json.loads(mocked.calls[0].request.body)["max_results"] == 20


def test_brave_pages_that_overlap_are_deduplicated_and_paging_continues(mocked):
    first = [brave_item(n) for n in range(20)]
    second = [brave_item(n) for n in range(15, 35)]  # Brave warns pages may overlap
    for page in (first, second):
        mocked.add(
            "GET",
            ENDPOINT["brave"][1],
            json={
                "type": "search",
                "query": {"more_results_available": True},
                "web": {"type": "search", "results": page},
            },
        )
    results, notes, requests_made = search("brave", top_k=30)
    assert [r["url"] for r in results] == [page_url(n) for n in range(30)]
    assert requests_made == 2
    assert notes == ["5 result(s) repeated across Brave Search's pages were removed"]


def test_each_provider_is_mapped_to_flat_items_exactly():
    expected = {
        "bocha": {
            "title": "巡检标准 0",
            "url": page_url(0),
            "content": "巡检分三类，第 0 篇。",
            "site_name": "站点0",
            "published_date": "2025-02-23",
            "score": None,
            "provider": "bocha",
        },
        "tavily": {
            "title": "Patrol guide 0",
            "url": page_url(0),
            "content": "Patrols run daily (0).",
            "site_name": "",
            "published_date": "",
            "score": 0.9,
            "provider": "tavily",
        },
        "baidu": {
            "title": "巡检标准 0",
            "url": page_url(0),
            "content": "巡检分三类，第 0 篇。",
            "site_name": "站点0",
            "published_date": "2025-04-27",
            "score": 0.8,
            "provider": "baidu",
        },
        "serpapi": {
            "title": "Patrol guide 0",
            "url": page_url(0),
            "content": "Patrols run daily (0).",
            "site_name": "Site 0",
            "published_date": "2025-08-12",
            "score": None,
            "provider": "serpapi",
        },
        "brave": {
            "title": "Patrol guide 0",
            "url": page_url(0),
            "content": "Patrols run daily & nightly (0).",
            "site_name": "Site 0",
            "published_date": "2025-01-15",
            "score": None,
            "provider": "brave",
        },
        "searxng": {
            "title": "Patrol guide 0",
            "url": page_url(0),
            "content": "Patrols run daily (0).",
            "site_name": "",
            "published_date": "2025-03-01",
            "score": 2.0,
            "provider": "searxng",
        },
    }
    for name, item in expected.items():
        assert mappers.MAPPERS[name](providers.PROVIDERS[name], ITEM[name](0)) == item, name


def test_only_http_urls_are_passed_on():
    item = dict(tavily_item(0), url="javascript:alert(1)")
    assert mappers.map_tavily(providers.PROVIDERS["tavily"], item)["url"] == ""
    item = dict(tavily_item(0), url="HTTPS://Example.com/a")
    assert mappers.map_tavily(providers.PROVIDERS["tavily"], item)["url"] == "HTTPS://Example.com/a"


def test_dates_the_providers_write_become_iso_days_and_unknown_text_is_kept():
    assert mappers.iso_date("Tue, 12 Aug 2025 10:00:00 GMT") == "2025-08-12"  # Tavily news
    assert mappers.iso_date("August 12, 2025") == "2025-08-12"
    assert mappers.iso_date("3 days ago") == "3 days ago"
    assert mappers.iso_date(None) == ""


# --- freshness ---------------------------------------------------------------------------------------------


FRESHNESS_FIELD = {
    "bocha": "freshness",
    "tavily": "time_range",
    "baidu": "search_recency_filter",
    "serpapi": "tbs",
    "brave": "freshness",
    "searxng": "time_range",
}
FRESHNESS_SENT = {
    "bocha": {"any": "noLimit", "day": "oneDay", "week": "oneWeek", "month": "oneMonth", "year": "oneYear"},
    "tavily": {"any": None, "day": "day", "week": "week", "month": "month", "year": "year"},
    "baidu": {"any": None, "day": "week", "week": "week", "month": "month", "year": "year"},
    "serpapi": {"any": None, "day": "qdr:d", "week": "qdr:w", "month": "qdr:m", "year": "qdr:y"},
    "brave": {"any": None, "day": "pd", "week": "pw", "month": "pm", "year": "py"},
    "searxng": {"any": None, "day": "day", "week": "week", "month": "month", "year": "year"},
}


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
@pytest.mark.parametrize("freshness", providers.FRESHNESS)
def test_freshness_is_sent_in_each_providers_own_values(mocked, provider, freshness):
    serve(mocked, provider, 5)
    _, notes, _ = search(provider, top_k=5, freshness=freshness)
    assert sent(mocked.calls[0]).get(FRESHNESS_FIELD[provider]) == FRESHNESS_SENT[provider][freshness]
    widened = provider == "baidu" and freshness == "day"
    assert notes == (
        ["Baidu AI Search has no one-day filter; searched the last 7 days (week) instead"] if widened else []
    )


def test_requests_carry_the_key_where_each_api_expects_it(mocked):
    for provider in PROVIDER_NAMES:
        serve(mocked, provider, 2)
        search(provider, top_k=2)
    calls = {urlsplit(c.request.url).netloc: c.request for c in mocked.calls}
    assert calls["api.bochaai.com"].headers["Authorization"] == f"Bearer {KEY}"
    assert calls["api.tavily.com"].headers["Authorization"] == f"Bearer {KEY}"
    assert calls["qianfan.baidubce.com"].headers["Authorization"] == f"Bearer {KEY}"
    assert calls["qianfan.baidubce.com"].headers["X-Appbuilder-Authorization"] == f"Bearer {KEY}"
    assert parse_qs(urlsplit(calls["serpapi.com"].url).query)["api_key"] == [KEY]
    assert calls["api.search.brave.com"].headers["X-Subscription-Token"] == KEY
    assert "Authorization" not in calls["searx.internal.example:8888"].headers
    assert sent(mocked.calls[0])["summary"] is True  # Bocha's long summary, not only the snippet
    assert sent(mocked.calls[2])["resource_type_filter"] == [{"type": "web", "top_k": 2}]


def test_a_base_url_override_sends_the_request_there(mocked):
    serve_url = GATEWAY + "/v1/web-search"
    mocked.add_callback("POST", serve_url, callback=simulate("bocha", 3))
    results, _, _ = search("bocha", top_k=3, credentials={"bocha_api_key": KEY, "bocha_base_url": GATEWAY + "/"})
    assert len(results) == 3 and mocked.calls[0].request.url == serve_url


# --- empty results -----------------------------------------------------------------------------------------

EMPTY = {
    "bocha": {
        "code": 200,
        "log_id": "x",
        "msg": None,
        "data": {
            "_type": "SearchResponse",
            "queryContext": {"originalQuery": "q"},
            "webPages": None,
            "images": None,
            "videos": None,
        },
    },
    "tavily": {
        "query": "q",
        "follow_up_questions": None,
        "answer": None,
        "images": [],
        "results": [],
        "response_time": 0.5,
    },
    "baidu": {"references": [], "request_id": "r"},
    "serpapi": {
        "search_metadata": {"id": "x", "status": "Success"},
        "search_parameters": {"q": "q"},
        "error": "Google hasn't returned any results for this query.",
    },
    "brave": {
        "type": "search",
        "query": {"original": "q", "more_results_available": False},
        "mixed": {"type": "mixed", "main": []},
    },
    "searxng": {"query": "q", "number_of_results": 0, "results": [], "answers": [], "unresponsive_engines": []},
}


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_empty_results_are_an_empty_list_with_a_note(mocked, provider):
    method, url = ENDPOINT[provider]
    mocked.add(method, url, json=EMPTY[provider])
    results, notes, requests_made = search(provider, top_k=5)
    assert results == [] and requests_made == 1
    assert notes == [f"{providers.PROVIDERS[provider].label} returned 0 result(s), fewer than top_k 5"]
