"""A local search provider on 127.0.0.1: Bocha's and Tavily's real APIs over a small built-in web corpus.

The plugin's `web_search` tool talks to it exactly as to the real services (same paths, auth headers, request
bodies and response shapes), pointed here by the base-URL override credentials:

    with SearchServer() as server:
        credentials = server.credentials()    # {"bocha_api_key": …, "bocha_base_url": server.base_url, "tavily_…": …}

Results are ranked by the query over `gcite/local/samples/web_corpus.json`, so what a demo shows depends on the
question. `fail=True` refuses every key with HTTP 401 in each provider's own error shape (to show the fallback when a
search key is wrong); `delay=seconds` answers that late (to show a timeout). Every request is recorded in
`.requests` (method, path, body; never the key).
"""

from __future__ import annotations

import datetime
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gcite.local.knowledge import load_json

API_KEY = "gcite-local-search-key"
MIN_RELEVANCE = 0.2  # share of the query's character bigrams a page must contain to be a hit
FRESHNESS_DAYS = {
    "oneDay": 1,
    "oneWeek": 7,
    "oneMonth": 31,
    "oneYear": 366,
    "noLimit": None,
    "day": 1,
    "week": 7,
    "month": 31,
    "year": 366,
    "d": 1,
    "w": 7,
    "m": 31,
    "y": 366,
}


STOPWORDS = frozenset(
    "a an and are at be by do does for from how i in is it of on or the to we what when where "
    "which who why with you your".split()
)


def terms(text: str) -> set[str]:
    """Lower-case Latin words and digits, plus character bigrams of every run of CJK text."""
    out, word, cjk = set(), [], []
    for ch in text.lower() + " ":
        if "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf":
            cjk.append(ch)
        else:
            out.update(a + b for a, b in zip(cjk, cjk[1:]))
            if len(cjk) == 1:
                out.add(cjk[0])
            cjk = []
        if ch.isascii() and ch.isalnum():
            word.append(ch)
        else:
            if word and "".join(word) not in STOPWORDS:
                out.add("".join(word))
            word = []
    return out


def relevance(query: str, text: str) -> float:
    """Share of the query's terms found in the text, rounded: a small, deterministic stand-in for a search rank."""
    wanted = terms(query)
    return round(len(wanted & terms(text)) / len(wanted), 4) if wanted else 0.0


def ranked(
    corpus: list[dict[str, Any]], query: str, count: int, max_age_days: int | None, today: datetime.date
) -> list[tuple[float, dict[str, Any]]]:
    """(score, page) for the pages that match the query, best first (ties in corpus order)."""
    hits = []
    for page in corpus:
        if max_age_days is not None:
            published = datetime.date.fromisoformat(page["date"][:10])
            if (today - published).days > max_age_days:
                continue
        score = relevance(query, page["title"] + " " + page["content"])
        if score >= MIN_RELEVANCE:
            hits.append((score, page))
    hits.sort(key=lambda hit: -hit[0])
    return hits[: max(0, count)]


def bocha_body(query: str, hits: list[tuple[float, dict[str, Any]]]) -> dict[str, Any]:
    value = []
    for n, (_, page) in enumerate(hits):
        published = page["date"] if "T" in page["date"] else page["date"] + "T00:00:00+08:00"
        value.append(
            {
                "id": f"https://api.bochaai.com/v1/#WebPages.{n}",
                "name": page["title"],
                "url": page["url"],
                "displayUrl": page["url"],
                "snippet": page["content"][:80],
                "summary": page["content"],
                "siteName": page["site_name"],
                "siteIcon": "https://th.bochaai.com/favicon?domain_url=" + page["url"],
                "datePublished": published,
                "dateLastCrawled": published[:19] + "Z",
                "cachedPageUrl": None,
                "language": None,
                "isFamilyFriendly": None,
                "isNavigational": None,
            }
        )
    return {
        "code": 200,
        "log_id": uuid.uuid4().hex[:16],
        "msg": None,
        "data": {
            "_type": "SearchResponse",
            "queryContext": {"originalQuery": query},
            "webPages": {
                "webSearchUrl": "",
                "totalEstimatedMatches": len(value),
                "value": value,
                "someResultsRemoved": False,
            },
            "images": None,
            "videos": None,
        },
    }


def tavily_body(query: str, hits: list[tuple[float, dict[str, Any]]]) -> dict[str, Any]:
    return {
        "query": query,
        "follow_up_questions": None,
        "answer": None,
        "images": [],
        "results": [
            {
                "url": page["url"],
                "title": page["title"],
                "content": page["content"],
                "score": score,
                "raw_content": None,
            }
            for score, page in hits
        ],
        "response_time": 0.01,
        "request_id": str(uuid.uuid4()),
    }


