"""Dify's side of a plugin's backwards app invocation, played locally: run the chatflow DSL on the runner.

`AppHost(dsl_text, services)` is an `app_handler` for `PluginProcess.invoke_endpoint`/`request`: called with the
plugin's request `{app_id, query, inputs, response_mode, conversation_id, user}`, it runs one turn of the chatflow
with `gcite.local.runner.run_chatflow` and yields the Service API event dicts as they happen (as Dify's
`convert_to_event_stream` forwards them: `ping` dropped). Conversations live in the host, keyed by the
conversation_id the runner gives them, so a later call with that id continues the conversation (its dialogue count
and conversation variables); an unknown id fails like Dify's "Conversation Not Exists". Two turns of one
conversation run one after the other. Like Dify for endpoint calls, the host ignores `user`.

Errors raised before the stream starts (unknown app or conversation, blocking mode, a DSL that is not a chatflow)
are raised from the generator, which `PluginProcess` reports to the plugin as the daemon's `error` message.
"""

import threading
from collections.abc import Iterator, Mapping
from typing import Any

from gcite.local.runner import Services, run_chatflow
from gcite.local.service_api import Conversation
from gcite.local.services import start_local_services


def sample_services(**overrides: Any) -> Services:
    """Services as `gcite run` builds them by default: the stand-in LLM, the built-in knowledge base, and the local
    search server behind every web search (started here; `close()` the services to stop it)."""
    return start_local_services(**overrides)


class UnknownConversation(LookupError):
    pass


class AppHost:
    """Answers backwards app invocations with one chatflow. Thread-safe: each call may come from its own thread.

    `app_id`: when given, a request for another app fails ("app not found"). `services`: shared by every run (the
    runner's tool plugin process is started once, before the first run); `close()` stops it when the host owns it.
    `requests` records every request received, in order.
    """

    def __init__(self, dsl_text: str, services: Services | None = None, *, app_id: str | None = None) -> None:
        self.dsl_text = dsl_text
        self.app_id = app_id
        self._own_services = services is None
        self.services = services if services is not None else sample_services()
        self.conversations: dict[str, Conversation] = {}
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._turn_locks: dict[str, threading.Lock] = {}
        self._warm = False

    def __call__(self, request: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        return self.invoke(request)

    def invoke(self, request: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        with self._lock:
            self.requests.append(dict(request))
        if self.app_id is not None and request.get("app_id") != self.app_id:
            raise LookupError(f"app {request.get('app_id')!r} not found")
        if request.get("response_mode", "streaming") != "streaming":
            raise ValueError("the local app host answers response_mode=streaming only")
        query = request.get("query")
        if not isinstance(query, str):
            raise ValueError("query: expected text")
        inputs = request.get("inputs") or {}
        if not isinstance(inputs, Mapping):
            raise ValueError("inputs: expected an object")
        conversation = self._conversation(request.get("conversation_id"))
        self._warm_up()
        with self._turn_lock(conversation.conversation_id):
            for event in run_chatflow(self.dsl_text, query, dict(inputs), self.services, conversation=conversation):
                if event.get("event") != "ping":
                    yield event

    def close(self) -> None:
        if self._own_services:
            self.services.close()

    def __enter__(self) -> "AppHost":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # parts

    def _conversation(self, conversation_id: Any) -> Conversation:
        with self._lock:
            if conversation_id in (None, ""):
                conversation = Conversation()
                self.conversations[conversation.conversation_id] = conversation
                return conversation
            if not isinstance(conversation_id, str) or conversation_id not in self.conversations:
                raise UnknownConversation("Conversation Not Exists.")
            return self.conversations[conversation_id]

    def _turn_lock(self, conversation_id: str) -> threading.Lock:
        with self._lock:
            return self._turn_locks.setdefault(conversation_id, threading.Lock())

    def _warm_up(self) -> None:
        """Start the runner's tool plugin process once, before concurrent runs would each start one."""
        with self._lock:
            if self._warm:
                return
            self._warm = True
            if "gcite/gcite:" in self.dsl_text:
                self.services.plugin()
