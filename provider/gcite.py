from typing import Any

from dify_plugin import ToolProvider


class GciteProvider(ToolProvider):
    """G-Cite needs no credentials: every tool works on the data the chatflow hands it."""

    def _validate_credentials(self, credentials: dict[str, Any]) -> None:
        return None
