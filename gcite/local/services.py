"""The local stand-ins for what Dify provides around a chatflow run, built in one place.

`python -m gcite run`, the demo, the endpoint's app host and `gcite serve` all run chatflows with these services:
the LLM (the extractive stand-in, or an OpenAI-compatible endpoint), the local provider server
(`gcite.local.search_server`, on 127.0.0.1) that G-Cite's `web_search` tool calls through its base-URL credentials, the
same corpus behind the official Tavily tool and the Code-node chatflow's Bocha HTTP node, and the plugin process
for G-Cite's own tools.

The search server runs in a thread of this process: start and stop it on the same side of an import of
`dify_plugin` (that import turns threads into gevent greenlets; a server started before it and stopped after hangs).
`gcite run`, the demo and `gcite serve` never import it.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from gcite.local.llm import ExtractiveModel, OpenAICompatibleModel
from gcite.local.runner import GCITE_PLUGIN, TAVILY_PLUGIN, Services
from gcite.local.search_server import SearchServer
from gcite.local.web_search import SampleSearchHttpClient

SAMPLE_SEARCH_KEY = "tvly-local-sample-key"  # the official Tavily tool needs a key to be set, like the real plugin


def make_llm(llm_base_url: str | None = None, llm_model: str | None = None) -> Any:
    """The built-in extractive stand-in, or an OpenAI-compatible model (key in GCITE_LLM_API_KEY)."""
    if llm_base_url:
        return OpenAICompatibleModel(llm_base_url, llm_model or "")
    return ExtractiveModel()


@dataclass
class LocalServices(Services):
    """`Services` that also own the local search server: `close()` stops it."""

    search_server: SearchServer | None = None  # what the web_search tool asked is in `.search_server.requests`

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.search_server is not None:
                self.search_server.stop()


def start_local_services(
    llm: Any = None,
    *,
    llm_base_url: str | None = None,
    llm_model: str | None = None,
    web_search_fails: bool = False,
    **overrides: Any,
) -> LocalServices:
    """Local services with their search server started; the caller must `close()` them (`local_services` does).

    `web_search_fails`: the search server refuses the key (HTTP 401, so G-Cite's web_search node fails and takes its
    default value), the Bocha HTTP node gets the same refusal, and the official Tavily tool reports a failed search
    as the real plugin does. `overrides`: any other `Services` field (`knowledge_base`, `retrieval_log`, …);
    `tool_credentials` given here are added to (and override) the sample ones.
    """
    server = SearchServer(fail=web_search_fails).start()
    try:
        credentials = {
            TAVILY_PLUGIN: {"tavily_api_key": SAMPLE_SEARCH_KEY},
            GCITE_PLUGIN: server.credentials(),
            **overrides.pop("tool_credentials", {}),
        }
        return LocalServices(
            llm=llm or make_llm(llm_base_url, llm_model),
            search_http=SampleSearchHttpClient(fail=web_search_fails),
            tavily_fail=web_search_fails,
            tool_credentials=credentials,
            search_server=server,
            **overrides,
        )
    except BaseException:
        server.stop()
        raise


@contextmanager
def local_services(
    llm: Any = None,
    *,
    llm_base_url: str | None = None,
    llm_model: str | None = None,
    web_search_fails: bool = False,
    retrieval_log: Callable[[dict[str, Any]], None] | None = None,
    **overrides: Any,
) -> Iterator[LocalServices]:
    """Services for one conversation (see `start_local_services`); everything started here is stopped on exit."""
    services = start_local_services(
        llm,
        llm_base_url=llm_base_url,
        llm_model=llm_model,
        web_search_fails=web_search_fails,
        retrieval_log=retrieval_log,
        **overrides,
    )
    try:
        yield services
    finally:
        services.close()
