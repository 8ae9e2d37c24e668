"""G-Cite web-search request body: the user's question as a JSON request body for the search API.

The Code node `nodes/web_search_request.py` is generated from this module (`make dsl`). Templating
`{{#sys.query#}}` into an HTTP Request node's JSON body lets a query with `"` or crafted JSON change the request;
this node builds the body with a JSON encoder instead, so the query is always one string value.

The body is Bocha's web-search API (`POST https://api.bochaai.com/v1/web-search`). `count` is the search's top_k:
keep the merge node's `max_web_results` equal to it.
"""

import json

from citations.dify_inputs import no_surrogate

SEARCH_COUNT = 5


def main(query=None, count=SEARCH_COUNT) -> dict:
    if query is None:
        query = ""
    if not isinstance(query, str):
        raise ValueError(f"query: expected text, got {type(query).__name__}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 50:
        raise ValueError(
            "count: expected a whole number from 1 to 50, got "
            f"{count if isinstance(count, (int, float)) and abs(count) < 1e9 else type(count).__name__}"
        )
    # A lone surrogate (possible in a JSON-decoded query) cannot be sent as UTF-8: it becomes U+FFFD.
    query = no_surrogate(query.strip())
    body = {"query": query, "count": count, "summary": True, "freshness": "noLimit"}
    return {"body": json.dumps(body, ensure_ascii=False)}
