"""The web_search tool's provider layer against each provider's real API shapes (mocked with `responses`).

Each provider is simulated by a callback that pages like the real API over a pool of N results, so top_k, paging
and caps are tested against the provider's own semantics, not against canned lists.
"""

import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
import responses

from citations import merge as merge_chunks
from websearch import client, errors, http_client, mappers, params, providers
from websearch.search import check_all, run_search

KEY = "sk-TEST-9f8e7d6c5b4a"
SEARX = "http://searx.internal.example:8888/private-instance"
GATEWAY = "https://gateway.internal.example/bocha-proxy"
CREDENTIALS = {
    "bocha_api_key": KEY,
    "tavily_api_key": KEY,
    "baidu_api_key": KEY,
    "serpapi_api_key": KEY,
    "brave_api_key": KEY,
    "searxng_base_url": SEARX,
}
PROVIDER_NAMES = list(providers.AUTO_ORDER)

ENDPOINT = {
    "bocha": ("POST", "https://api.bochaai.com/v1/web-search"),
    "tavily": ("POST", "https://api.tavily.com/search"),
    "baidu": ("POST", "https://qianfan.baidubce.com/v2/ai_search/web_search"),
    "serpapi": ("GET", "https://serpapi.com/search.json"),
    "brave": ("GET", "https://api.search.brave.com/res/v1/web/search"),
    "searxng": ("GET", SEARX + "/search"),
}


# --- realistic result items, one builder per provider ------------------------------------------------------


def page_url(n):
    return f"https://site{n}.example.com/articles/{n}"


def bocha_item(n):
    return {
        "id": f"https://api.bochaai.com/v1/#WebPages.{n}",
        "name": f"巡检标准 {n}",
        "url": page_url(n),
        "displayUrl": page_url(n),
        "snippet": f"短摘要 {n}",
        "summary": f"巡检分三类，第 {n} 篇。",
        "siteName": f"站点{n}",
        "siteIcon": "https://th.bochaai.com/favicon?domain_url=x",
        "datePublished": "2025-02-23T08:18:30+08:00",
        "dateLastCrawled": "2025-02-23T08:18:30Z",
        "cachedPageUrl": None,
        "language": None,
        "isFamilyFriendly": None,
        "isNavigational": None,
    }


def tavily_item(n):
    return {
        "url": page_url(n),
        "title": f"Patrol guide {n}",
        "content": f"Patrols run daily ({n}).",
        "score": round(0.9 - n / 100, 4),
        "raw_content": None,
    }


def baidu_item(n):
    return {
        "id": n + 1,
        "title": f"巡检标准 {n}",
        "url": page_url(n),
        "web_anchor": f"巡检标准 {n}",
        "website": f"站点{n}",
        "content": f"巡检分三类，第 {n} 篇。",
        "date": "2025-04-27 18:02:00",
        "icon": None,
        "image": None,
        "video": None,
        "type": "web",
        "rerank_score": round(0.8 - n / 100, 4),
        "authority_score": 0.5,
    }


def serpapi_item(n):
    return {
        "position": n + 1,
        "title": f"Patrol guide {n}",
        "link": page_url(n),
        "redirect_link": "https://www.google.com/url?q=x",
        "displayed_link": f"site{n}.example.com › articles",
        "snippet": f"Patrols run daily ({n}).",
        "snippet_highlighted_words": ["Patrols"],
        "source": f"Site {n}",
        "date": "Aug 12, 2025",
    }


def brave_item(n):
    return {
        "title": f"Patrol <strong>guide</strong> {n}",
        "url": page_url(n),
        "is_source_local": False,
        "is_source_both": False,
        "description": f"<strong>Patrols</strong> run daily &amp; nightly ({n}).",
        "page_age": "2025-01-15T10:00:00",
        "age": "January 15, 2025",
        "language": "en",
        "family_friendly": True,
        "type": "search_result",
        "subtype": "generic",
        "profile": {"name": f"Site {n}", "url": page_url(n), "long_name": f"site{n}.example.com", "img": ""},
        "meta_url": {"scheme": "https", "netloc": f"site{n}.example.com", "hostname": f"site{n}.example.com"},
    }


