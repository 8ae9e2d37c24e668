"""The local search provider (gcite/local/search_server.py) and the web_search tool run through the SDK against it."""

import datetime
import json
from typing import Any
from unittest.mock import MagicMock

import pytest
import requests

from citations import merge as merge_chunks
from gcite.local.search_server import API_KEY, SearchServer
from tests.support import sdk
from websearch.search import check_all

QUESTION = "巡更时发现异常怎么上报？"


@pytest.fixture(scope="module")
def reg():
    """Loaded first: importing dify_plugin turns threads into gevent greenlets, and a server must start and stop
    on the same side of that switch."""
    return sdk.registration()


@pytest.fixture(scope="module")
def server(reg):
    with SearchServer() as running:
        yield running


def post(url, body, key=API_KEY):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return requests.post(url, json=body, headers=headers, timeout=10)


def test_bocha_endpoint_answers_in_bochas_shape_ranked_by_the_query(server):
    answer = post(server.base_url + "/v1/web-search", {"query": QUESTION, "count": 3, "summary": True})
    assert answer.status_code == 200
    body = answer.json()
    assert body["code"] == 200 and body["data"]["_type"] == "SearchResponse"
    pages = body["data"]["webPages"]["value"]
    assert len(pages) == 3
    assert set(pages[0]) >= {
        "id",
        "name",
        "url",
        "displayUrl",
        "snippet",
        "summary",
        "siteName",
        "siteIcon",
        "datePublished",
        "dateLastCrawled",
    }
    assert "巡" in pages[0]["name"] and "异常" in pages[0]["summary"]


def test_results_depend_on_the_question(server):
    def titles(query):
        body = post(server.base_url + "/search", {"query": query, "max_results": 5}).json()
        return [r["title"] for r in body["results"]]

    patrol, meeting, chiller = (
        titles(QUESTION),
        titles("会议室预约超时未签到怎么办"),
        titles("chilled water supply temperature"),
    )
    assert patrol and meeting and chiller
    assert patrol[0] != meeting[0] != chiller[0] != patrol[0]
    assert "会议室" in meeting[0] and "Chilled water" in chiller[0]
    assert titles("quantum chromodynamics lattice") == []


def test_tavily_endpoint_answers_in_tavilys_shape_with_scores_descending(server):
    body = post(server.base_url + "/search", {"query": "how do I report a blocked fire exit", "max_results": 4}).json()
    assert set(body) >= {"query", "answer", "images", "results", "response_time"}
    scores = [r["score"] for r in body["results"]]
    assert scores and scores == sorted(scores, reverse=True)
    assert set(body["results"][0]) == {"url", "title", "content", "score", "raw_content"}


def test_freshness_filters_by_publication_date(server):
    with SearchServer(today=datetime.date(2025, 8, 14)) as local:

        def urls(freshness):
            body = post(local.base_url + "/v1/web-search", {"query": QUESTION, "count": 10, "freshness": freshness})
            return [p["url"] for p in body.json()["data"]["webPages"]["value"]]

        assert urls("oneWeek") == ["https://www.zhihu.com/question/123/answer/456"]  # published 2025-08-12
        assert len(urls("noLimit")) > 1


def test_a_wrong_or_missing_key_gets_each_providers_real_refusal(server):
    wrong = post(server.base_url + "/v1/web-search", {"query": "x"}, key="sk-wrong")
    assert (wrong.status_code, wrong.json()["code"], wrong.json()["message"]) == (401, "401", "Invalid API KEY")
    missing = post(server.base_url + "/v1/web-search", {"query": "x"}, key=None)
    assert (missing.status_code, missing.json()["message"]) == (400, "The API KEY is missing")
    tavily = post(server.base_url + "/search", {"query": "x"}, key="tvly-wrong")
    assert (tavily.status_code, tavily.json()) == (
        401,
        {"detail": {"error": "Unauthorized: missing or invalid API key."}},
    )


def test_fail_mode_refuses_even_the_right_key_and_requests_are_recorded_without_it(server):
    with SearchServer(fail=True) as failing:
        assert post(failing.base_url + "/v1/web-search", {"query": "x"}).status_code == 401
        assert post(failing.base_url + "/search", {"query": "x"}).status_code == 401
        assert [r["path"] for r in failing.requests] == ["/v1/web-search", "/search"]
        assert API_KEY not in json.dumps(failing.requests)


