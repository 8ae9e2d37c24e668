"""Run a chatflow DSL on graphon (Dify's workflow engine) and emit the stream as Dify's Service API sends it.

What Dify would provide is injected through graphon's protocols:
- Code nodes run graphon's own sandbox program in a local Python subprocess (no sandbox server);
- Knowledge Retrieval is a local node over the built-in knowledge base, returning Dify's exact `result` items and
  applying the node's manual metadata conditions with Dify's operator semantics (`gcite.dify_metadata`);
- G-Cite's plugin tools run in the real plugin process (`python -m main`, the daemon's stdio protocol);
- web search (the official Tavily plugin, or an HTTP Request node to Bocha) is answered from built-in samples;
- the LLM is any `LLMProtocol`: by default the built-in extractive stand-in (`gcite.llm`).

The Answer stream goes through graphon's `ResponseStreamFilter` inside the engine's event dispatch, one event at a
time, so the order is the order Dify shows with a real (slow) LLM, whatever the speed of the model here.
"""

import json
import queue
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from graphon.dsl.code_runtime import SandboxCodeExecutionError, _Python3TemplateTransformer
from graphon.dsl.entities import DslCodeSettings, DslCredentials, DslKind
from graphon.dsl.importer import _normalize_graph_config, _select_root_node_id
from graphon.dsl.node_factory import (SlimDslNodeFactory, _code_limits, _PassthroughPromptMessageSerializer,
                                      _TextOnlyFileSaver, _TextOnlyHttpResponseFileManager,
                                      _UnsupportedHttpFileReferenceFactory, _UnsupportedHttpRequestFileManager,
                                      _UnsupportedToolFileManager)
from graphon.dsl.tool_runtime import SlimToolNodeRuntime
from graphon.entities.base_node_data import BaseNodeData
from graphon.entities.graph_init_params import GraphInitParams
from graphon.enums import BuiltinNodeTypes, WorkflowNodeExecutionStatus
from graphon.graph.graph import Graph
from graphon.graph_engine import GraphEngine, GraphEngineConfig, GraphEventFilterContext, ResponseStreamFilter
from graphon.graph_engine.command_channels import InMemoryChannel
from graphon.graph_engine.layers.base import GraphEngineLayer
from graphon.graph_events import (GraphRunFailedEvent, GraphRunPartialSucceededEvent, GraphRunStartedEvent,
                                  GraphRunSucceededEvent, NodeRunExceptionEvent, NodeRunFailedEvent,
                                  NodeRunStartedEvent, NodeRunStreamChunkEvent, NodeRunSucceededEvent)
from graphon.node_events.base import NodeRunResult
from graphon.nodes.base.node import Node
from graphon.nodes.code.code_node import CodeNode
from graphon.nodes.code.entities import CodeLanguage, CodeNodeData
from graphon.nodes.http_request.config import build_http_request_config
from graphon.nodes.http_request.entities import HttpRequestNodeData
from graphon.nodes.http_request.node import HttpRequestNode, HttpRequestNodeDependencies
from graphon.nodes.llm import LLMNode, LLMNodeData
from graphon.nodes.tool.entities import ToolNodeData
from graphon.nodes.tool.exc import ToolNodeError
from graphon.nodes.tool.tool_node import ToolNode
from graphon.runtime.graph_runtime_state import GraphRuntimeState
from graphon.runtime.variable_pool import VariablePool
from graphon.variables.segments import ArrayObjectSegment
from graphon.variables.template_resolution import convert_template

from gcite import ROOT
from gcite.dify_metadata import admits
from gcite.knowledge import load_json, result_items
from gcite.llm import ExtractiveModel
from gcite.plugin_process import PluginProcess
from gcite.web_search import SampleSearchHttpClient, SearchUnavailable, tavily_messages

GCITE_PLUGIN = "gcite/gcite:"
TAVILY_PLUGIN = "langgenius/tavily:"
TAVILY_PARAMETERS = [
    {"name": "query", "type": "string", "form": "llm", "required": True},
    {"name": "max_results", "type": "number", "form": "form"},
    {"name": "search_depth", "type": "string", "form": "form"},
    {"name": "topic", "type": "string", "form": "form"},
    {"name": "include_answer", "type": "boolean", "form": "form"},
    {"name": "include_images", "type": "boolean", "form": "form"},
    {"name": "include_raw_content", "type": "boolean", "form": "form"},
]