def searxng_item(n):
    return {
        "url": page_url(n),
        "title": f"Patrol guide {n}",
        "content": f"Patrols run daily ({n}).",
        "engine": "bing",
        "engines": ["bing", "duckduckgo"],
        "positions": [n + 1],
        "score": round(2.0 - n / 50, 4),
        "category": "general",
        "parsed_url": ["https", f"site{n}.example.com", f"/articles/{n}", "", "", ""],
        "publishedDate": "2025-03-01T00:00:00",
        "template": "default.html",
    }


ITEM = {
    "bocha": bocha_item,
    "tavily": tavily_item,
    "baidu": baidu_item,
    "serpapi": serpapi_item,
    "brave": brave_item,
    "searxng": searxng_item,
}
SEARXNG_PAGE = 10


def simulate(provider, total):
    """A `responses` callback that answers like the provider's API with `total` results available."""
    pool = [ITEM[provider](n) for n in range(total)]

    def callback(request):
        query = {k: v[0] for k, v in parse_qs(urlsplit(request.url).query).items()}
        body = json.loads(request.body) if request.body else {}
        if provider == "bocha":
            value = pool[: body["count"]]
            payload = {
                "code": 200,
                "log_id": "d71841ad20095f61",
                "msg": None,
                "data": {
                    "_type": "SearchResponse",
                    "queryContext": {"originalQuery": body["query"]},
                    "webPages": {
                        "webSearchUrl": "",
                        "totalEstimatedMatches": total,
                        "value": value,
                        "someResultsRemoved": False,
                    },
                    "images": None,
                    "videos": None,
                },
            }
        elif provider == "tavily":
            payload = {
                "query": body["query"],
                "follow_up_questions": None,
                "answer": None,
                "images": [],
                "results": pool[: body["max_results"]],
                "response_time": 1.09,
                "request_id": "r-1",
            }
        elif provider == "baidu":
            payload = {
                "references": pool[: body["resource_type_filter"][0]["top_k"]],
                "request_id": "ca749cb1-26db-4ff6-9735-f7b472d59003",
            }
        elif provider == "serpapi":
            start = int(query.get("start", 0))
            page = pool[start : start + 10]
            payload = {"search_metadata": {"id": "x", "status": "Success"}, "search_parameters": {"q": query["q"]}}
            if page:
                payload["organic_results"] = page
                pagination = {"current": start // 10 + 1}
                if start + 10 < total:
                    pagination["next"] = "https://serpapi.com/search.json?start=" + str(start + 10)
                payload["serpapi_pagination"] = pagination
            else:
                payload["error"] = "Google hasn't returned any results for this query."
        elif provider == "brave":
            count, offset = int(query["count"]), int(query["offset"])
            page = pool[offset * count : (offset + 1) * count]
            payload = {
                "type": "search",
                "query": {"original": query["q"], "more_results_available": (offset + 1) * count < total},
            }
            if page:
                payload["web"] = {"type": "search", "results": page, "family_friendly": True}
        else:
            pageno = int(query["pageno"])
            payload = {
                "query": query["q"],
                "number_of_results": 0,
                "results": pool[(pageno - 1) * SEARXNG_PAGE : pageno * SEARXNG_PAGE],
                "answers": [],
                "corrections": [],
                "infoboxes": [],
                "suggestions": [],
                "unresponsive_engines": [],
            }
        return 200, {"Content-Type": "application/json"}, json.dumps(payload, ensure_ascii=False)

    return callback


@pytest.fixture
def mocked():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        yield rsps


def serve(rsps, provider, total):
    method, url = ENDPOINT[provider]
    rsps.add_callback(method, url, callback=simulate(provider, total))


def search(provider, top_k=5, freshness="any", credentials=CREDENTIALS, seconds=7.0, sleeps=None):
    sleeps = [] if sleeps is None else sleeps
    return run_search(
        providers.PROVIDERS[provider],
        "巡检标准",
        top_k,
        freshness,
        credentials,
        http_client.Budget(seconds),
        sleep=sleeps.append,
    )


def assert_safe(message, credentials=CREDENTIALS):
    assert KEY not in message
    for value in credentials.values():
        assert value not in message
    assert not re.search(r"https?://", message), message


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


def sent(call):
    query = {k: v[0] for k, v in parse_qs(urlsplit(call.request.url).query).items()}
    return {**query, **(json.loads(call.request.body) if call.request.body else {})}


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


# --- errors ------------------------------------------------------------------------------------------------

REFUSED = {  # each provider's real answer to a bad key
    "bocha": (401, {"code": "401", "message": "Invalid API KEY", "log_id": "c66aac17eab1bb7e"}, "Invalid API KEY"),
    "tavily": (
        401,
        {"detail": {"error": "Unauthorized: missing or invalid API key."}},
        "Unauthorized: missing or invalid API key.",
    ),
    "baidu": (
        401,
        {
            "requestId": "00000000-0000-0000-0000-000000000000",
            "code": 216003,
            "message": "Authentication error: ( [Code: InvalidHTTPAuthHeader; Message: Fail to parse apikey "
            "authorization; RequestId: ea6ffeca-a136-401b-ba30-61c910c02ead] )",
        },
        "Authentication error",
    ),
    "serpapi": (
        401,
        {"error": "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"},
        "Invalid API key. Your API key should be here: [link]",
    ),
    "brave": (
        422,
        {
            "type": "ErrorResponse",
            "error": {
                "id": "5d832250-9396-4f6e-b84a-2a1fe524cd7d",
                "status": 422,
                "code": "SUBSCRIPTION_TOKEN_INVALID",
                "detail": "The provided subscription token is invalid.",
                "meta": {"component": "authentication"},
            },
            "time": 1663072993,
        },
        "SUBSCRIPTION_TOKEN_INVALID The provided subscription token is invalid.",
    ),
    "searxng": (403, "<html><title>403 Forbidden</title></html>", ""),
}


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_a_refused_key_names_the_provider_and_says_the_key_was_refused(mocked, provider):
    status, body, detail = REFUSED[provider]
    method, url = ENDPOINT[provider]
    mocked.add(method, url, status=status, **({"json": body} if isinstance(body, dict) else {"body": body}))
    label = providers.PROVIDERS[provider].label
    with pytest.raises(errors.SearchError) as caught:
        search(provider)
    message = str(caught.value)
    assert message.startswith(f"{label} refused the API key (HTTP {status}")
    assert detail in message
    assert_safe(message)
    assert len(mocked.calls) == 1  # a refused key is not retried


def test_bocha_403_means_the_balance_is_used_up_not_a_bad_key(mocked):
    mocked.add(
        "POST",
        ENDPOINT["bocha"][1],
        status=403,
        json={"code": "403", "message": "You do not have enough money", "log_id": "c66aac17eab1bb7e"},
    )
    with pytest.raises(
        errors.SearchError,
        match=r"^Bocha account balance is used up \(HTTP 403: You do not have "
        r"enough money\); top it up on the Bocha website$",
    ):
        search("bocha")


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_429_then_success_retries_after_the_providers_retry_after(mocked, provider):
    method, url = ENDPOINT[provider]
    mocked.add(method, url, status=429, headers={"Retry-After": "2"}, json={"error": "Too Many Requests"})
    serve(mocked, provider, 3)
    sleeps = []
    results, _, requests_made = search(provider, top_k=3, sleeps=sleeps)
    assert len(results) == 3 and requests_made == 2
    assert sleeps == [2.0]


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_500_on_every_attempt_fails_after_bounded_retries_with_back_off(mocked, provider):
    method, url = ENDPOINT[provider]
    mocked.add(method, url, status=500, json={"code": "500", "message": "internal error"})
    sleeps = []
    with pytest.raises(errors.SearchError) as caught:
        search(provider, sleeps=sleeps)
    message = str(caught.value)
    assert message.startswith(f"{providers.PROVIDERS[provider].label} failed with HTTP 500")
    assert message.endswith("after 3 attempts")
    assert sleeps == [0.5, 1.0] and len(mocked.calls) == 3
    assert_safe(message)


def test_a_retry_after_longer_than_the_budget_fails_at_once(mocked):
    mocked.add(
        "POST",
        ENDPOINT["bocha"][1],
        status=429,
        headers={"Retry-After": "60"},
        json={"code": "429", "message": "You have reached the request limit", "log_id": "x"},
    )
    sleeps = []
    with pytest.raises(
        errors.SearchError,
        match=r"^Bocha is rate-limiting or out of quota \(HTTP 429: You have "
        r"reached the request limit\)$",
    ):
        search("bocha", sleeps=sleeps)
    assert sleeps == [] and len(mocked.calls) == 1


def test_retry_after_as_an_http_date_is_honoured():
    response = requests.Response()
    response.headers["Retry-After"] = "Wed, 21 Oct 2015 07:28:00 GMT"  # in the past: retry now
    assert client.retry_after(response) == 0.0
    response.headers["Retry-After"] = "soon"
    assert client.retry_after(response) is None


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_a_timeout_names_the_provider_and_the_time(mocked, provider):
    method, url = ENDPOINT[provider]
    mocked.add(method, url, body=requests.exceptions.ReadTimeout("HTTPSConnectionPool(host=x): read timed out"))
    with pytest.raises(errors.SearchError) as caught:
        search(provider, seconds=7)
    message = str(caught.value)
    assert message == f"{providers.PROVIDERS[provider].label} did not answer within 7 s (timeout_seconds)"
    assert len(mocked.calls) == 1


def test_a_connection_failure_is_retried_then_reported_without_the_url(mocked):
    mocked.add("GET", ENDPOINT["searxng"][1], body=requests.exceptions.ConnectionError(f"cannot reach {SEARX}"))
    sleeps = []
    with pytest.raises(errors.SearchError) as caught:
        search("searxng", sleeps=sleeps)
    assert str(caught.value) == (
        "could not connect to SearXNG (after 3 attempts); check the network and the base URL in the G-Cite credentials"
    )
    assert sleeps == [0.5, 1.0]
    assert_safe(str(caught.value))


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_malformed_json_is_an_error_not_an_empty_list(mocked, provider):
    method, url = ENDPOINT[provider]
    mocked.add(method, url, status=200, body="<html><body>Gateway portal</body></html>", content_type="text/html")
    with pytest.raises(errors.SearchError) as caught:
        search(provider)
    assert str(caught.value) == (
        f"{providers.PROVIDERS[provider].label} answered HTTP 200 with a body that is not JSON (text/html)"
    )


WRONG_SHAPE = {
    "bocha": {"code": 200, "data": {"webPages": {"value": "none"}}},
    "tavily": {"answer": "no list"},
    "baidu": {"request_id": "r"},
    "serpapi": {"unexpected": True},
    "brave": {"results": []},
    "searxng": {"answers": []},
}


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_json_without_a_result_list_is_an_error_naming_the_expected_path(mocked, provider):
    method, url = ENDPOINT[provider]
    mocked.add(method, url, json=WRONG_SHAPE[provider])
    with pytest.raises(errors.SearchError, match=r"answered without a result list \(expected "):
        search(provider)


ERROR_200 = {  # provider error bodies that come with HTTP 200
    "bocha": (
        {"code": "500", "message": "search backend busy", "log_id": "c66aac17eab1bb7e"},
        "Bocha returned an error with HTTP 200: 500: search backend busy",
    ),
    "tavily": (
        {"error": {"code": "usage_limit_exceeded", "message": "Monthly usage limit reached.", "window": "month"}},
        "Tavily returned an error with HTTP 200: Monthly usage limit reached.",
    ),
    "baidu": (
        {"requestId": "r", "code": 216100, "message": "invalid param: messages content is empty"},
        "Baidu AI Search returned an error with HTTP 200: 216100: invalid param: messages content is empty",
    ),
    "serpapi": (
        {"search_metadata": {"id": "x", "status": "Error"}, "error": "Your account has run out of searches."},
        "SerpAPI returned an error with HTTP 200: Your account has run out of searches.",
    ),
    "brave": (
        {
            "type": "ErrorResponse",
            "error": {
                "id": "x",
                "status": 429,
                "code": "RATE_LIMITED",
                "detail": "Request rate limit exceeded for plan.",
            },
            "time": 1,
        },
        "Brave Search returned an error with HTTP 200: RATE_LIMITED Request rate limit exceeded for plan.",
    ),
    "searxng": (
        {"query": "q", "results": [], "unresponsive_engines": [["google", "timeout"], ["bing", "CAPTCHA"]]},
        "SearXNG found nothing because its engines failed: google timeout, bing CAPTCHA",
    ),
}


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_an_error_body_with_status_200_is_an_error(mocked, provider):
    body, expected = ERROR_200[provider]
    method, url = ENDPOINT[provider]
    mocked.add(method, url, json=body)
    with pytest.raises(errors.SearchError) as caught:
        search(provider)
    assert str(caught.value) == expected
    assert_safe(str(caught.value))


@pytest.mark.parametrize("provider", ["bocha", "baidu"])
def test_a_key_refused_inside_a_200_body_says_the_key_was_refused(mocked, provider):
    body = {"code": 401, "msg": "Invalid API KEY", "log_id": "x"} if provider == "bocha" else REFUSED["baidu"][1]
    mocked.add("POST", ENDPOINT[provider][1], json=body)
    with pytest.raises(
        errors.SearchError,
        match=rf"^{providers.PROVIDERS[provider].label} refused the API key \(HTTP 200 "
        "with an error body: ",
    ):
        search(provider)


def test_a_provider_message_echoing_the_key_or_url_is_redacted(mocked):
    echo = f"key {KEY} is not valid for {SEARX}/search"
    mocked.add("GET", ENDPOINT["searxng"][1], status=400, json={"error": echo})
    mocked.add("POST", ENDPOINT["bocha"][1], status=400, json={"code": "400", "message": f"bad key {KEY}"})
    for provider in ("searxng", "bocha"):
        with pytest.raises(errors.SearchError) as caught:
            search(provider)
        assert "rejected the request (HTTP 400" in str(caught.value)
        assert_safe(str(caught.value))


# --- parameters and provider choice ----------------------------------------------------------------------


def test_auto_takes_the_first_configured_provider_in_the_stated_order():
    assert params.choose_provider("auto", CREDENTIALS).name == "bocha"
    assert params.choose_provider(None, {"brave_api_key": KEY, "serpapi_api_key": KEY}).name == "serpapi"
    assert params.choose_provider("", {"searxng_base_url": SEARX, "brave_api_key": " "}).name == "searxng"
    assert params.choose_provider("Tavily", CREDENTIALS).name == "tavily"


@pytest.mark.parametrize(
    "provider, credentials, message",
    [
        (
            "auto",
            {},
            "provider: no search provider is configured; add an API key (Bocha, Tavily, Baidu AI Search, "
            "SerpAPI, Brave Search) or a SearXNG base URL in the G-Cite plugin's credentials",
        ),
        (
            "brave",
            {"bocha_api_key": KEY},
            "provider: Brave Search is not configured; add its API key in the G-Cite plugin's credentials",
        ),
        ("searxng", {}, "provider: SearXNG is not configured; add its base URL in the G-Cite plugin's credentials"),
        (
            "google",
            CREDENTIALS,
            "provider: expected auto or one of bocha, tavily, baidu, serpapi, brave, searxng, got 'google'",
        ),
    ],
)
def test_a_provider_that_cannot_be_used_is_an_error_naming_the_field(provider, credentials, message):
    with pytest.raises(errors.SearchInputError) as caught:
        params.choose_provider(provider, credentials)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "parse, value, message",
    [
        (params.parse_top_k, 0, "top_k: expected a whole number from 1 to 50, got 0"),
        (params.parse_top_k, 51, "top_k: expected a whole number from 1 to 50, got 51"),
        (params.parse_top_k, 2.5, "top_k: expected a whole number from 1 to 50, got 2.5"),
        (params.parse_top_k, True, "top_k: expected a whole number from 1 to 50, got True"),
        (params.parse_timeout, 0, "timeout_seconds: expected a number of seconds from 1 to 100, got 0"),
        (params.parse_timeout, 500, "timeout_seconds: expected a number of seconds from 1 to 100, got 500"),
        (params.parse_timeout, "soon", "timeout_seconds: expected a number of seconds from 1 to 100, got 'soon'"),
        (params.parse_freshness, "hour", "freshness: expected one of any, day, week, month, year, got 'hour'"),
        (params.parse_query, "  ", "query: expected the text to search for, got '  '"),
        (params.parse_query, None, "query: expected the text to search for, got nothing"),
    ],
)
def test_bad_parameters_are_errors_naming_the_parameter(parse, value, message):
    with pytest.raises(errors.SearchInputError) as caught:
        parse(value)
    assert str(caught.value) == message


