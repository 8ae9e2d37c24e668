"""The local stand-ins for what Dify provides around a chatflow run, built in one place.

`python -m gcite run`, the demo, the endpoint's app host and `gcite serve` all run chatflows with these services:
the LLM (the extractive stand-in, or an OpenAI-compatible endpoint), the sample web search behind the official Tavily
tool and the Bocha HTTP node, and the plugin process for G-Cite's own tools.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gcite.demo import SAMPLE_SEARCH_KEY
from gcite.llm import ExtractiveModel, OpenAICompatibleModel
from gcite.runner import Services
from gcite.web_search import SampleSearchHttpClient


def make_llm(llm_base_url: str | None = None, llm_model: str | None = None) -> Any:
    """The built-in extractive stand-in, or an OpenAI-compatible model (key in GCITE_LLM_API_KEY)."""
    if llm_base_url:
        return OpenAICompatibleModel(llm_base_url, llm_model or "")
    return ExtractiveModel()


@contextmanager
def local_services(llm: Any = None, *, llm_base_url: str | None = None, llm_model: str | None = None,
                   web_search_fails: bool = False,
                   retrieval_log: Callable[[dict[str, Any]], None] | None = None) -> Iterator[Services]:
    """Services for one conversation; everything started here is stopped on exit."""
    services = Services(llm=llm or make_llm(llm_base_url, llm_model),
                        search_http=SampleSearchHttpClient(fail=web_search_fails),
                        tavily_fail=web_search_fails,
                        tool_credentials={"langgenius/tavily:": {"tavily_api_key": SAMPLE_SEARCH_KEY}},
                        retrieval_log=retrieval_log)
    try:
        yield services
    finally:
        services.close()