def test_stopped_server_frees_its_port(server):
    local = SearchServer().start()
    url = local.base_url
    local.stop()
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(url + "/usage", timeout=2)
    with pytest.raises(RuntimeError):
        _ = local.base_url


def test_credentials_point_the_tool_at_the_server(server):
    assert server.credentials() == {
        "bocha_api_key": API_KEY,
        "bocha_base_url": server.base_url,
        "tavily_api_key": API_KEY,
        "tavily_base_url": server.base_url,
    }
    assert check_all(server.credentials()) == {}
    with pytest.raises(ValueError, match="providers: the local server answers bocha and tavily, not 'brave'"):
        server.credentials(("brave",))


# --- the tool through the SDK ---------------------------------------------------------------------------


def invoke(reg: Any, parameters: dict[str, Any], credentials: dict[str, str]) -> dict[str, Any]:
    """The daemon's invoke_tool request through the SDK's executor; every message the tool yields, by type."""
    from dify_plugin import DifyPluginEnv
    from dify_plugin.core.entities.plugin.request import ToolInvokeRequest
    from dify_plugin.core.plugin_executor import PluginExecutor
    from dify_plugin.core.runtime import Session
    from dify_plugin.entities.tool import ToolInvokeMessage

    request = ToolInvokeRequest.model_validate(
        {
            "type": "tool",
            "action": "invoke_tool",
            "user_id": "user-1",
            "provider": sdk.PROVIDER,
            "tool": "web_search",
            "credentials": credentials,
            "credential_type": "api-key",
            "tool_parameters": parameters,
        }
    )
    session = MagicMock(spec=Session)
    session.session_id = "session-1"
    out: dict[str, Any] = {"variables": {}, "json": [], "text": ""}
    for message in PluginExecutor(DifyPluginEnv(), reg).invoke_tool(session, request):
        if message.type == ToolInvokeMessage.MessageType.VARIABLE:
            out["variables"][message.message.variable_name] = message.message.variable_value
        elif message.type == ToolInvokeMessage.MessageType.JSON:
            out["json"].append(message.message.json_object)
        elif message.type == ToolInvokeMessage.MessageType.TEXT:
            out["text"] += message.message.text
    return out


def test_the_tool_through_the_sdk_searches_the_local_server(reg, server):
    before = len(server.requests)
    out = invoke(reg, {"query": QUESTION, "top_k": 3, "provider": "auto"}, server.credentials())
    chunks = out["variables"]["web_chunks"]
    assert [r["provider"] for r in chunks] == ["bocha"] * 3
    assert out["variables"]["provider"] == "bocha" and out["variables"]["result_count"] == 3
    assert out["variables"]["notes"] == []
    assert out["json"] == [{"results": chunks, "provider": "bocha", "notes": []}]
    assert out["text"].startswith(f"Bocha: 3 results for “{QUESTION}”.")
    assert server.requests[before:] == [
        {
            "method": "POST",
            "path": "/v1/web-search",
            "body": {"query": QUESTION, "count": 3, "freshness": "noLimit", "summary": True},
        }
    ]
    merged = merge_chunks.main(rag_chunks=[], web_chunks=out["json"], max_web_results=3)
    assert [c["document_title"] for c in merged["chunk_metadata"]] == [r["title"] for r in chunks]

    tavily = invoke(
        reg,
        {
            "query": "chilled water supply temperature",
            "provider": "tavily",
            "top_k": 25,
            "freshness": "any",
            "timeout_seconds": 10,
        },
        server.credentials(),
    )
    assert tavily["variables"]["notes"][0] == "Tavily returns at most 20 results per search; top_k 25 was capped at 20"
    assert tavily["variables"]["web_chunks"][0]["title"].startswith("Chilled water supply temperature")


