"""The web_search tool's provider layer: errors, parameters and provider choice, credential validation, and the
merge node reading its output (providers mocked with `responses`, paging like the real APIs)."""

import json
from urllib.parse import urlsplit

import pytest
import requests

from citations import merge as merge_chunks
from tests.support.web_search_fakes import (
    CREDENTIALS,
    ENDPOINT,
    KEY,
    PROVIDER_NAMES,
    SEARX,
    assert_safe,
    search,
    sent,
    serve,
)
from websearch import client, errors, params, providers
from websearch.search import check_all

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
