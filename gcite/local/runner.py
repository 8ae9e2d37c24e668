"""Run a chatflow DSL on graphon (Dify's workflow engine) and emit the stream as Dify's Service API sends it.

What Dify would provide is injected through graphon's protocols:
- Code nodes run graphon's own sandbox program in a local Python subprocess (no sandbox server);
- Knowledge Retrieval is a local node over the built-in knowledge base, returning items in Dify's `result` shape and
  applying the node's manual metadata conditions with Dify's operator semantics (`gcite.local.dify_metadata`);
- G-Cite's plugin tools run in the real plugin process (`python -m main`, the daemon's stdio protocol), their
  messages streamed as they come; a tool's call to the model (`cited_answer`) is answered by the runner's LLM;
- web search (the official Tavily plugin, or an HTTP Request node to Bocha) is answered from built-in samples;
- the LLM is any `LLMProtocol`: by default the built-in extractive stand-in (`gcite.local.llm`).

The Answer stream goes through graphon's `ResponseStreamFilter` inside the engine's event dispatch, one event at a
time, so the order is the order Dify shows with a real (slow) LLM, whatever the speed of the model here.

Around graphon, the runner also enforces what Dify's `api/` enforces, with Dify's messages (`gcite.local.dify_rules`):
variable ids that are UUIDs, the Start form's input validation, the Code-node output limits (settable with Dify's
`CODE_MAX_*` environment variables), and the Service API stream's order, pings and fields.
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
from pathlib import Path
from typing import Any

from gcite import ROOT, load_yaml
from gcite.local.dify_metadata import admits
from gcite.local.dify_rules import (
    FormInputRejected,
    check_nested_text,
    check_variable_ids,
    code_settings,
    pydantic_json,
    start_variables,
    validate_query,
    validate_start_inputs,
)
from gcite.local.engine import (
    ArrayObjectSegment,
    BaseNodeData,
    BuiltinNodeTypes,
    CodeLanguage,
    CodeNode,
    CodeNodeData,
    DslCredentials,
    DslKind,
    Graph,
    GraphEngine,
    GraphEngineConfig,
    GraphEngineLayer,
    GraphEventFilterContext,
    GraphInitParams,
    GraphRuntimeState,
    HttpRequestNode,
    HttpRequestNodeData,
    HttpRequestNodeDependencies,
    InMemoryChannel,
    LLMNode,
    LLMNodeData,
    LLMUsage,
    Node,
    NodeRunResult,
    ResponseStreamFilter,
    SandboxCodeExecutionError,
    SegmentType,
    SlimDslNodeFactory,
    SlimToolNodeRuntime,
    ToolNode,
    ToolNodeData,
    ToolNodeError,
    TypeMismatchError,
    VariablePool,
    WorkflowNodeExecutionMetadataKey,
    WorkflowNodeExecutionStatus,
    _code_limits,
    _normalize_graph_config,
    _Python3TemplateTransformer,
    _select_root_node_id,
    _TextOnlyFileSaver,
    _TextOnlyHttpResponseFileManager,
    _UnsupportedHttpFileReferenceFactory,
    _UnsupportedHttpRequestFileManager,
    _UnsupportedToolFileManager,
    build_http_request_config,
    build_segment_with_type,
    convert_template,
)
from gcite.local.knowledge import load_json, result_items
from gcite.local.llm import ExtractiveModel, invocation_chunks
from gcite.local.nodes_extra import LocalOnlyHttpClient
from gcite.local.nodes_extra import create_node as create_extra_node
from gcite.local.plugin_process import PluginProcess
from gcite.local.service_api import PING, PING_INTERVAL, Conversation, ServiceApiConverter, plugin_file
from gcite.local.web_search import SampleSearchHttpClient, tavily_messages

GCITE_PLUGIN = "gcite/gcite:"
TOOL_MESSAGE_TIMEOUT = 300  # seconds a tool may go without a message (a model writing slowly), then the call fails
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
    """graphon's sandbox program (byte for byte what dify-sandbox receives), run by a local Python.

    Like dify-sandbox, which writes the program to a file, the program never goes through the command line: it is
    read from stdin, so a Code node's inputs (base64 inside the program) may be megabytes long."""

    timeout: float = 60  # Dify's CODE_EXECUTION_READ_TIMEOUT default

    def execute(self, *, language: CodeLanguage, code: str, inputs: Mapping[str, Any]) -> Mapping[str, Any]:
        if language != CodeLanguage.PYTHON3:
            raise SandboxCodeExecutionError(f"the local runner executes python3 Code nodes only, not {language}")
        program = _Python3TemplateTransformer.build_program(code=code, inputs=inputs)
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-X", "utf8", "-"],
                input=program.code,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                timeout=self.timeout,
            )
        except subprocess.TimeoutExpired:
            raise SandboxCodeExecutionError(f"the code ran longer than {self.timeout:g} s") from None
        # dify-sandbox answers the program's whole stderr as `error`, and Dify's Code node fails with it whenever it
        # is not empty (code_executor.py), whatever the exit status
        if done.stderr:
            raise SandboxCodeExecutionError(done.stderr)
        if done.returncode != 0:
            raise SandboxCodeExecutionError(f"the code exited with status {done.returncode}")
        return _Python3TemplateTransformer.parse_result(done.stdout)

    def is_execution_error(self, error: Exception) -> bool:
        return isinstance(error, SandboxCodeExecutionError)


