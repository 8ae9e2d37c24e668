from collections.abc import Generator
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.tool import ToolInvokeMessage

from tools import web_search_providers as web
from tools.params import sendable


class WebSearchTool(Tool):
    """Thin adapter: searches the configured provider; bad input and provider failures raise, so the node fails
    and Dify's error handling can act (a refused key never looks like "no results")."""

    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage, None, None]:
        credentials = dict(self.runtime.credentials or {}) if self.runtime else {}
        query = web.parse_query(tool_parameters.get("query"))
        provider = web.choose_provider(tool_parameters.get("provider"), credentials)
        top_k = web.parse_top_k(tool_parameters.get("top_k"))
        freshness = web.parse_freshness(tool_parameters.get("freshness"))
        budget = web.Budget(web.parse_timeout(tool_parameters.get("timeout_seconds")))
        results, notes, _ = web.run_search(provider, query, top_k, freshness, credentials, budget)
        results, notes = sendable(results), sendable(notes)  # a provider's `\ud800` escape must not hang the reply
        yield self.create_variable_message("web_chunks", results)
        yield self.create_variable_message("provider", provider.name)
        yield self.create_variable_message("result_count", len(results))
        yield self.create_variable_message("notes", notes)
        yield self.create_json_message({"results": results, "provider": provider.name, "notes": notes})
        yield self.create_text_message(sendable(web.summary(provider, query, results, notes)))
