from collections.abc import Generator
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.tool import ToolInvokeMessage

from citations import filter as filter_chunks
from tools.params import given, sendable


class FilterChunksTool(Tool):
    """Thin adapter: the node does the work; bad input raises with the parameter's name."""

    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage, None, None]:
        outputs = filter_chunks.main(
            rag_chunks=tool_parameters.get("rag_chunks"),
            user_roles=tool_parameters.get("user_roles"),
            acl_field=tool_parameters.get("acl_field") or "access_roles",
            condition=tool_parameters.get("condition") or "",
            case_sensitive=given(tool_parameters, "case_sensitive", True),
            missing_acl=tool_parameters.get("missing_acl") or "visible",
            max_chunks=None,  # a plugin tool's output is not bound by the Code node's 30-item array limit
        )
        for name, value in outputs.items():
            yield self.create_variable_message(name, sendable(value))
