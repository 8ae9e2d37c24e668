"""Dify's Service API stream, played locally: graphon's events as the events of `POST /v1/chat-messages` with
`response_mode=streaming` (`ServiceApiConverter`), one event as Dify writes it (`dify_sse`), and what Dify keeps
of a conversation between turns (`Conversation`)."""

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any

from gcite import ROOT, load_yaml
from gcite.local.dify_rules import pydantic_json
from gcite.local.engine import (
    BuiltinNodeTypes,
    GraphRunFailedEvent,
    GraphRunPartialSucceededEvent,
    GraphRunStartedEvent,
    GraphRunSucceededEvent,
    GraphRuntimeState,
    NodeRunExceptionEvent,
    NodeRunFailedEvent,
    NodeRunStartedEvent,
    NodeRunStreamChunkEvent,
    NodeRunSucceededEvent,
)

PING_INTERVAL = 10.0  # seconds: Dify's queue manager publishes a ping every 10 s of a run
PING = {"event": "ping"}  # rendered by `dify_sse` as Dify sends it: `event: ping` with no data line
LOCAL_TENANT_ID = str(uuid.uuid5(uuid.NAMESPACE_URL, "gcite-local-tenant"))


def dify_sse(payload: Mapping[str, Any]) -> str:
    """One event as Dify's Service API writes it (`BaseAppGenerator.convert_to_event_stream`, orjson: compact,
    UTF-8)."""
    if payload.get("event") == "ping" and len(payload) == 1:
        return "event: ping\n\n"
    return f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}\n\n"


def _stamp(moment: datetime | float) -> int:
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)  # graphon's times are naive UTC
        return int(moment.timestamp())
    return int(moment)


def plugin_file(relative: str) -> dict[str, Any]:
    """A YAML file of the plugin (`provider/gcite.yaml`, `tools/<tool>.yaml`) as a mapping; parsed once per text, as
    the tool nodes of every run ask for it again (the mapping is shared: read it, never change it)."""
    return _parsed_yaml((ROOT / relative).read_text(encoding="utf-8"))


@lru_cache(maxsize=64)
def _parsed_yaml(text: str) -> dict[str, Any]:
    return load_yaml(text) or {}


def _tool_icon(data: Mapping[str, Any]) -> str:
    """`extras.icon` of a tool node: the console URL Dify serves a plugin's icon from (`ToolManager.get_tool_icon`)."""
    provider = str(data.get("provider_id") or "")
    filename = "icon.png"
    if provider.startswith("gcite/"):
        declared = plugin_file("provider/gcite.yaml")
        filename = str(declared.get("identity", {}).get("icon") or filename)
    return f"/console/api/workspaces/current/plugin/icon?tenant_id={LOCAL_TENANT_ID}&filename={filename}"


@dataclass
class Conversation:
    """Per-conversation state Dify keeps between turns: its id, the dialogue count, conversation variables, and the
    Service API end user (`user` is the `user` field of the request, `end_user_id` Dify's row for it)."""

    conversation_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    dialogue_count: int = 0
    variables: dict[str, Any] = field(default_factory=dict)
    user: str = "gcite-local"
    end_user_id: str = field(default_factory=lambda: str(uuid.uuid4()))


