"""Each provider's search requests: endpoint, auth header, parameters, paging and the errors it sends with HTTP 200.
A fetcher hands each page's raw results to the search's `Results` (which maps only those still wanted) and drops
the page before asking for the next one; paging stops once enough results are kept."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from websearch.client import ProviderClient
from websearch.errors import SearchError, clip, error_detail, refusal, refusal_message
from websearch.providers import BRAVE_MAX_PAGES, SEARXNG_MAX_PAGES, SERPAPI_PAGE, Provider
from websearch.results import Results


@dataclass
class Search:
    """One search: what to ask, of whom, with which client and key; the results kept; notes for the tool's output."""

    provider: Provider
    query: str
    freshness: str
    client: ProviderClient
    base: str
    key: str
    results: Results
    notes: list[str] = field(default_factory=list)

    def fail(self, what: str) -> SearchError:
        return self.client.error(f"{self.provider.label} {what}")

    def detail(self, body: Any) -> str:
        return error_detail(self.provider, body, secrets=self.client.secrets)

    def results_at(self, body: Any, path: tuple[str, ...], shape: str) -> list[Any]:
        node = body
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, list):
            raise self.fail(f"answered without a result list (expected {shape})")
        return node


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Accept": "application/json"}


def fetch_bocha(s: Search, wanted: int) -> None:
    body = s.client.call(
        "POST",
        s.base + "/v1/web-search",
        headers=bearer(s.key),
        json={"query": s.query, "count": wanted, "freshness": s.provider.freshness[s.freshness], "summary": True},
    )
    check_code_body(s, body)
    if isinstance(body, dict) and isinstance(body.get("data"), dict) and body["data"].get("webPages") is None:
        return  # Bocha sends `webPages: null` when nothing matched
    s.results.add(s.results_at(body, ("data", "webPages", "value"), "data.webPages.value"))


def fetch_tavily(s: Search, wanted: int) -> None:
    payload: dict[str, Any] = {"query": s.query, "max_results": wanted, "search_depth": "basic", "topic": "general"}
    if s.provider.freshness[s.freshness]:
        payload["time_range"] = s.provider.freshness[s.freshness]
    body = s.client.call("POST", s.base + "/search", headers=bearer(s.key), json=payload)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        raise s.fail(f"returned an error with HTTP 200: {s.detail(body)}")
    if isinstance(body, dict) and isinstance(body.get("detail"), dict):
        raise s.fail(f"returned an error with HTTP 200: {s.detail(body)}")
    s.results.add(s.results_at(body, ("results",), "results"))


def fetch_baidu(s: Search, wanted: int) -> None:
    payload: dict[str, Any] = {
        "messages": [{"role": "user", "content": s.query}],
        "search_source": "baidu_search_v2",
        "resource_type_filter": [{"type": "web", "top_k": wanted}],
    }
    if s.provider.freshness[s.freshness]:
        payload["search_recency_filter"] = s.provider.freshness[s.freshness]
    # Qianfan's reference names `Authorization`; its AppBuilder examples use `X-Appbuilder-Authorization`: send both.
    headers = {**bearer(s.key), "X-Appbuilder-Authorization": f"Bearer {s.key}"}
    body = s.client.call("POST", s.base + "/v2/ai_search/web_search", headers=headers, json=payload)
    check_code_body(s, body)
    s.results.add(
        [
            r
            for r in s.results_at(body, ("references",), "references")
            if not isinstance(r, dict) or r.get("type") in (None, "web")
        ]
    )


