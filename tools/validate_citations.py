from collections.abc import Callable, Generator
from functools import cache
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.tool import ToolInvokeMessage

from citations import validate as validate_citations
from citations.phrases import INSUFFICIENT_DEFAULT

# Text an Answer node shows. Sent as stream variables: Dify's Answer node streams a tool's stream variables, while a
# plain tool variable placed after the LLM text reaches only the node's final output, not the stream.
STREAMED = ("answer", "answer_without_markers", "references_markdown", "references_by_marker_markdown")
# A tool's outputs are not bound by the Code node's 30-element arrays; lists are still capped, far higher.
MAX_LIST_ITEMS = 1000


# The support checks running at once (validate_citations, cited_answer's and the endpoint's streams). Each holds its
# answer's working set (about 50 MB for a 1 MB answer) while it runs, and under the GIL a third one at once finishes
# nothing sooner: more wait their turn in this pool's queue, holding only their input. Only the checks queue here;
# other work off the loop (a node's outputs in the endpoint) goes to gevent's hub pool, so it never waits behind them.
CHECK_WORKERS = 2


def _on_the_loop() -> bool:
    """True on the plugin's event loop: the SDK has patched threading with gevent and this native thread runs the
    main hub (a pool's thread is off the loop already)."""
    try:
        from gevent import get_hub, monkey
    except ImportError:
        return False
    return monkey.is_module_patched("threading") and get_hub().main_hub


def off_loop(function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)` in a real OS thread of gevent's hub pool when called on the plugin's event loop: CPU work
    there would hold every other stream and tool call until it ended; in its own thread the interpreter switches
    away from it every few milliseconds. Elsewhere (a pool's thread, tests without gevent's patching) it runs here."""
    if not _on_the_loop():
        return function(*args)
    from gevent import get_hub

    return get_hub().threadpool.apply(function, args)


def check_off_loop(function: Callable[..., Any], *args: Any) -> Any:
    """`off_loop` for a support check: in the plugin's check pool, at most CHECK_WORKERS at once."""
    if not _on_the_loop():
        return function(*args)
    return _check_pool().apply(function, args)


@cache
def _check_pool() -> Any:
    """The check pool, made on first use on the loop."""
    from gevent.threadpool import ThreadPool

    return ThreadPool(CHECK_WORKERS)


class ValidateCitationsTool(Tool):
    """Thin adapter: the node does the work; bad input raises with the parameter's name."""

    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage, None, None]:
        phrases = tool_parameters.get("insufficient_phrases")
        outputs = off_loop(  # the support check is CPU-bound: never on the loop other streams share
            validate_citations.main,
            tool_parameters.get("answer"),
            _chunk_list(tool_parameters.get("chunk_metadata")),
            INSUFFICIENT_DEFAULT if phrases is None else phrases,
            MAX_LIST_ITEMS,
            tool_parameters.get("question") or "",
        )
        for name, value in outputs.items():
            if name in STREAMED:
                yield self.create_stream_variable_message(name, value)
            else:
                yield self.create_variable_message(name, value)


def _chunk_list(value: Any) -> Any:
    """Dify casts an unset array parameter to "" or [""]; both mean "no list given"."""
    if value in (None, "", [""]):
        return None
    return value
