"""The web_search tool against a hostile or broken provider (issue 22, points 1, 2, 3, 6 and 12): no key to another
host, no piece of a key in an error or an output, a total deadline while a body trickles in, and an absurd date or a
too-deep body costing only what it must."""

import json
import time
from http.server import BaseHTTPRequestHandler

import pytest

from tests.support.local_http import origin, start_server, stop_server
from websearch import client, errors, http_client, providers, redaction
from websearch.search import run_search

KEY = "sk-TEST-9f8e7d6c5b4a3210"
BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
BAIDU_URL = "https://qianfan.baidubce.com/v2/ai_search/web_search"
TAVILY_URL = "https://api.tavily.com/search"
EVIL = "https://collector.evil.example/steal"
CREDENTIALS = {"brave_api_key": KEY, "baidu_api_key": KEY, "tavily_api_key": KEY, "bocha_api_key": KEY}


def search(provider, credentials=CREDENTIALS, seconds=7.0, top_k=5):
    return run_search(
        providers.PROVIDERS[provider],
        "patrol",
        top_k,
        "any",
        credentials,
        http_client.Budget(seconds),
        sleep=lambda s: None,
    )


def pieces(secret, size=redaction.KEY_PIECE):
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def assert_no_piece_of_the_key(text):
    shown = [p for p in pieces(KEY) if p in text]
    assert not shown, (shown, text)


# --- 1. a redirect to another host gets no credential ----------------------------------------------------------


@pytest.mark.parametrize(
    "provider,method,url,header",
    [
        ("brave", "GET", BRAVE_URL, "X-Subscription-Token"),
        ("baidu", "POST", BAIDU_URL, "X-Appbuilder-Authorization"),
    ],
)
@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_to_another_host_is_not_followed_and_the_key_stays_home(
    mocked, provider, method, url, header, status
):
    mocked.add(method, url, status=status, headers={"Location": EVIL})
    mocked.add(method, EVIL, json={"results": []})
    mocked.add("GET", EVIL, json={"results": []})
    with pytest.raises(errors.SearchError) as caught:
        search(provider)
    assert [call.request.url.split("?")[0] for call in mocked.calls] == [url]  # nothing went to the other host
    assert mocked.calls[0].request.headers[header].endswith(KEY)
    message = str(caught.value)
    assert message.startswith(
        f"{providers.PROVIDERS[provider].label} answered with a redirect to another host (HTTP "
        f"{status}); G-Cite sends the API key only to the configured host and did not follow it"
    )
    assert "evil" not in message and KEY not in message


def test_a_redirect_to_another_port_or_scheme_of_the_same_host_is_another_host(mocked):
    for target in ("http://api.search.brave.com/res/v1/web/search", "https://api.search.brave.com:8443/x"):
        mocked.upsert("GET", BRAVE_URL, status=302, headers={"Location": target})
        with pytest.raises(errors.SearchError, match="redirect to another host"):
            search("brave")
    assert all(call.request.url.startswith(BRAVE_URL) for call in mocked.calls)


def test_a_redirect_on_the_same_host_is_followed_with_the_key(mocked):
    moved = "https://api.search.brave.com/res/v2/web/search"
    mocked.add("GET", BRAVE_URL, status=308, headers={"Location": "/res/v2/web/search?q=patrol"})
    mocked.add(
        "GET",
        moved,
        json={
            "type": "search",
            "web": {
                "results": [
                    {"title": "Patrol guide", "url": "https://site.example/a", "description": "Patrols run daily."}
                ]
            },
        },
    )
    results, _, made = search("brave", top_k=1)
    assert [r["title"] for r in results] == ["Patrol guide"] and made == 2
    assert mocked.calls[1].request.headers["X-Subscription-Token"] == KEY


def test_a_post_redirected_to_a_get_is_refused_not_sent_without_its_body(mocked):
    mocked.add("POST", BAIDU_URL, status=302, headers={"Location": "/v2/elsewhere"})
    with pytest.raises(errors.SearchError, match=r"^Baidu AI Search redirected a POST request \(HTTP 302\)"):
        search("baidu")
    assert len(mocked.calls) == 1


def test_redirects_on_the_same_host_are_bounded(mocked):
    mocked.add("GET", BRAVE_URL, status=307, headers={"Location": BRAVE_URL})
    with pytest.raises(errors.SearchError, match=f"redirected more than {http_client.MAX_REDIRECTS} times"):
        search("brave")
    assert len(mocked.calls) == http_client.MAX_REDIRECTS + 1


# --- 2. redaction comes before the cut -------------------------------------------------------------------------


@pytest.mark.parametrize("offset", range(180, 199))
def test_a_key_echoed_where_the_message_is_cut_leaves_no_piece_of_it(mocked, offset):
    echo = "x" * offset + f" {KEY} was refused"
    mocked.add("POST", TAVILY_URL, status=400, json={"detail": {"error": echo}})
    with pytest.raises(errors.SearchError) as caught:
        search("tavily")
    message = str(caught.value)
    assert "rejected the request (HTTP 400" in message
    assert "sk-" not in message, message  # not even the first characters of the key, cut where they were


def test_a_key_echoed_masked_or_cut_by_the_provider_is_redacted(mocked):
    echo = f"invalid key {KEY[:12]}****{KEY[-4:]}; expected one like {KEY[:-3]}"
    mocked.add("POST", TAVILY_URL, status=400, json={"detail": {"error": echo}})
    with pytest.raises(errors.SearchError) as caught:
        search("tavily")
    assert_no_piece_of_the_key(str(caught.value))
    assert "invalid key ***" in str(caught.value)