class SearchServer:
    """`api_key=None` accepts any key (the in-process stand-in for a DSL's own Bocha key); `answer()` also works
    without `start()`, which is how `gcite.local.web_search.SampleSearchHttpClient` answers the HTTP Request node."""

    def __init__(
        self,
        fail: bool = False,
        api_key: str | None = API_KEY,
        today: datetime.date | None = None,
        corpus: list[dict[str, Any]] | None = None,
        delay: float = 0.0,
    ):
        self.fail, self.api_key, self.delay = fail, api_key, delay
        self.today = today or datetime.date.today()
        self.corpus = corpus if corpus is not None else load_json("web_corpus.json")
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> SearchServer:
        if self._httpd is None:
            self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
            # every answer closes its connection and stop() joins the handler threads, so no thread of this
            # server outlives stop(): importing dify_plugin (gevent's monkey-patching) while one is alive breaks
            # the import ("cannot release un-acquired lock")
            self._httpd.daemon_threads = False
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="gcite-search-server",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd = self._thread = None

    def __enter__(self) -> SearchServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the search server is not running; call start() first")
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def credentials(self, providers: tuple[str, ...] = ("bocha", "tavily")) -> dict[str, str]:
        """The G-Cite plugin credentials that point the web_search tool here (`auto` picks Bocha first)."""
        if self.api_key is None:
            raise RuntimeError("credentials: this server accepts any key; give it an api_key")
        out = {}
        for name in providers:
            if name not in ("bocha", "tavily"):
                raise ValueError(f"providers: the local server answers bocha and tavily, not {name!r}")
            out[f"{name}_api_key"] = self.api_key
            out[f"{name}_base_url"] = self.base_url
        return out

    # answering

    def answer(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        try:
            request = json.loads(body) if body else {}
        except ValueError:
            request = None
        with self._lock:
            self.requests.append({"method": method, "path": path, "body": request})
        if self.delay:
            time.sleep(self.delay)  # a slow provider, to show timeouts
        route = {
            ("POST", "/v1/web-search"): self._bocha_search,
            ("GET", "/v1/fund/remaining"): self._bocha_fund,
            ("POST", "/search"): self._tavily_search,
            ("GET", "/usage"): self._tavily_usage,
        }.get((method, path))
        if route is None:
            return 404, {"error": f"no route {method} {path}"}
        return route(headers, request)

    def _key(self, headers: dict[str, str]) -> str | None:
        value = headers.get("authorization", "")
        return value[7:].strip() if value.lower().startswith("bearer ") else None

    def _accepted(self, key: str | None) -> bool:
        return bool(key) and (self.api_key is None or key == self.api_key)

    def _bocha_refusal(self, headers: dict[str, str]) -> tuple[int, dict[str, Any]] | None:
        key = self._key(headers)
        if key is None:
            return 400, {"code": "400", "message": "The API KEY is missing", "log_id": uuid.uuid4().hex[:16]}
        if self.fail or not self._accepted(key):
            return 401, {"code": "401", "message": "Invalid API KEY", "log_id": uuid.uuid4().hex[:16]}
        return None

    def _tavily_refusal(self, headers: dict[str, str]) -> tuple[int, dict[str, Any]] | None:
        if self.fail or not self._accepted(self._key(headers)):
            return 401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}
        return None

    def _bocha_search(self, headers: dict[str, str], request: Any) -> tuple[int, dict[str, Any]]:
        refused = self._bocha_refusal(headers)
        if refused:
            return refused
        if not isinstance(request, dict) or not str(request.get("query") or "").strip():
            return 400, {"code": "400", "message": "Missing parameter query", "log_id": uuid.uuid4().hex[:16]}
        count = request.get("count", 10)
        if not isinstance(count, int) or not 1 <= count <= 50:
            return 400, {"code": "400", "message": "count must be between 1 and 50", "log_id": uuid.uuid4().hex[:16]}
        days = FRESHNESS_DAYS.get(str(request.get("freshness") or "noLimit"))
        hits = ranked(self.corpus, request["query"], count, days, self.today)
        return 200, bocha_body(request["query"], hits)

    def _bocha_fund(self, headers: dict[str, str], request: Any) -> tuple[int, dict[str, Any]]:
        return self._bocha_refusal(headers) or (
            200,
            {"success": True, "code": "200", "msg": None, "data": {"remaining": 100.0}},
        )

    def _tavily_search(self, headers: dict[str, str], request: Any) -> tuple[int, dict[str, Any]]:
        refused = self._tavily_refusal(headers)
        if refused:
            return refused
        if not isinstance(request, dict) or not str(request.get("query") or "").strip():
            return 400, {"detail": {"error": "Query is missing."}}
        count = request.get("max_results", 5)
        if not isinstance(count, int) or not 0 <= count <= 20:
            return 400, {"detail": {"error": "max_results must be between 0 and 20."}}
        days = FRESHNESS_DAYS.get(str(request.get("time_range") or "noLimit"))
        return 200, tavily_body(request["query"], ranked(self.corpus, request["query"], count, days, self.today))

    def _tavily_usage(self, headers: dict[str, str], request: Any) -> tuple[int, dict[str, Any]]:
        with self._lock:
            used = sum(1 for r in self.requests if r["path"] == "/search")
        return self._tavily_refusal(headers) or (
            200,
            {
                "key": {"usage": used, "limit": None},
                "account": {"current_plan": "Researcher", "plan_usage": used, "plan_limit": 1000},
            },
        )


def _handler(server: SearchServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 10  # a client that connects and sends nothing does not hold stop() for long

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, payload = server.answer(method, self.path.split("?", 1)[0], headers, body)
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.close_connection = True
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def log_message(self, format: str, *args: Any) -> None:  # keep test and demo output clean
            return

    return Handler
