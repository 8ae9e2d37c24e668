"""A search provider on 127.0.0.1 serving the largest pages the web search accepts (websearch/client.py's caps):
each page just under MAX_BODY_BYTES, holding as many JSON values as MAX_JSON_VALUES allows (`values`) or text whose
decoded form is 4 bytes a character (`text`). Every page holds 4 new results, so a search with top_k 50 reads all
10 pages (SearXNG's `pageno` 1-10, Brave's `offset` 0-9)."""

import json
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from websearch import client

SHAPES = ("values", "text")


def item(n, **fields):
    return {
        "url": f"https://site.example/{n}",
        "title": f"Result {n}",
        "content": f"Patrols run daily ({n}).",
        **fields,
    }


def largest_page(provider, n, shape):
    """Page `n` at the caps: 4 new results, then (`values`) as many duplicate results as MAX_JSON_VALUES allows or
    (`text`) one character outside the BMP, which makes the decoded text 4 bytes a character; padded to the size
    cap. Every page is accepted, and paging goes on for all 10 (only 4 new results each)."""
    new = [item(f"{n}-{k}") for k in range(4)]
    filler = [item("1-0")] * ((client.MAX_JSON_VALUES - 400) // 8) if shape == "values" else []
    pad = "\U0001f600" if shape == "text" else ""

    def encode(padding):
        if provider == "brave":
            body = {"type": "search", "query": {"more_results_available": True}, "web": {"results": new + filler}}
        else:
            body = {"query": "q", "results": new + filler}
        return json.dumps({**body, "pad": padding}, ensure_ascii=False).encode()

    data = encode(pad + "y" * (client.MAX_BODY_BYTES - len(encode(pad)) - 16))
    assert client.MAX_BODY_BYTES - 64 <= len(data) <= client.MAX_BODY_BYTES
    assert client.json_values(data) <= client.MAX_JSON_VALUES
    return data


class LargestPages(BaseHTTPRequestHandler):
    """SearXNG (`…/search?pageno=N`) and Brave (`…/res/v1/web/search?offset=N`) at the caps. The shape is the
    class's `shape`, or the first path segment when it names one (`/text/search`): one server serves both. A path
    under `/small` answers one small page (a warm-up). Pages are built once per server class (`pages`)."""

    shape = "values"
    pages: dict = {}

    def log_message(self, *args):
        pass

    def do_GET(self):
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        provider = "brave" if parts.path.endswith("/web/search") else "searxng"
        first = parts.path.strip("/").split("/")[0]
        shape = first if first in SHAPES else self.shape
        if parts.path.startswith("/small"):
            data = json.dumps({"results": [item(0)], "type": "search", "web": {"results": [item(0)]}}).encode()
        else:
            n = int(query["offset"][0]) + 1 if provider == "brave" else int(query["pageno"][0])
            key = (provider, n, shape)
            if key not in self.pages:
                self.pages[key] = largest_page(provider, n, shape)
            data = self.pages[key]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
