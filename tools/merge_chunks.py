from collections.abc import Generator
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.tool import ToolInvokeMessage

from citations import merge as merge_chunks
from tools.params import given, sendable


class MergeChunksTool(Tool):
    """Thin adapter: the node does the work; bad input raises with the parameter's name."""

    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage, None, None]:
        outputs = merge_chunks.main(
            rag_chunks=tool_parameters.get("rag_chunks"),
            web_chunks=tool_parameters.get("web_chunks"),
            max_web_results=given(tool_parameters, "max_web_results", merge_chunks.DEFAULT_MAX_WEB_RESULTS),
            max_chunks=given(tool_parameters, "max_chunks", merge_chunks.DEFAULT_MAX_CHUNKS),
            web_text=tool_parameters.get("web_text"),
            show_storage_urls=given(tool_parameters, "show_storage_urls", False),
        )
        for name, value in outputs.items():
            yield self.create_variable_message(name, sendable(value))
