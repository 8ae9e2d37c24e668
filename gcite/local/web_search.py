"""Web search for the runner's HTTP Request node and the official Tavily plugin, answered locally.

Nothing leaves the machine. Both answer from the local provider server's corpus and ranking
(`gcite.local.search_server`, the one place where the built-in web corpus is ranked by the query), so what a run shows
depends on the question, as with the plugin's own `web_search` tool pointed at that server:
- the HTTP Request node gets `SampleSearchHttpClient` (graphon's `HttpClientProtocol`), which answers Bocha's
  `POST /v1/web-search` through `SearchServer.answer` without opening a socket (any Bearer key is accepted;
  `fail=True` refuses it with Bocha's 401, as `--web-search-fails` makes the server do);
- the official Tavily plugin is answered by `tavily_messages` in the shape the plugin yields.
Each records what it was asked, and can be told to fail, to test the fallback.
"""

import datetime
import functools
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from gcite.local.engine import HttpResponse
from gcite.local.knowledge import load_json
from gcite.local.search_server import SearchServer, ranked, tavily_body

BOCHA_HOST, BOCHA_PATH = "api.bochaai.com", "/v1/web-search"
REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}


class SearchUnavailable(Exception):
    """The sample search was told to fail, or was asked for a host it does not serve."""


@functools.cache
def _corpus() -> tuple[dict[str, Any], ...]:
    return tuple(load_json("web_corpus.json"))


def tavily_response(query: str, count: int) -> dict[str, Any]:
    """Tavily's `/search` response for the query over the built-in corpus (the local server's ranking)."""
    return tavily_body(query, ranked(list(_corpus()), query, count, None, datetime.date.today()))


@dataclass
class SampleSearchHttpClient:
    """graphon `HttpClientProtocol` that serves Bocha's API from the local corpus; `fail` refuses the key (401)."""

    fail: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def max_retries_exceeded_error(self) -> type[Exception]:
        return SearchUnavailable

    @property
    def request_error(self) -> type[Exception]:
        return SearchUnavailable

    def post(self, url: str, max_retries: int = 0, **kwargs: Any) -> HttpResponse:
        return self._answer("POST", url, kwargs)

    def get(self, url: str, max_retries: int = 0, **kwargs: Any) -> HttpResponse:
        return self._answer("GET", url, kwargs)

    head = put = delete = patch = get

    def _answer(self, method: str, url: str, kwargs: dict[str, Any]) -> HttpResponse:
        body = kwargs.get("content") or kwargs.get("data") or kwargs.get("json")
        if isinstance(body, bytes):
            body = body.decode("utf-8")
        if isinstance(body, (dict, list)):
            body = json.dumps(body, ensure_ascii=False)  # what the client would put on the wire
        headers = dict(kwargs.get("headers") or {})
        self.requests.append({"method": method, "url": url, "headers": headers, "body": body})
        parts = urlsplit(url)
        if (parts.hostname, parts.path) != (BOCHA_HOST, BOCHA_PATH):
            raise SearchUnavailable(
                f"the local runner has no network; it only answers {BOCHA_HOST}{BOCHA_PATH}, not {url}"
            )
        server = SearchServer(fail=self.fail, api_key=None, corpus=list(_corpus()))
        status, payload = server.answer(
            method, BOCHA_PATH, {k.lower(): str(v) for k, v in headers.items()}, (body or "").encode("utf-8")
        )
        return HttpResponse(
            status_code=status,
            content=json.dumps(payload, ensure_ascii=False).encode("utf-8"),
            url=url,
            headers={"Content-Type": "application/json"},
            reason_phrase=REASONS.get(status, "Error"),
        )


TAVILY_SEARCH_URL = "https://api.tavily.com/search"
# What the official plugin's `tavily-python` client raises on an HTTP 500 (`requests`' raise_for_status).
TAVILY_OUTAGE = f"500 Server Error: Internal Server Error for url: {TAVILY_SEARCH_URL}"


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "message": {"text": text}, "meta": None}


def tavily_messages(
    parameters: dict[str, Any], fail: bool = False, api_key: Any = "configured"
) -> list[dict[str, Any]]:
    """What the official Tavily plugin's `tavily_search` tool yields (langgenius/dify-official-plugins,
    tools/tavily/tools/tavily_search.py). Every failure is a text message, never a tool error, so the tool node
    succeeds with only `text` and graphon's default `json` output `[{"data": []}]`. A search with results yields
    the raw response as a JSON message, then the results formatted as text."""
    if not api_key:
        return [_text("Tavily API key is missing. Please set it in the credentials.")]
    query = parameters.get("query", "")
    if not query:
        return [_text("Please input a query.")]
    if fail:
        return [_text(f"Error occurred while searching: {TAVILY_OUTAGE}")]
    response = tavily_response(str(query), int(parameters.get("max_results") or 5))
    if not response.get("results"):
        return [_text(f"No results found for '{query}' in Tavily.")]
    return [
        {"type": "json", "message": {"json_object": response}, "meta": None},
        _text(tavily_results_text(response, parameters)),
    ]


def _enabled(value: Any) -> bool:
    return bool(value) and value not in (False, "false")


def tavily_results_text(response: dict[str, Any], parameters: dict[str, Any]) -> str:
    """The plugin's `_format_results_as_text`: the answer (when asked for), then each result as markdown."""
    lines = []
    if _enabled(parameters.get("include_answer", False)) and response.get("answer"):
        lines.append(f"**Answer:** {response['answer']}\n")
    for n, result in enumerate(response.get("results") or [], start=1):
        url = result.get("url", "")
        lines.append(f"# Result {n}: [{result.get('title', 'No Title')}]({url})\n")
        if parameters.get("topic") == "news" and result.get("published_date"):
            lines.append(f"**Published Date:** {result['published_date']}\n")
        lines.append(f"**URL:** {url}\n")
        if result.get("score", ""):
            lines.append(f"**Relevance Score:** {result['score']}\n")
        if result.get("content", ""):
            lines.append(f"**Content:**\n{result['content']}\n")
        if _enabled(parameters.get("include_raw_content", False)) and result.get("raw_content"):
            lines.append(f"**Raw Content:**\n{result['raw_content']}\n")
        lines.append("---\n")
    if parameters.get("include_images", False) and response.get("images"):
        lines.append("**Images:**\n")
        for image in response["images"]:
            url = image.get("url") if isinstance(image, dict) else image
            description = (
                image.get("description", "Tavily search result image")
                if isinstance(image, dict)
                else "Tavily search result image"
            )
            if url:
                lines.append(f"![{description}]({url})\n")
        lines.append("\n")
    return "\n".join(lines)