class SavedPromptSerializer:
    """The LLM node's `process_data.prompts` as Dify saves them (`PromptMessageUtil.
    prompt_messages_to_prompt_for_saving`), for text prompts: chat mode, one {role, text, files} per message;
    completion mode, one {role: "user", text}."""

    ROLES = ("system", "user", "assistant", "tool")

    @staticmethod
    def _text(message: Any) -> str:
        content = message.content
        if isinstance(content, list):
            return "".join(getattr(part, "data", "") for part in content if str(getattr(part, "type", "")) == "text")
        return str(content or "")

    def serialize(self, *, model_mode: Any, prompt_messages: Any) -> list[dict[str, Any]]:
        if str(getattr(model_mode, "value", model_mode)) != "chat":
            return [{"role": "user", "text": self._text(prompt_messages[0])}] if prompt_messages else []
        return [
            {"role": role, "text": self._text(m), "files": []}
            for m in prompt_messages
            if (role := str(getattr(m.role, "value", m.role))) in self.ROLES
        ]


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
    log: Callable[[dict[str, Any]], None] | None = None  # what the local retrieval admitted (`run --verbose`)

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
        documents = self.knowledge_base.get("documents", [])
        admitted = [d for d in documents if filtering is None or admits(filtering, d["doc_metadata"])]
        top_k = int((self.node_data.multiple_retrieval_config or {}).get("top_k") or 4)
        result = result_items({**self.knowledge_base, "documents": admitted}, query.value, top_k)
        if self.log is not None:
            self.log(
                {
                    "node_id": self.id,
                    "query": query.value,
                    "metadata_filtering_conditions": filtering,
                    "documents": len(documents),
                    "admitted": [d["document_id"] for d in admitted],
                    "result": [item["metadata"]["segment_id"] for item in result],
                }
            )
        # Dify's node: process_data carries the retrieval's model usage (none without a metadata or rerank model),
        # execution_metadata its tokens, price and currency.
        usage = LLMUsage.empty_usage()
        return NodeRunResult(
            status=WorkflowNodeExecutionStatus.SUCCEEDED,
            inputs={"query": query.value},
            process_data={"usage": usage.model_dump()},  # prices: Decimal → "0.0", as Dify
            outputs={"result": ArrayObjectSegment(value=result)},
            metadata={
                WorkflowNodeExecutionMetadataKey.TOTAL_TOKENS: usage.total_tokens,
                WorkflowNodeExecutionMetadataKey.TOTAL_PRICE: usage.total_price,
                WorkflowNodeExecutionMetadataKey.CURRENCY: usage.currency,
            },
            llm_usage=usage,
        )

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
        return {
            "logical_operator": data.metadata_filtering_conditions.get("logical_operator", "and"),
            "conditions": conditions,
        }