def fetch_serpapi(s: Search, wanted: int) -> None:
    for start in range(0, wanted, SERPAPI_PAGE):
        params = {
            "engine": "google",
            "q": s.query,
            "api_key": s.key,
            "start": start,
            "num": SERPAPI_PAGE,
            "output": "json",
        }
        if s.provider.freshness[s.freshness]:
            params["tbs"] = s.provider.freshness[s.freshness]
        body = s.client.call("GET", s.base + "/search.json", params=params)
        if not isinstance(body, dict):
            raise s.fail("answered without a result list (expected organic_results)")
        if body.get("error"):
            metadata = body.get("search_metadata") if isinstance(body.get("search_metadata"), dict) else {}
            if "hasn't returned any results" in str(body["error"]) and metadata.get("status") in (None, "Success"):
                break  # Google found nothing (more): an answer, not a failure
            raise s.fail(f"returned an error with HTTP 200: {s.detail(body)}")
        if "organic_results" not in body and "search_metadata" not in body:
            raise s.fail("answered without a result list (expected organic_results)")
        page = s.results_at(body, ("organic_results",), "organic_results") if "organic_results" in body else []
        s.results.add(page)
        pagination = body.get("serpapi_pagination") or body.get("pagination") or {}
        last = len(page) < SERPAPI_PAGE or not isinstance(pagination, dict) or "next" not in pagination
        del body, page, pagination  # the page is not kept while the next one is read
        if last or s.results.full:
            break


def fetch_brave(s: Search, wanted: int) -> None:
    count = min(wanted, s.provider.max_per_request)
    for offset in range(0, BRAVE_MAX_PAGES):
        params: dict[str, Any] = {"q": s.query, "count": count, "offset": offset}
        if s.provider.freshness[s.freshness]:
            params["freshness"] = s.provider.freshness[s.freshness]
        body = s.client.call(
            "GET",
            s.base + "/res/v1/web/search",
            params=params,
            headers={"X-Subscription-Token": s.key, "Accept": "application/json"},
        )
        if isinstance(body, dict) and body.get("type") == "ErrorResponse":
            raise s.fail(f"returned an error with HTTP 200: {s.detail(body)}")
        if not isinstance(body, dict) or ("web" not in body and body.get("type") != "search"):
            raise s.fail("answered without a result list (expected web.results)")
        page = s.results_at(body, ("web", "results"), "web.results") if "web" in body else []  # no `web`: no hits
        s.results.add(page)
        query = body.get("query") if isinstance(body.get("query"), dict) else {}
        last = not page or not query.get("more_results_available")
        del body, page, query  # the page is not kept while the next one is read
        if last or s.results.full:
            break


def fetch_searxng(s: Search, wanted: int) -> None:
    for pageno in range(1, SEARXNG_MAX_PAGES + 1):
        params: dict[str, Any] = {"q": s.query, "format": "json", "pageno": pageno}
        if s.provider.freshness[s.freshness]:
            params["time_range"] = s.provider.freshness[s.freshness]
        body = s.client.call("GET", s.base + "/search", params=params, headers={"Accept": "application/json"})
        page = s.results_at(body, ("results",), "results")
        if not page and pageno == 1:
            failed = body.get("unresponsive_engines") if isinstance(body, dict) else None
            if failed:
                names = ", ".join(
                    clip(" ".join(map(str, e)) if isinstance(e, list) else e, s.client.secrets) for e in failed[:5]
                )
                raise s.fail(f"found nothing because its engines failed: {names}")
        kept = s.results.add(page)
        del body, page  # the page is not kept while the next one is read
        if not kept or s.results.full:
            break


def check_code_body(s: Search, body: Any) -> None:
    """Bocha and Baidu put `code`/`message` in the body; a non-success code is an error even with HTTP 200."""
    if not isinstance(body, dict):
        return
    code = body.get("code")
    if code in (None, "", 0, 200, "0", "200"):
        return
    detail = s.detail(body)
    kind = refusal(s.provider, code, detail)
    if kind:
        raise s.client.error(refusal_message(s.provider, kind, "HTTP 200 with an error body", detail))
    raise s.fail(f"returned an error with HTTP 200: {detail}")


FETCHERS: dict[str, Callable[[Search, int], None]] = {
    "bocha": fetch_bocha,
    "tavily": fetch_tavily,
    "baidu": fetch_baidu,
    "serpapi": fetch_serpapi,
    "brave": fetch_brave,
    "searxng": fetch_searxng,
}
