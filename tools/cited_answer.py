import queue
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import Any

from dify_plugin import Tool
from dify_plugin.entities.model.message import SystemPromptMessage, UserPromptMessage
from dify_plugin.entities.tool import ToolInvokeMessage

from citations.answer import (
    BATCH_WINDOW,
    due_events,
    fail_answer,
    failure_message,
    failure_reason,
    feed_delta,
    final_outputs,
    finish_answer,
    new_answer,
    next_due,
    tool_request,
)
from citations.dify_inputs import no_surrogate
from citations.prompt import prompt_messages
from tools.params import sendable
from tools.validate_citations import check_off_loop

# What an Answer node shows must be a stream variable: Dify streams a tool's stream variables while the tool runs,
# while a plain variable referenced by an Answer streams nothing and is missing from the saved message.
STREAMED = ("answer", "sources")
PROMPT_TYPES = {"system": SystemPromptMessage, "user": UserPromptMessage}


class ModelFailedError(Exception):
    """The model failed before any text was shown: the node fails with this message (or takes its error branch)."""


class CitedAnswerTool(Tool):
    """Thin adapter: calls the builder's model through Dify and streams the answer the `citations.answer` functions
    make of it. Bad input raises with the parameter's name; a model failure before any text raises too."""

    clock: Callable[[], float] = staticmethod(time.monotonic)  # time, for the batching window (tests replace it)
    window = BATCH_WINDOW

    def _invoke(self, tool_parameters: dict[str, Any]) -> Generator[ToolInvokeMessage, None, None]:
        request = tool_request(tool_parameters)
        messages = prompt_messages(
            request["query"],
            request["context"],
            request["history"],
            request["instructions"],
            request["insufficient_phrases"],
        )
        state = self._new_answer(request)
        started = self.clock()
        chunks = self.session.model.llm.invoke(
            model_config=request["model"],
            stream=True,
            prompt_messages=[PROMPT_TYPES[m["role"]](content=m["content"]) for m in messages],
        )
        usage = None
        texts: list[str] = []
        for kind, value in self.pump(chunks, lambda: next_due(state, self.clock())):
            now = self.clock()
            if kind == "chunk":
                texts = feed_delta(state, delta_text(value.delta.message.content), now)
                if value.delta.usage is not None:
                    usage = value.delta.usage.model_dump(mode="json")
            elif kind == "tick":
                texts = due_events(state, now)
            else:  # the model failed
                if not state["events"]:
                    raise ModelFailedError(failure_message(str(value))) from None
                texts = fail_answer(state, failure_reason(str(value), now - started), now)
            for text in texts:
                yield self.create_stream_variable_message("answer", no_surrogate(text))
            if kind == "error":
                break
        else:
            for text in finish_answer(state, self.clock()):
                yield self.create_stream_variable_message("answer", no_surrogate(text))
        if not state["events"]:
            yield self.create_stream_variable_message("answer", "")  # the Answer node's variable exists
        # the support check runs here: CPU-bound, so in a thread of its own, never on the loop other streams share
        for name, value in check_off_loop(final_outputs, state, usage).items():
            if name in STREAMED:
                yield self.create_stream_variable_message(name, sendable(value))
            else:
                yield self.create_variable_message(name, sendable(value))

    def _new_answer(self, request: dict[str, Any]) -> dict[str, Any]:
        return new_answer(
            request["chunk_metadata"], request["style"], request["insufficient_phrases"], request["query"], self.window
        )

    @staticmethod
    def pump(chunks: Iterable[Any], wait: Callable[[], float | None]) -> Iterator[tuple[str, Any]]:
        """The model's chunks as ("chunk", chunk), then ("error", exception) if it fails; between them ("tick",
        None) whenever `wait()` seconds pass without one, so that held text is sent in time. The model is read in a
        thread of its own (a greenlet in the plugin), so a slow model never holds text back."""
        box: queue.Queue[tuple[str, Any]] = queue.Queue()

        def read() -> None:
            try:
                for chunk in chunks:
                    box.put(("chunk", chunk))
            except Exception as error:  # noqa: BLE001 - the model's failure, reported in order
                box.put(("error", error))
            else:
                box.put(("end", None))

        threading.Thread(target=read, daemon=True, name="cited_answer-model").start()
        while True:
            try:
                kind, value = box.get(timeout=wait())
            except queue.Empty:
                yield "tick", None
                continue
            if kind == "end":
                return
            yield kind, value
            if kind == "error":
                return


def delta_text(content: Any) -> str:
    """A chunk's text: the content string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(getattr(part, "data", "") or "")
            for part in content
            if str(getattr(getattr(part, "type", None), "value", getattr(part, "type", ""))) == "text"
        )
    return ""
