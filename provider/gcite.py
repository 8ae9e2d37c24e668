from typing import Any

from dify_plugin import ToolProvider
from dify_plugin.errors.tool import ToolProviderCredentialValidationError

from websearch.search import check_all


class GciteProvider(ToolProvider):
    """Every credential is optional: only the web search tool uses them. Saving checks each configured search
    provider with its cheapest call and reports every one that failed, by name (no key or URL in the message)."""

    def _validate_credentials(self, credentials: dict[str, Any]) -> None:
        failures = check_all(credentials or {})
        if failures:
            raise ToolProviderCredentialValidationError(
                "web search credentials failed: " + "; ".join(f"{name}: {why}" for name, why in failures.items())
            )