def test_redaction_keeps_what_is_not_a_piece_of_a_key():
    assert redaction.redact(f"a {KEY} b sk-TEST c", [KEY]) == "a *** b sk-TEST c"  # 7 characters do not identify it
    assert redaction.redact(f"x{KEY[3:15]}y", [KEY]) == "x***y"
    url = "http://searx.internal.example:8888/private"
    assert redaction.redact(f"see {url}/search and searx.internal.example:8888", [url]) == "see ***/search and ***"


# --- 3. a key inside result fields never reaches an output -----------------------------------------------------


def test_a_key_echoed_inside_results_is_scrubbed_from_every_output(mocked):
    item = {
        "title": f"Echo {KEY}",
        "url": f"https://site.example/a?key={KEY}",
        "content": f"your key {KEY[:14]}…",
        "score": 0.5,
        "published_date": KEY,
    }
    mocked.add("POST", TAVILY_URL, json={"results": [item]})
    results, notes, _ = search("tavily", top_k=1)
    everything = json.dumps([results, notes], ensure_ascii=False)
    assert_no_piece_of_the_key(everything)
    assert results[0]["title"] == "Echo ***" and results[0]["url"] == "https://site.example/a?key=***"
    assert results[0]["content"] == "your key ***…"


def test_the_tool_outputs_carry_no_key(mocked):
    from tools.web_search import WebSearchTool  # imported here: dify_plugin patches threading on import

    item = {"title": f"Echo {KEY}", "url": "https://site.example/a", "content": f"key={KEY}", "score": 0.5}
    mocked.add("POST", TAVILY_URL, json={"results": [item]})
    tool = WebSearchTool.from_credentials({"tavily_api_key": KEY})
    messages = [m.model_dump(mode="json") for m in tool.invoke({"query": "patrol", "provider": "tavily", "top_k": 1})]
    shown = json.dumps(messages, ensure_ascii=False)
    assert len(messages) == 6 and "Echo ***" in shown
    assert_no_piece_of_the_key(shown)


# --- 6. a total deadline, also while the body trickles in ------------------------------------------------------


class Trickle(BaseHTTPRequestHandler):
    """Answers at once with a head, then one byte of the body every `pause` seconds; `/stall/search`: bytes for 1.5 s,
    then nothing for 10 s (one read then waits longer than the time left)."""

    pause = 0.2

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"results": [], "padding": "x" * 200}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for n, byte in enumerate(body):
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(10 if self.path.startswith("/stall") and n == 7 else self.pause)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def trickle():
    server = start_server(Trickle)
    yield f"{origin(server)}"
    stop_server(server)


def test_a_body_that_trickles_in_ends_at_the_deadline(trickle):
    started = time.monotonic()
    with pytest.raises(errors.SearchError) as caught:
        search("searxng", credentials={"searxng_base_url": trickle}, seconds=2)
    elapsed = time.monotonic() - started
    assert str(caught.value) == "SearXNG did not answer within 2 s (timeout_seconds)"
    assert 1.9 <= elapsed < 2.6, elapsed  # the body alone would take 50 s


def test_a_read_that_would_wait_past_the_deadline_waits_only_for_the_time_left(trickle):
    started = time.monotonic()
    with pytest.raises(errors.SearchError, match="did not answer within 2 s"):
        search("searxng", credentials={"searxng_base_url": trickle + "/stall"}, seconds=2)
    elapsed = time.monotonic() - started
    assert 1.9 <= elapsed < 2.4, elapsed  # the stalled read was given 0.5 s, not the 2 s of a fresh read timeout


def test_a_body_larger_than_the_limit_is_an_error(mocked, monkeypatch):
    monkeypatch.setattr(client, "MAX_BODY_BYTES", 1000)
    mocked.add("POST", TAVILY_URL, json={"results": [], "padding": "x" * 5000})
    with pytest.raises(errors.SearchError, match="^Tavily answered with a body over"):
        search("tavily")


# --- 12. an absurd date costs that field; a too-deep body is a SearchError -------------------------------------


def test_an_absurd_date_costs_only_that_field(mocked):
    items = [
        {
            "title": "Absurd",
            "url": "https://site.example/a",
            "content": "A.",
            "published_date": "Sun, 01 Jan 99999999999 00:00:00 GMT",
        },
        {
            "title": "Fine",
            "url": "https://site.example/b",
            "content": "B.",
            "published_date": "Tue, 12 Aug 2025 10:00:00 GMT",
        },
    ]
    mocked.add("POST", TAVILY_URL, json={"results": items})
    results, _, _ = search("tavily", top_k=2)
    assert [r["title"] for r in results] == ["Absurd", "Fine"]
    assert results[0]["published_date"] == "Sun, 01 Jan 99999999999 00:00:00 GMT"  # kept as text, not a date
    assert results[1]["published_date"] == "2025-08-12"


@pytest.mark.parametrize("status", [200, 500])
def test_a_body_nested_too_deep_is_a_search_error_naming_the_provider(mocked, status):
    deep = '{"results": ' + "[" * 50_000 + "]" * 50_000 + "}"  # deep, yet under MAX_JSON_VALUES
    mocked.add("POST", TAVILY_URL, status=status, body=deep, content_type="application/json")
    with pytest.raises(errors.SearchError) as caught:
        search("tavily")
    assert str(caught.value).startswith("Tavily ")
    if status == 200:
        assert str(caught.value) == "Tavily answered with JSON nested too deeply to read"
