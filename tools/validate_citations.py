from collections.abc import Callable, Generator
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


# CPU-bound checks running at once (validate_citations, the support check of cited_answer and of the endpoint's
# streams). Each holds its answer's working set (about 50 MB for a 1 MB answer) while it runs, and under the GIL a
# third one at once finishes nothing sooner: more wait their turn in this pool's queue, holding only their input.
# It is the plugin's own pool, not gevent's hub pool (10 threads, also the one the SDK reads stdin through).
CHECK_WORKERS = 2
_pool: list[Any] = []  # the pool, made on first use in the loop's thread


def off_loop(function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)` in a real OS thread of the plugin's check pool when called on the plugin's event loop (the
    SDK patches threading with gevent): CPU-bound work there would hold every other stream and tool call until it
    ended; in its own thread the interpreter switches away from it every few milliseconds. At most CHECK_WORKERS
    run at once. Elsewhere (a worker thread, tests without gevent's patching) it runs here."""
    try:
        from gevent import monkey
        from gevent.threadpool import ThreadPool
    except ImportError:
        return function(*args)
    if not monkey.is_module_patched("threading"):
        return function(*args)
    if not _pool:
        _pool.append(ThreadPool(CHECK_WORKERS))
    return _pool[0].apply(function, args)


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
