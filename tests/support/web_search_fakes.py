"""The providers as `responses` callbacks that page like the real APIs over a pool of N results, and the
helpers the web_search tests share (tests/plugin/test_web_search.py, test_web_search_errors.py)."""

import json
import re
from urllib.parse import parse_qs, urlsplit

from websearch import http_client, providers
from websearch.search import run_search

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


def sent(call):
    """What a mocked call sent: its query string and JSON body as one dict."""
    query = {k: v[0] for k, v in parse_qs(urlsplit(call.request.url).query).items()}
    return {**query, **(json.loads(call.request.body) if call.request.body else {})}