def test_parameter_defaults_and_dify_number_forms():
    assert params.parse_top_k(None) == 5 and params.parse_top_k(7.0) == 7 and params.parse_top_k("12") == 12
    assert params.parse_timeout("") == 20.0 and params.parse_timeout(2.5) == 2.5
    assert params.parse_freshness(None) == "any" and params.parse_freshness("Week") == "week"


def test_a_base_url_that_is_not_http_is_an_error_naming_the_credential():
    with pytest.raises(errors.SearchInputError, match=r"^searxng_base_url: expected an http\(s\) URL"):
        search("searxng", credentials={"searxng_base_url": "searx.local"})


# --- credential validation ---------------------------------------------------------------------------------

CHEAPEST = {
    "bocha": (
        "GET",
        "https://api.bochaai.com/v1/fund/remaining",
        {"success": True, "code": "200", "msg": None, "data": {"remaining": 2.8}},
    ),
    "tavily": (
        "GET",
        "https://api.tavily.com/usage",
        {
            "key": {"usage": 150, "limit": 1000},
            "account": {"current_plan": "Researcher", "plan_usage": 150, "plan_limit": 1000},
        },
    ),
    "serpapi": (
        "GET",
        "https://serpapi.com/account.json",
        {"account_id": "x", "plan_name": "Free Plan", "searches_per_month": 100, "this_month_usage": 3},
    ),
}