class ServiceApiConverter:
    """graphon events → Dify Service API events for `POST /v1/chat-messages`, `response_mode=streaming`: the fields
    of Dify's `task_entities` stream responses, filled as `WorkflowResponseConverter` and the advanced-chat task
    pipeline fill them for `InvokeFrom.SERVICE_API` (no truncation). (The endpoint's `Translator` goes on from
    there: Dify's stream → G-Cite events.)"""

    def __init__(
        self,
        graph_config: Mapping[str, Any],
        conversation: Conversation,
        inputs: Mapping[str, Any],
        workflow_id: str,
        run_id: str,
        state: GraphRuntimeState,
    ) -> None:
        nodes = {n["id"]: n["data"] for n in graph_config["nodes"]}
        self.titles = {node_id: data.get("title", node_id) for node_id, data in nodes.items()}
        self.icons = {node_id: _tool_icon(data) for node_id, data in nodes.items() if data.get("type") == "tool"}
        self.inputs, self.workflow_id, self.run_id, self.state = inputs, workflow_id, run_id, state
        self.conversation = conversation
        self.task_id, self.message_id = str(uuid.uuid4()), str(uuid.uuid4())
        self.started = time.time()
        self.created_at = int(self.started)  # the message's creation time, on every event
        self.index = 0
        self.node_started: dict[str, tuple[int, float]] = {}
        self.first_token: float | None = None
        self.last_token: float | None = None

    def envelope(self, event: str, **body: Any) -> dict[str, Any]:
        return {
            "event": event,
            "conversation_id": self.conversation.conversation_id,
            "message_id": self.message_id,
            "created_at": self.created_at,
            "task_id": self.task_id,
            **body,
        }

    def workflow(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        return self.envelope(event, workflow_run_id=self.run_id, data=data)

    def convert(self, event: Any) -> list[dict[str, Any]]:
        if isinstance(event, GraphRunStartedEvent):
            return [
                self.workflow(
                    "workflow_started",
                    {
                        "id": self.run_id,
                        "workflow_id": self.workflow_id,
                        "inputs": pydantic_json(self.inputs),
                        "created_at": _stamp(self.started),
                        "reason": str(getattr(event, "reason", "initial")),
                    },
                )
            ]
        if isinstance(event, NodeRunStartedEvent):
            self.index = 1  # Dify's QueueNodeStartedEvent.node_run_index keeps its default: 1 on every node
            self.node_started[event.id] = (self.index, time.time())
            extras: dict[str, Any] = {}
            if event.node_id in self.icons:
                extras["icon"] = self.icons[event.node_id]
            return [
                self.workflow(
                    "node_started",
                    {
                        "id": event.id,
                        "node_id": event.node_id,
                        "node_type": str(event.node_type),
                        "title": event.node_title or self.titles.get(event.node_id, ""),
                        "index": self.index,
                        "predecessor_node_id": None,
                        "inputs": None,
                        "inputs_truncated": False,
                        "created_at": _stamp(event.start_at),
                        "extras": extras,
                        "iteration_id": event.in_iteration_id,
                        "loop_id": event.in_loop_id,
                        "agent_strategy": None,
                    },
                )
            ]
        if isinstance(event, (NodeRunSucceededEvent, NodeRunFailedEvent, NodeRunExceptionEvent)):
            result = event.node_run_result
            status = {
                NodeRunSucceededEvent: "succeeded",
                NodeRunFailedEvent: "failed",
                NodeRunExceptionEvent: "exception",
            }[type(event)]
            index, started = self.node_started.pop(event.id, (0, time.time()))
            now = time.time()
            metadata = {k: v for k, v in result.metadata.items()}
            # Dify's api shows the Start node's outputs as the app's inputs (no sys.* or conversation.*)
            outputs = result.inputs if str(event.node_type) == BuiltinNodeTypes.START else result.outputs
            return [
                self.workflow(
                    "node_finished",
                    {
                        "id": event.id,
                        "node_id": event.node_id,
                        "node_type": str(event.node_type),
                        "title": self.titles.get(event.node_id, ""),
                        "index": index,
                        "predecessor_node_id": None,
                        "inputs": pydantic_json(result.inputs),
                        "inputs_truncated": False,
                        "process_data": pydantic_json(result.process_data),
                        "process_data_truncated": False,
                        "outputs": pydantic_json(outputs),
                        "outputs_truncated": False,
                        "status": status,
                        "error": (getattr(event, "error", None) or result.error or None)
                        if status != "succeeded"
                        else None,
                        "elapsed_time": now - started,
                        "execution_metadata": pydantic_json(metadata) if metadata else None,
                        "created_at": _stamp(started),
                        "finished_at": _stamp(now),
                        "files": [],
                        "iteration_id": event.in_iteration_id,
                        "loop_id": event.in_loop_id,
                    },
                )
            ]
        if isinstance(event, NodeRunStreamChunkEvent):  # an empty chunk too: Dify sends `message` with answer ""
            self.first_token = self.first_token or time.time()
            self.last_token = time.time()
            return [
                self.envelope(
                    "message", id=self.message_id, answer=event.chunk, from_variable_selector=list(event.selector)
                )
            ]
        if isinstance(event, GraphRunSucceededEvent):
            return [self._message_end(), self._finished("succeeded", None, 0)]
        if isinstance(event, GraphRunPartialSucceededEvent):
            return [self._message_end(), self._finished("partial-succeeded", None, event.exceptions_count)]
        if isinstance(event, GraphRunFailedEvent):
            # Dify's stream of a failed run ends here: no message_end and no `error` event
            return [self._finished("failed", event.error, event.exceptions_count)]
        return []

    def _message_end(self) -> dict[str, Any]:
        usage = self.state.llm_usage.model_copy()
        if self.first_token is not None:
            usage.time_to_first_token = round(self.first_token - self.started, 3)
            usage.time_to_generate = round((self.last_token or self.first_token) - self.first_token, 3)
        metadata = {
            "annotation_reply": None,
            "retriever_resources": [],
            "usage": pydantic_json(usage.model_dump()),
            "reasoning": {},
        }
        return self.envelope("message_end", id=self.message_id, metadata=metadata, files=[])

    def _finished(self, status: str, error: str | None, exceptions: int) -> dict[str, Any]:
        now = time.time()
        return self.workflow(
            "workflow_finished",
            {
                "id": self.run_id,
                "workflow_id": self.workflow_id,
                "status": status,
                "outputs": pydantic_json(self.state.outputs or {}),
                "error": error,
                "elapsed_time": now - self.started,
                "total_tokens": self.state.total_tokens,
                "total_steps": self.state.node_run_steps,
                "created_by": {"id": self.conversation.end_user_id, "user": self.conversation.user},
                "created_at": _stamp(self.started),
                "finished_at": _stamp(now),
                "exceptions_count": exceptions,
                "files": [],
            },
        )
