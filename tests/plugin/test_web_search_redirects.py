"""A provider's redirect is followed only to what the HTTP library will connect to on the configured scheme, host
and port (issue 34, point 1): every provider against every crooked form of `Location`, over real sockets on
127.0.0.1. No request (and so no key) ever reaches another origin, and a refused redirect is an error naming the
provider, without the key or an address."""

import pytest

from tests.support.crooked_redirects import FORMS, Recorder
from websearch import errors, http_client, providers
from websearch.search import run_search

KEY = "sk-REDIRECT-7c41e09ab2d35f68"
ENDPOINTS = {
    "bocha": "/v1/web-search",
    "tavily": "/search",
    "baidu": "/v2/ai_search/web_search",
    "serpapi": "/search.json",
    "brave": "/res/v1/web/search",
    "searxng": "/search",
}
ITEM = {
    "name": "Home page",
    "title": "Home page",
    "url": "https://site.example/a",
    "link": "https://site.example/a",
    "content": "Patrols run daily.",
    "snippet": "Patrols run daily.",
    "description": "Patrols run daily.",
    "type": "web",
}
ANSWER = {
    "code": 200,
    "type": "search",
    "data": {"webPages": {"value": [ITEM]}},
    "results": [ITEM],
    "references": [ITEM],
    "search_metadata": {"status": "Success"},
    "organic_results": [ITEM],
    "web": {"results": [ITEM]},
}  # one body every provider reads as one result


class Stage:
    location = "/moved"


@pytest.fixture(scope="module")
def servers():
    stage = Stage()
    away = Recorder(lambda path: ANSWER)
    home = Recorder(lambda path: ANSWER, redirect=lambda path: stage.location if path in ENDPOINTS.values() else None)
    yield stage, home, away
    home.close()
    away.close()


def credentials(provider, origin):
    fields = providers.PROVIDERS[provider]
    found = {fields.url_field: origin}
    if fields.key_field:
        found[fields.key_field] = KEY
    return found


def key_sent(seen):
    return any(KEY in value for value in (*seen.headers.values(), seen.path))


@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
@pytest.mark.parametrize("provider", list(ENDPOINTS))
def test_a_redirect_is_followed_only_to_the_configured_origin(servers, provider, form):
    stage, home, away = servers
    home.requests.clear()
    away.requests.clear()
    stage.location = form.location(home.port, away.port)
    label = providers.PROVIDERS[provider].label
    try:
        results, _, made = run_search(
            providers.PROVIDERS[provider],
            "patrol",
            1,
            "any",
            credentials(provider, home.origin),
            http_client.Budget(5),
            sleep=lambda s: None,
        )
        outcome = "follow"
    except errors.SearchError as error:
        outcome, message = "refuse", str(error)
    assert away.requests == []  # nothing, with or without the key, went to the other port
    assert home.hosts() == {f"127.0.0.1:{home.port}"}  # nor to HOME under another name
    assert key_sent(home.requests[0]) or provider == "searxng"
    assert outcome == form.expected, form.location(home.port, away.port)
    if outcome == "refuse":
        assert len(home.requests) == 1
        assert message == (
            f"{label} answered with a redirect to another host (HTTP 307); G-Cite sends the API key "
            "only to the configured host and did not follow it: set the base URL in the G-Cite "
            "credentials to the address that answers"
        )
    else:
        assert len(home.requests) == 2 and made == 2
        assert [r["title"] for r in results] == ["Home page"]


def test_the_destination_is_what_the_library_connects_to_not_a_parse_of_the_url():
    """The form that leaked before: urlsplit reads HOME, the library connects to AWAY."""
    import requests

    session = requests.Session()
    crooked = session.prepare_request(requests.Request("GET", "http://127.0.0.1:9002\\@127.0.0.1:8001/x"))
    assert http_client.destination(session.get_adapter(crooked.url), crooked) == ("http", "127.0.0.1", 9002)
    plain = session.prepare_request(requests.Request("GET", "HTTP://127.0.0.1:08001/y"))
    assert http_client.destination(session.get_adapter(plain.url), plain) == ("http", "127.0.0.1", 8001)