# --- what Dify would provide --------------------------------------------------------------------------------

class LocalCodeExecutor:
    """graphon's sandbox program (byte for byte what dify-sandbox receives), run by a local Python."""

    def execute(self, *, language: CodeLanguage, code: str, inputs: Mapping[str, Any]) -> Mapping[str, Any]:
        if language != CodeLanguage.PYTHON3:
            raise SandboxCodeExecutionError(f"the local runner executes python3 Code nodes only, not {language}")
        program = _Python3TemplateTransformer.build_program(code=code, inputs=inputs)
        done = subprocess.run([sys.executable, "-I", "-c", program.code], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise SandboxCodeExecutionError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed")
        return _Python3TemplateTransformer.parse_result(done.stdout)

    def is_execution_error(self, error: Exception) -> bool:
        return isinstance(error, SandboxCodeExecutionError)


class KnowledgeRetrievalData(BaseNodeData):
    type: str = BuiltinNodeTypes.KNOWLEDGE_RETRIEVAL
    query_variable_selector: list[str] | None = None
    dataset_ids: list[str] = []
    retrieval_mode: str = "multiple"
    multiple_retrieval_config: dict[str, Any] | None = None
    single_retrieval_config: dict[str, Any] | None = None
    metadata_filtering_mode: str | None = "disabled"
    metadata_model_config: dict[str, Any] | None = None
    metadata_filtering_conditions: dict[str, Any] | None = None


class LocalKnowledgeRetrievalNode(Node[KnowledgeRetrievalData]):
    """Dify's Knowledge Retrieval over the built-in knowledge base (graphon ships no such node)."""

    node_type = BuiltinNodeTypes.KNOWLEDGE_RETRIEVAL
    knowledge_base: dict[str, Any] = {}

    @classmethod
    def version(cls) -> str:
        return "1"

    def _run(self) -> NodeRunResult:
        pool = self.graph_runtime_state.variable_pool
        selector = self.node_data.query_variable_selector or ["sys", "query"]
        query = pool.get(selector)
        if query is None or not isinstance(query.value, str):
            return NodeRunResult(status=WorkflowNodeExecutionStatus.FAILED, error="Query variable is not a string")
        filtering = self._resolved_conditions(pool)
        documents = [d for d in self.knowledge_base.get("documents", [])
                     if filtering is None or admits(filtering, d["doc_metadata"])]
        top_k = int((self.node_data.multiple_retrieval_config or {}).get("top_k") or 4)
        result = result_items({**self.knowledge_base, "documents": documents}, query.value, top_k)
        return NodeRunResult(status=WorkflowNodeExecutionStatus.SUCCEEDED, inputs={"query": query.value},
                             process_data={"metadata_filtering_conditions": filtering,
                                           "documents_admitted": len(documents)},
                             outputs={"result": ArrayObjectSegment(value=result)})

    def _resolved_conditions(self, pool: VariablePool) -> dict[str, Any] | None:
        """The manual conditions with `{{#node.var#}}` resolved as Dify resolves them (None: no filtering)."""
        data = self.node_data
        if data.metadata_filtering_mode != "manual" or not data.metadata_filtering_conditions:
            return None
        conditions = []
        for condition in data.metadata_filtering_conditions.get("conditions") or []:
            value = condition.get("value")
            if isinstance(value, str):
                group = convert_template(pool, value)
                value = group.value[0].to_object() if len(group.value) == 1 else group.text
            conditions.append({**condition, "value": value})
        return {"logical_operator": data.metadata_filtering_conditions.get("logical_operator", "and"),
                "conditions": conditions}


@dataclass
class Services:
    """Everything the runner injects; build one per conversation and `close()` it."""

    llm: Any = field(default_factory=ExtractiveModel)
    knowledge_base: dict[str, Any] = field(default_factory=lambda: load_json("knowledge_base.json"))
    search_http: SampleSearchHttpClient = field(default_factory=SampleSearchHttpClient)
    tavily_fail: bool = False
    tool_credentials: dict[str, dict[str, Any]] = field(default_factory=dict)  # by plugin id prefix
    plugin_dir: Path = ROOT
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    _plugin: PluginProcess | None = None

    def plugin(self) -> PluginProcess:
        if self._plugin is None or not self._plugin.alive:
            self._plugin = PluginProcess(self.plugin_dir, sys.executable)
        return self._plugin

    def close(self) -> None:
        if self._plugin is not None:
            self._plugin.close()
            self._plugin = None

    def credentials_for(self, plugin_id: str) -> dict[str, Any]:
        return next((v for k, v in self.tool_credentials.items() if plugin_id.startswith(k)), {})

    def invoke(self, plugin_id: str, action: str, data: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
        """graphon's tool `action_invoker`: the plugin daemon's side of a tool call."""
        tool = str(data.get("tool"))
        if action == "get_tool_runtime_parameters":
            yield {"parameters": self._declared_parameters(plugin_id, tool)}
            return
        parameters = dict(data.get("tool_parameters") or {})
        self.tool_calls.append({"plugin_id": plugin_id, "tool": tool, "parameters": parameters,
                                "credentials": dict(data.get("credentials") or {})})
        if plugin_id.startswith(TAVILY_PLUGIN):
            if not (data.get("credentials") or {}).get("tavily_api_key"):
                raise ToolNodeError("Tavily API key is missing (set it in the plugin's credentials)")
            try:
                yield from tavily_messages(parameters, fail=self.tavily_fail)
            except SearchUnavailable as error:
                raise ToolNodeError(str(error)) from error
            return
        if not plugin_id.startswith(GCITE_PLUGIN):
            raise ToolNodeError(f"the local runner cannot run plugin {plugin_id}")
        session = self.plugin().call_tool(str(data.get("provider")), tool, parameters)
        if session.error is not None:
            raise ToolNodeError(session.error.get("message") or "the plugin failed")
        yield from session.messages

    @staticmethod
    def _declared_parameters(plugin_id: str, tool: str) -> list[dict[str, Any]]:
        if plugin_id.startswith(TAVILY_PLUGIN):
            return TAVILY_PARAMETERS
        declaration = yaml.safe_load((ROOT / "tools" / f"{tool}.yaml").read_text(encoding="utf-8"))
        return [{k: p.get(k) for k in ("name", "type", "form", "required", "default")}
                for p in declaration.get("parameters", [])]


# --- graphon wiring -----------------------------------------------------------------------------------------

class LocalNodeFactory(SlimDslNodeFactory):
    """graphon's DSL node factory with Dify's services replaced by local ones."""

    services: Services

    def create_node(self, node_config: Any) -> Node:
        request = self._node_request(node_config)
        payload, node_type = request.data_payload, request.node_type
        common = {"node_id": request.node_id, "graph_init_params": self.graph_init_params,
                  "graph_runtime_state": self.graph_runtime_state}
        if node_type == BuiltinNodeTypes.KNOWLEDGE_RETRIEVAL:
            node = LocalKnowledgeRetrievalNode(data=KnowledgeRetrievalData.model_validate(payload), **common)
            node.knowledge_base = self.services.knowledge_base
            return node
        if node_type == BuiltinNodeTypes.CODE:
            return CodeNode(data=CodeNodeData.model_validate(payload), code_executor=LocalCodeExecutor(),
                            code_limits=_code_limits(DslCodeSettings()), **common)
        if node_type == BuiltinNodeTypes.LLM:
            return LLMNode(data=LLMNodeData.model_validate(payload), model_instance=self.services.llm,
                           llm_file_saver=_TextOnlyFileSaver(),
                           prompt_message_serializer=_PassthroughPromptMessageSerializer(),
                           default_query_selector=("sys", "query"), **common)
        if node_type == BuiltinNodeTypes.TOOL:
            data = ToolNodeData.model_validate(payload)
            plugin_id = data.plugin_unique_identifier or ""
            runtime = SlimToolNodeRuntime(config=self.slim_client_config, plugin_id=plugin_id,
                                          provider=data.provider_id.split("/")[-1], provider_id=data.provider_id,
                                          tool_name=data.tool_name, credentials=self.services.credentials_for(plugin_id),
                                          action_invoker=self.services.invoke)
            return ToolNode(data=data, tool_file_manager=_UnsupportedToolFileManager(), runtime=runtime, **common)
        if node_type == BuiltinNodeTypes.HTTP_REQUEST:
            return HttpRequestNode(data=HttpRequestNodeData.model_validate(payload),
                                   http_request_config=build_http_request_config(),
                                   dependencies=HttpRequestNodeDependencies(
                                       tool_file_manager_factory=_TextOnlyHttpResponseFileManager,
                                       file_manager=_UnsupportedHttpRequestFileManager(),
                                       file_reference_factory=_UnsupportedHttpFileReferenceFactory(),
                                       http_client=self.services.search_http), **common)
        return super().create_node(node_config)


class _StreamLayer(GraphEngineLayer):
    """Applies Dify's response stream filter inside the engine's dispatch, one event at a time."""

    def __init__(self, sink: Callable[[Any], None]) -> None:
        super().__init__()
        self._sink = sink
        self._filter = ResponseStreamFilter()
        self.engine: GraphEngine | None = None

    def on_graph_start(self) -> None:
        self._filter.initialize(GraphEventFilterContext.from_engine(self.engine))

    def on_event(self, event: Any) -> None:
        for out in self._filter.on_event(event):
            self._sink(out)

    def on_graph_end(self, error: Exception | None) -> None:
        for out in self._filter.flush():
            self._sink(out)


# --- the Service API stream ---------------------------------------------------------------------------------

def jsonable(value: Any) -> Any:
    if hasattr(value, "to_object"):
        value = value.to_object()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime):
        return int(value.timestamp())
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump(mode="json"))
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def sse(payload: Mapping[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


@dataclass
class Conversation:
    """Per-conversation state Dify keeps between turns: its id, the dialogue count, conversation variables."""

    conversation_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    dialogue_count: int = 0
    variables: dict[str, Any] = field(default_factory=dict)


class _Translator:
    """graphon events → Dify Service API events for `POST /v1/chat-messages`, `response_mode=streaming`."""

    def __init__(self, titles: Mapping[str, str], conversation: Conversation, inputs: Mapping[str, Any]) -> None:
        self.titles, self.inputs = titles, inputs
        self.task_id, self.message_id, self.run_id = (str(uuid.uuid4()) for _ in range(3))
        self.conversation_id = conversation.conversation_id
        self.started = time.time()
        self.index = 0
        self.steps = 0
        self.exceptions = 0
        self.node_started_at: dict[str, float] = {}

    def envelope(self, event: str, **body: Any) -> dict[str, Any]:
        return {"event": event, "conversation_id": self.conversation_id, "message_id": self.message_id,
                "created_at": int(time.time()), "task_id": self.task_id, **body}

    def workflow(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        return self.envelope(event, workflow_run_id=self.run_id, data={"id": self.run_id, "workflow_id": "gcite", **data})

    def translate(self, event: Any) -> list[dict[str, Any]]:
        now = int(time.time())
        if isinstance(event, GraphRunStartedEvent):
            return [self.workflow("workflow_started", {"inputs": jsonable(self.inputs), "created_at": now})]
        if isinstance(event, NodeRunStartedEvent):
            self.index += 1
            self.node_started_at[event.id] = time.time()
            return [self.workflow("node_started", {
                "id": event.id, "node_id": event.node_id, "node_type": event.node_type,
                "title": self.titles.get(event.node_id, event.node_id), "index": self.index,
                "predecessor_node_id": event.predecessor_node_id, "inputs": None, "created_at": now, "extras": {},
                "iteration_id": None, "loop_id": None})]
        if isinstance(event, (NodeRunSucceededEvent, NodeRunFailedEvent, NodeRunExceptionEvent)):
            self.steps += 1
            result = event.node_run_result
            status = {NodeRunSucceededEvent: "succeeded", NodeRunFailedEvent: "failed",
                      NodeRunExceptionEvent: "exception"}[type(event)]
            self.exceptions += status == "exception"
            started = self.node_started_at.get(event.id, time.time())
            return [self.workflow("node_finished", {
                "id": event.id, "node_id": event.node_id, "node_type": event.node_type,
                "title": self.titles.get(event.node_id, event.node_id), "index": self.index,
                "predecessor_node_id": None, "inputs": jsonable(result.inputs),
                "process_data": jsonable(result.process_data), "outputs": jsonable(result.outputs), "status": status,
                "error": getattr(event, "error", None) or result.error or None,
                "elapsed_time": round(time.time() - started, 6),
                "execution_metadata": jsonable({k: v for k, v in result.metadata.items()}),
                "created_at": int(started), "finished_at": now, "files": [], "iteration_id": None, "loop_id": None})]
        if isinstance(event, NodeRunStreamChunkEvent):
            if not event.chunk:
                return []
            return [self.envelope("message", id=self.message_id, answer=event.chunk,
                                  from_variable_selector=list(event.selector))]
        if isinstance(event, (GraphRunSucceededEvent, GraphRunPartialSucceededEvent)):
            return self._finished("succeeded" if isinstance(event, GraphRunSucceededEvent) else "partial-succeeded",
                                  jsonable(event.outputs), None)
        if isinstance(event, GraphRunFailedEvent):
            finished = self._finished("failed", {}, event.error)[:1]
            return finished + [self.envelope("error", status=500, code="internal_server_error", message=event.error)]
        return []

    def _finished(self, status: str, outputs: dict[str, Any], error: str | None) -> list[dict[str, Any]]:
        now = int(time.time())
        return [
            self.workflow("workflow_finished", {
                "status": status, "outputs": outputs, "error": error, "elapsed_time": round(time.time() - self.started, 6),
                "total_tokens": 0, "total_steps": self.steps, "created_at": int(self.started), "finished_at": now,
                "exceptions_count": self.exceptions, "files": []}),
            self.envelope("message_end", id=self.message_id, metadata={
                "retriever_resources": [], "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0,
                                                     "total_price": "0", "currency": "USD",
                                                     "latency": round(time.time() - self.started, 6)}}, files=[]),
        ]


def run_chatflow(dsl_text: str, query: str, inputs: Mapping[str, Any] | None = None,
                 services: Services | None = None, conversation: Conversation | None = None) -> Iterator[dict[str, Any]]:
    """Execute one turn of a chatflow; yields the Service API events (dicts) as they happen."""
    services = services or Services()
    conversation = conversation or Conversation()
    inputs = dict(inputs or {})
    document = yaml.safe_load(dsl_text)
    if not isinstance(document, dict) or not isinstance((document.get("workflow") or {}).get("graph"), dict):
        raise ValueError("not a chatflow DSL: it has no workflow.graph")
    graph_config = _normalize_graph_config(document["workflow"]["graph"], kind=DslKind.APP)
    root = _select_root_node_id(graph_config)
    titles = {n["id"]: n["data"].get("title", n["id"]) for n in graph_config["nodes"]}
    conversation.dialogue_count += 1

    pool = VariablePool()
    system = {"query": query, "files": [], "conversation_id": conversation.conversation_id, "user_id": "gcite-local",
              "dialogue_count": conversation.dialogue_count, "app_id": "gcite-local", "workflow_id": "gcite",
              "workflow_run_id": str(uuid.uuid4())}
    for key, value in system.items():
        pool.add(("sys", key), value)
    for variable in document["workflow"].get("conversation_variables") or []:
        value = conversation.variables.get(variable["name"], variable.get("value"))
        pool.add(("conversation", variable["name"]), value)
    for variable in document["workflow"].get("environment_variables") or []:
        pool.add(("env", variable["name"]), variable.get("value"))
    for key, value in inputs.items():
        pool.add((root, key), value)

    init = GraphInitParams(workflow_id="gcite", graph_config=graph_config, run_context={}, call_depth=0)
    state = GraphRuntimeState(variable_pool=pool, start_at=time.time())
    factory = LocalNodeFactory(graph_config=graph_config, graph_init_params=init, graph_runtime_state=state,
                               credentials=DslCredentials(), dependencies=[])
    factory.services = services
    graph = Graph.init(graph_config=graph_config, node_factory=factory, root_node_id=root)
    engine = GraphEngine(workflow_id="gcite", graph=graph, graph_runtime_state=state,
                         command_channel=InMemoryChannel(), config=GraphEngineConfig())

    translator = _Translator(titles, conversation, {**inputs, "sys.query": query})
    events: queue.Queue[dict[str, Any] | None] = queue.Queue()
    layer = _StreamLayer(lambda event: [events.put(e) for e in translator.translate(event)])
    layer.engine = engine
    engine.layer(layer)

    def drive() -> None:
        try:
            for _ in engine.run():
                pass
        except Exception:  # noqa: BLE001 - the failure was already reported as GraphRunFailedEvent
            pass
        finally:
            events.put(None)

    worker = threading.Thread(target=drive, daemon=True)
    worker.start()
    while (event := events.get()) is not None:
        yield event
    worker.join()
    for variable in document["workflow"].get("conversation_variables") or []:
        segment = pool.get(("conversation", variable["name"]))
        if segment is not None:
            conversation.variables[variable["name"]] = jsonable(segment.value)
