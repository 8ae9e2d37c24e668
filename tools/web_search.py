from collections.abc import Generator
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.tool import ToolInvokeMessage

from tools.params import sendable
from websearch.http_client import Budget
from websearch.params import choose_provider, parse_freshness, parse_query, parse_timeout, parse_top_k
from websearch.search import run_search, summary


class WebSearchTool(Tool):
    """Thin adapter over the `websearch` library: bad input and provider failures raise (SearchInputError,
    SearchError), so the node fails and Dify's error handling can act (a refused key never looks like "no
    results", and no error text is ever yielded as a result)."""

    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage, None, None]:
        credentials = dict(self.runtime.credentials or {}) if self.runtime else {}
        query = parse_query(tool_parameters.get("query"))
        provider = choose_provider(tool_parameters.get("provider"), credentials)
        top_k = parse_top_k(tool_parameters.get("top_k"))
        freshness = parse_freshness(tool_parameters.get("freshness"))
        budget = Budget(parse_timeout(tool_parameters.get("timeout_seconds")))
        results, notes, _ = run_search(provider, query, top_k, freshness, credentials, budget)
        results, notes = sendable(results), sendable(notes)  # a provider's `\ud800` escape must not hang the reply
        yield self.create_variable_message("web_chunks", results)
        yield self.create_variable_message("provider", provider.name)
        yield self.create_variable_message("result_count", len(results))
        yield self.create_variable_message("notes", notes)
        yield self.create_json_message({"results": results, "provider": provider.name, "notes": notes})
        yield self.create_text_message(sendable(summary(provider, query, results, notes)))