@pytest.mark.parametrize(
    "parameters, credentials, message",
    [
        (
            {"query": QUESTION},
            "failing",
            "Bocha refused the API key (HTTP 401: Invalid API KEY); check the Bocha API key "
            "in the G-Cite plugin's credentials",
        ),
        (
            {"query": QUESTION, "provider": "tavily"},
            "failing",
            "Tavily refused the API key (HTTP 401: Unauthorized: missing or invalid API key.); "
            "check the Tavily API key in the G-Cite plugin's credentials",
        ),
        ({"query": QUESTION}, "none", "provider: no search provider is configured"),
        ({"query": QUESTION, "top_k": 0}, "good", "top_k: expected a whole number from 1 to 50, got 0"),
        ({"query": ""}, "good", "query: expected the text to search for, got nothing"),
    ],
)
def test_the_tool_raises_with_a_message_an_operator_can_act_on(reg, server, parameters, credentials, message):
    with SearchServer(fail=True) as failing:
        creds = {"failing": failing.credentials(), "good": server.credentials(), "none": {}}[credentials]
        with pytest.raises(Exception) as caught:
            invoke(reg, parameters, creds)
    assert str(caught.value).startswith(message)
    assert API_KEY not in str(caught.value) and "127.0.0.1" not in str(caught.value)


def test_the_provider_validates_credentials_and_names_every_failure(reg, server):
    from dify_plugin.errors.tool import ToolProviderCredentialValidationError

    provider = reg.get_tool_provider_cls(sdk.PROVIDER)()
    provider.validate_credentials({})  # nothing configured: the other tools need no credentials
    provider.validate_credentials(server.credentials())
    with SearchServer(fail=True) as failing:
        with pytest.raises(ToolProviderCredentialValidationError) as caught:
            provider.validate_credentials(failing.credentials())
    message = str(caught.value)
    assert message.startswith("web search credentials failed: Bocha: Bocha refused the API key (HTTP 401")
    assert "; Tavily: Tavily refused the API key (HTTP 401" in message
    assert API_KEY not in message and "127.0.0.1" not in message


def test_the_plugin_process_over_stdio_searches_the_local_server(server):
    """As the daemon (and the local runner) run it: `python -m main`, credentials in the invoke_tool request."""
    import sys

    from gcite.local.plugin_process import PluginProcess
    from tests.support import ROOT

    with (
        PluginProcess(ROOT, sys.executable) as plugin,
        SearchServer(fail=True) as failing,
        SearchServer(delay=3) as slow,
    ):

        def call(credentials, query, **parameters):
            session_id = plugin.send(
                {
                    "type": "tool",
                    "action": "invoke_tool",
                    "user_id": "user-1",
                    "provider": "gcite",
                    "tool": "web_search",
                    "credentials": credentials,
                    "credential_type": "api-key",
                    "tool_parameters": {"query": query, "top_k": 2, **parameters},
                }
            )
            return plugin.wait([session_id], timeout=60)[0]

        ok = call(server.credentials(), "会议室预约超时未签到怎么办")
        chunks = ok.variables["web_chunks"]
        assert ok.error is None and [c["provider"] for c in chunks] == ["bocha"]
        assert "会议室" in chunks[0]["title"]
        refused = call(failing.credentials(), QUESTION)
        assert "Bocha refused the API key (HTTP 401: Invalid API KEY)" in refused.error["message"]
        assert API_KEY not in json.dumps(refused.error) and "127.0.0.1" not in json.dumps(refused.error)
        late = call(slow.credentials(), QUESTION, timeout_seconds=1)
        assert late.error["message"] == "Bocha did not answer within 1 s (timeout_seconds)"
        assert API_KEY not in json.dumps(late.error) and "127.0.0.1" not in json.dumps(late.error)
        assert API_KEY not in plugin.stderr
        assert plugin.alive


def test_a_lone_surrogate_from_the_provider_is_replaced_in_every_output(reg):
    import responses

    body = (
        '{"code": 200, "data": {"webPages": {"value": [{"name": "T\\ud800", "url": "https://a.example/", '
        '"snippet": "s\\udfff", "summary": "s\\udfff"}]}}}'
    )
    with responses.RequestsMock() as mocked:
        mocked.add("POST", "https://api.bochaai.com/v1/web-search", body=body, content_type="application/json")
        out = invoke(reg, {"query": "q", "provider": "bocha", "top_k": 1}, {"bocha_api_key": "k"})
    json.dumps(out, ensure_ascii=False).encode("utf-8")  # the daemon's UTF-8 stream can carry every output
    assert out["variables"]["web_chunks"][0]["title"] == "T\ufffd"