def test_validation_calls_each_configured_providers_cheapest_endpoint(mocked):
    for method, url, body in CHEAPEST.values():
        mocked.add(method, url, json=body)
    for provider in ("baidu", "brave", "searxng"):  # no free endpoint: one search of one result
        serve(mocked, provider, 1)
    assert check_all(CREDENTIALS, sleep=lambda s: None) == {}
    paths = [urlsplit(c.request.url).path for c in mocked.calls]
    assert paths == [
        "/v1/fund/remaining",
        "/usage",
        "/v2/ai_search/web_search",
        "/account.json",
        "/res/v1/web/search",
        "/private-instance/search",
    ]
    assert sent(mocked.calls[2])["resource_type_filter"] == [{"type": "web", "top_k": 1}]
    assert sent(mocked.calls[4])["count"] == "1"


def test_validation_reports_every_failed_provider_by_name(mocked):
    mocked.add("GET", CHEAPEST["bocha"][1], status=401, json=REFUSED["bocha"][1])
    mocked.add("GET", CHEAPEST["tavily"][1], json=CHEAPEST["tavily"][2])
    mocked.add("GET", CHEAPEST["serpapi"][1], status=401, json=REFUSED["serpapi"][1])
    mocked.add("GET", ENDPOINT["searxng"][1], body=requests.exceptions.ConnectionError(SEARX))
    credentials = {k: v for k, v in CREDENTIALS.items() if not k.startswith(("baidu", "brave"))}
    credentials["brave_base_url"] = "https://brave-proxy.internal.example"
    failures = check_all(credentials, sleep=lambda s: None)
    assert list(failures) == ["Bocha", "SerpAPI", "Brave Search", "SearXNG"]
    assert failures["Bocha"].startswith("Bocha refused the API key (HTTP 401")
    assert failures["SerpAPI"].startswith("SerpAPI refused the API key (HTTP 401")
    assert failures["Brave Search"] == "brave_base_url is set but brave_api_key is empty"
    assert failures["SearXNG"].startswith("could not connect to SearXNG")
    for message in failures.values():
        assert_safe(message, credentials)


def test_validation_with_nothing_configured_makes_no_request(mocked):
    assert check_all({}) == {} and len(mocked.calls) == 0


# --- the merge node reads this tool's output without loss ------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_merge_node_reads_every_field_of_every_providers_output(mocked, provider):
    serve(mocked, provider, 8)
    results, notes, _ = search(provider, top_k=8)
    json_output = [{"results": results, "provider": provider, "notes": notes}]  # the Tool node's `json`
    for web_chunks in (results, json_output, json.dumps(json_output, ensure_ascii=False)):
        merged = merge_chunks.main(rag_chunks=[], web_chunks=web_chunks, max_web_results=8)
        assert merged["skipped"] == []
        chunks = merged["chunk_metadata"]
        by_url = {c["url"]: c for c in chunks}
        assert [c["url"] for c in chunks] == [r["url"] for r in sorted(results, key=lambda r: -(r["score"] or 0))]
        for r in results:
            chunk = by_url[r["url"]]
            assert (
                chunk["document_title"],
                chunk["content"],
                chunk["site_name"],
                chunk["published_date"],
                chunk["score"],
                chunk["provider"],
            ) == (r["title"], r["content"], r["site_name"], r["published_date"], r["score"] or 0.0, r["provider"])