class SharedPlugins:
    """Plugin processes shared by every `Services` given them: one per plugin folder, started on first use and again
    when it died, as the daemon runs one process per installed plugin for every app and conversation. Each tool call
    brings its own Services' model (a tool's backwards `llm` call goes to the LLM of the conversation that called
    it), so any number of conversations may use one process at once. `close()` stops them all. (Services given none
    keep one of their own.)"""

    def __init__(self) -> None:
        # looked up when this is made: after a dify_plugin import it must be gevent's lock, not the original
        self._lock = threading.Lock()
        self._processes: dict[Path, PluginProcess] = {}

    def process(self, plugin_dir: Path) -> PluginProcess:
        with self._lock:
            process = self._processes.get(plugin_dir)
            if process is None or not process.alive:
                process = self._processes[plugin_dir] = PluginProcess(plugin_dir, sys.executable)
            return process

    def close(self) -> None:
        with self._lock:
            processes, self._processes = list(self._processes.values()), {}
        for process in processes:
            process.close()


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
    retrieval_log: Callable[[dict[str, Any]], None] | None = None  # sees what the local retrieval admitted
    code_environ: Mapping[str, str] | None = None  # where CODE_MAX_* are read (default: os.environ)
    # the plugin process of G-Cite's tools: from these shared ones (which `close()` leaves running), or None to start
    # one for these services alone (which `close()` stops)
    shared_plugins: SharedPlugins | None = None
    # those of these services alone: tool nodes run in parallel (the plugin chatflow's acl_filter and web), and one
    # process is started once. Made with the services, so after a dify_plugin import, with gevent's lock
    _own_plugins: SharedPlugins = field(default_factory=SharedPlugins, repr=False, compare=False)

    def plugin(self) -> PluginProcess:
        plugins = self.shared_plugins if self.shared_plugins is not None else self._own_plugins
        return plugins.process(self.plugin_dir)

    def answer_model_call(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """A tool's backwards model call, answered by the same LLM the LLM nodes get (as Dify's inner API would:
        whichever model the tool names)."""
        return invocation_chunks(self.llm, request)

    def close(self) -> None:
        self._own_plugins.close()

    def credentials_for(self, plugin_id: str) -> dict[str, Any]:
        return next((v for k, v in self.tool_credentials.items() if plugin_id.startswith(k)), {})

    def invoke(self, plugin_id: str, action: str, data: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
        """graphon's tool `action_invoker`: the plugin daemon's side of a tool call."""
        tool = str(data.get("tool"))
        if action == "get_tool_runtime_parameters":
            yield {"parameters": self._declared_parameters(plugin_id, tool)}
            return
        parameters = dict(data.get("tool_parameters") or {})
        self.tool_calls.append(
            {
                "plugin_id": plugin_id,
                "tool": tool,
                "parameters": parameters,
                "credentials": dict(data.get("credentials") or {}),
            }
        )
        if plugin_id.startswith(TAVILY_PLUGIN):
            # the official plugin reports every failure as a text message: the node succeeds
            yield from tavily_messages(
                parameters, fail=self.tavily_fail, api_key=(data.get("credentials") or {}).get("tavily_api_key")
            )
            return
        if not plugin_id.startswith(GCITE_PLUGIN):
            raise ToolNodeError(f"the local runner cannot run plugin {plugin_id}")
        call = self.plugin().start_tool(
            str(data.get("provider")),
            tool,
            parameters,
            credentials=self.credentials_for(plugin_id),
            llm_handler=self.answer_model_call,
        )
        yield from call.stream(timeout=TOOL_MESSAGE_TIMEOUT)
        if call.error is not None:
            raise ToolNodeError(call.error.get("message") or "the plugin failed")

    @staticmethod
    def _declared_parameters(plugin_id: str, tool: str) -> list[dict[str, Any]]:
        if plugin_id.startswith(TAVILY_PLUGIN):
            return TAVILY_PARAMETERS
        declaration = plugin_file(f"tools/{tool}.yaml")
        return [
            {k: p.get(k) for k in ("name", "type", "form", "required", "default")}
            for p in declaration.get("parameters", [])
        ]


# --- graphon wiring -----------------------------------------------------------------------------------------


class LocalNodeFactory(SlimDslNodeFactory):
    """graphon's DSL node factory with Dify's services replaced by local ones."""

    services: Services
    code_settings: Any = None

    def with_runtime_state(self, graph_runtime_state: GraphRuntimeState) -> "LocalNodeFactory":
        """The factory an iteration's or loop's inner graph builds its nodes with: the same local services."""
        factory = super().with_runtime_state(graph_runtime_state)
        factory.services, factory.code_settings = self.services, self.code_settings
        return factory

    def create_node(self, node_config: Any) -> Node:
        request = self._node_request(node_config)
        payload, node_type = request.data_payload, request.node_type
        common = {
            "node_id": request.node_id,
            "graph_init_params": self.graph_init_params,
            "graph_runtime_state": self.graph_runtime_state,
        }
        extra = create_extra_node(self, node_type, payload, common, self.services.llm, (GCITE_PLUGIN, TAVILY_PLUGIN))
        if extra is not None:  # the other node types real chatflows contain (gcite/local/nodes_extra.py)
            return extra
        if node_type == BuiltinNodeTypes.KNOWLEDGE_RETRIEVAL:
            node = LocalKnowledgeRetrievalNode(data=KnowledgeRetrievalData.model_validate(payload), **common)
            node.knowledge_base = self.services.knowledge_base
            node.log = self.services.retrieval_log
            return node
        if node_type == BuiltinNodeTypes.CODE:
            return CodeNode(
                data=CodeNodeData.model_validate(payload),
                code_executor=LocalCodeExecutor(),
                code_limits=_code_limits(self.code_settings),
                **common,
            )
        if node_type == BuiltinNodeTypes.LLM:
            return LLMNode(
                data=LLMNodeData.model_validate(payload),
                model_instance=self.services.llm,
                llm_file_saver=_TextOnlyFileSaver(),
                prompt_message_serializer=SavedPromptSerializer(),
                default_query_selector=("sys", "query"),
                **common,
            )
        if node_type == BuiltinNodeTypes.TOOL:
            data = ToolNodeData.model_validate(payload)
            plugin_id = data.plugin_unique_identifier or ""
            runtime = SlimToolNodeRuntime(
                config=self.slim_client_config,
                plugin_id=plugin_id,
                provider=data.provider_id.split("/")[-1],
                provider_id=data.provider_id,
                tool_name=data.tool_name,
                credentials=self.services.credentials_for(plugin_id),
                action_invoker=self.services.invoke,
            )
            return ToolNode(data=data, tool_file_manager=_UnsupportedToolFileManager(), runtime=runtime, **common)
        if node_type == BuiltinNodeTypes.HTTP_REQUEST:
            return HttpRequestNode(
                data=HttpRequestNodeData.model_validate(payload),
                http_request_config=build_http_request_config(),
                dependencies=HttpRequestNodeDependencies(
                    tool_file_manager_factory=_TextOnlyHttpResponseFileManager,
                    file_manager=_UnsupportedHttpRequestFileManager(),
                    file_reference_factory=_UnsupportedHttpFileReferenceFactory(),
                    http_client=LocalOnlyHttpClient(self.services.search_http),
                ),
                **common,
            )
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


def parse_chatflow(dsl_text: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The DSL document, its normalized graph and root node id; refused as Dify would refuse it to run."""
    document = load_yaml(dsl_text)
    if not isinstance(document, dict) or not isinstance((document.get("workflow") or {}).get("graph"), dict):
        raise ValueError("not a chatflow DSL: it has no workflow.graph")
    check_variable_ids(document["workflow"])
    graph_config = _normalize_graph_config(document["workflow"]["graph"], kind=DslKind.APP)
    return document, graph_config, _select_root_node_id(graph_config)


def declared(value_type: Any, value: Any) -> Any:
    """A conversation variable's value as the segment of its declared type (Dify builds it from the DSL's
    value_type: an empty list is array[object], not array[any]); the plain value when the type does not fit."""
    try:
        return build_segment_with_type(SegmentType(value_type), value)
    except (ValueError, TypeMismatchError):
        return value


def rejected_inputs_stream(
    message: str, inputs: Mapping[str, Any], workflow_id: str, run_id: str
) -> Iterator[dict[str, Any]]:
    """Dify's answer (HTTP 200) when `_prepare_user_inputs` rejects a Start-form value: a ping, `workflow_started`
    with the inputs as sent, `workflow_finished` failed with Dify's message; no conversation or message yet (no
    conversation_id, message_id or created_at on the events; the task id is the run id)."""
    now = int(time.time())
    head = {"task_id": run_id, "workflow_run_id": run_id}
    yield dict(PING)
    yield {
        "event": "workflow_started",
        **head,
        "data": {
            "id": run_id,
            "workflow_id": workflow_id,
            "inputs": pydantic_json(dict(inputs)),
            "created_at": now,
            "reason": "initial",
        },
    }
    yield {
        "event": "workflow_finished",
        **head,
        "data": {
            "id": run_id,
            "workflow_id": workflow_id,
            "status": "failed",
            "outputs": None,
            "error": message,
            "elapsed_time": 0.0,
            "total_tokens": 0,
            "total_steps": 0,
            "created_by": {},
            "created_at": now,
            "finished_at": now,
            "exceptions_count": 1,
            "files": [],
        },
    }


def run_chatflow(
    dsl_text: str,
    query: str,
    inputs: Mapping[str, Any] | None = None,
    services: Services | None = None,
    conversation: Conversation | None = None,
    *,
    ping_interval: float = PING_INTERVAL,
) -> Iterator[dict[str, Any]]:
    """Execute one turn of a chatflow; yields the Service API events (dicts) as they happen, a ping (`PING`, which
    `dify_sse` renders as `event: ping`) first and then every `ping_interval` seconds of the run.

    Before anything is yielded, what Dify refuses is refused with Dify's message (`DifyRefusal`, a ValueError):
    non-UUID variable ids, an invalid query or CODE_MAX_* setting, text that is not Unicode. A Start-form input
    that fails Dify's validation is streamed as Dify streams it (`rejected_inputs_stream`)."""
    services = services or Services()
    conversation = conversation or Conversation()
    document, graph_config, root = parse_chatflow(dsl_text)
    query = validate_query(query)
    limits = code_settings(services.code_environ)
    app_name = str((document.get("app") or {}).get("name") or "gcite")
    app_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"gcite-local-app:{app_name}"))
    workflow_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"gcite-local-workflow:{app_name}"))
    run_id = str(uuid.uuid4())
    try:
        prepared = validate_start_inputs(start_variables(graph_config, root), dict(inputs or {}))
    except FormInputRejected as rejected:
        check_nested_text(dict(inputs or {}), "inputs")  # what is streamed back must be text
        yield from rejected_inputs_stream(str(rejected), dict(inputs or {}), workflow_id, run_id)
        return
    conversation.dialogue_count += 1

    pool = VariablePool()
    system = {
        "query": query,
        "files": [],
        "conversation_id": conversation.conversation_id,
        "user_id": conversation.user,
        "dialogue_count": conversation.dialogue_count,
        "app_id": app_id,
        "workflow_id": workflow_id,
        "workflow_run_id": run_id,
    }
    for key, value in system.items():
        pool.add(("sys", key), value)
    for variable in document["workflow"].get("conversation_variables") or []:
        value = conversation.variables.get(variable["name"], variable.get("value"))
        pool.add(("conversation", variable["name"]), declared(variable.get("value_type"), value))
    for variable in document["workflow"].get("environment_variables") or []:
        pool.add(("env", variable["name"]), variable.get("value"))
    for key, value in prepared.items():
        pool.add((root, key), value)

    init = GraphInitParams(workflow_id=workflow_id, graph_config=graph_config, run_context={}, call_depth=0)
    state = GraphRuntimeState(variable_pool=pool, start_at=time.time())
    factory = LocalNodeFactory(
        graph_config=graph_config,
        graph_init_params=init,
        graph_runtime_state=state,
        credentials=DslCredentials(),
        dependencies=[],
    )
    factory.services = services
    factory.code_settings = limits
    graph = Graph.init(graph_config=graph_config, node_factory=factory, root_node_id=root)
    engine = GraphEngine(
        workflow_id=workflow_id,
        graph=graph,
        graph_runtime_state=state,
        command_channel=InMemoryChannel(),
        config=GraphEngineConfig(),
    )

    app_inputs = {**prepared, **{f"sys.{k}": v for k, v in system.items() if k != "conversation_id"}}
    converter = ServiceApiConverter(graph_config, conversation, app_inputs, workflow_id, run_id, state)
    events: queue.Queue[list[dict[str, Any]] | None] = queue.Queue()  # the responses of one engine event together
    layer = _StreamLayer(lambda event: events.put(converter.convert(event)))
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
    yield dict(PING)  # Dify pings as soon as the stream starts waiting
    started, pings, ended = time.time(), 0, False
    worker.start()
    while True:
        try:
            batch = events.get(timeout=min(1.0, ping_interval / 4))
        except queue.Empty:
            batch = []
        if batch is None:
            break
        yield from batch
        ended = ended or any(e["event"] in ("workflow_finished", "error") for e in batch)
        if not ended and (time.time() - started) // ping_interval > pings:
            pings = int((time.time() - started) // ping_interval)
            yield dict(PING)
    worker.join()
    for variable in document["workflow"].get("conversation_variables") or []:
        segment = pool.get(("conversation", variable["name"]))
        if segment is not None:
            conversation.variables[variable["name"]] = pydantic_json(segment.value, decimal=float)


# --- `python -m gcite run` ------------------------------------------------------------------------------------


def parse_inputs(text: str) -> dict[str, Any]:
    """`--inputs`: a JSON object (standard JSON: no NaN or Infinity), with a clear error for anything else."""

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON value")

    try:
        inputs = json.loads(text, parse_constant=no_constant)
    except RecursionError:
        raise ValueError("--inputs is nested too deeply") from None
    except ValueError as error:
        raise ValueError(f"--inputs is not JSON: {error}") from None
    if not isinstance(inputs, dict):
        raise ValueError("--inputs must be a JSON object")
    return inputs
