"""The node types real chatflows contain beyond G-Cite's own, for the local runner.

graphon's DSL node factory builds most of them itself; what it cannot build here is built in `create_node`:
- question classifier and parameter extractor: graphon's nodes, with a model that answers them in their formats
  when the runner's model is the built-in stand-in (`StandInAnswers`): the class whose name shares most with the
  question (else the first); the parameters as JSON of their declared types. A real model (an OpenAI-compatible
  endpoint) answers them itself;
- the legacy variable aggregator (`variable-assigner`, DSL 0.1.x): graphon's variable aggregator, as Dify maps it;
- document extractor: the runner takes no files, so it fails as graphon's fails without a file (graphon's own node
  needs file parsers this project does not install).
`LocalOnlyHttpClient` lets an HTTP Request node reach 127.0.0.1 only; anything else goes to the runner's search
client (which answers Bocha from built-in samples and fails every other host as a node fails without network).
Another plugin's tool node (`UninstalledPluginToolNode`) fails as Dify fails it when the plugin is not installed;
graphon's engine then applies the node's error strategy.
"""

import json
import re
from collections.abc import Callable, Generator, Mapping, Sequence
from functools import partialmethod
from typing import Any
from urllib.parse import urlsplit

import requests

from gcite.local.engine import (
    AssistantPromptMessage,
    BaseNodeData,
    BuiltinNodeTypes,
    HttpResponse,
    LLMResult,
    LLMResultChunk,
    LLMResultChunkDelta,
    LLMUsage,
    Node,
    NodeRunResult,
    ParameterExtractorNode,
    ParameterExtractorNodeData,
    PromptMessage,
    QuestionClassifierNode,
    QuestionClassifierNodeData,
    QuestionClassifierNodeDependencies,
    Segment,
    ToolNodeData,
    VariableAggregatorNode,
    VariableAggregatorNodeData,
    VariablePool,
    WorkflowNodeExecutionStatus,
    _DefaultJinja2TemplateRenderer,
    _PassthroughPromptMessageSerializer,
    _TextOnlyFileSaver,
)
from gcite.local.knowledge import relevance
from gcite.local.llm import DELTA_SIZE, ExtractiveModel

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


# --- the stand-in's answers -------------------------------------------------------------------------------------


def _question(pool: VariablePool, selector: Sequence[str]) -> str:
    segment = pool.get(list(selector))
    value = segment.value if isinstance(segment, Segment) else segment
    return value if isinstance(value, str) else ("" if value is None else json.dumps(value, ensure_ascii=False))


def classify(question: str, classes: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The class whose name shares most with the question; the first when none shares anything."""
    best, best_score = classes[0], 0.0
    for item in classes:
        score = relevance(question, str(item.get("name") or ""))
        if score > best_score:
            best, best_score = item, score
    return best


def extract(question: str, parameters: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Each declared parameter as a value of its type taken from the question (the question itself for text, its
    first number for numbers, the best option for a select)."""
    numbers = NUMBER.findall(question)
    values: dict[str, Any] = {}
    for parameter in parameters:
        kind = str(parameter.get("type") or "string")
        options = parameter.get("options") or []
        if options:
            value: Any = max(options, key=lambda o: relevance(question, str(o)))
        elif kind == "number":
            value = float(numbers[0]) if numbers and "." in numbers[0] else int(numbers[0]) if numbers else 0
        elif kind in ("bool", "boolean"):
            value = False
        elif kind.startswith("array[number"):
            value = [float(n) if "." in n else int(n) for n in numbers]
        elif kind.startswith("array[bool"):
            value = []
        elif kind.startswith("array"):
            value = [question]
        elif kind == "object":
            value = {}
        else:
            value = question
        if kind.startswith("array") and options:
            value = [value]
        values[str(parameter.get("name"))] = value
    return values


class StandInAnswers:
    """The runner's model for one classifier or extractor node. With the built-in stand-in, `answer()` writes the
    node's JSON; with a real model the model answers (a non-streamed call is collected into one result)."""

    def __init__(self, model: Any, answer: Callable[[], str] | None) -> None:
        self._model, self._answer = model, answer
        self.prompts: list[Sequence[PromptMessage]] = []

    def __getattr__(self, name: str) -> Any:  # provider, model_name, parameters, stop, schema, token counts
        return getattr(self._model, name)

    @property
    def parameters(self) -> Mapping[str, Any]:
        return self._model.parameters

    @parameters.setter
    def parameters(self, value: Mapping[str, Any]) -> None:
        self._model.parameters = value

    def invoke_llm(
        self,
        *,
        prompt_messages: Sequence[PromptMessage],
        model_parameters: Mapping[str, Any],
        tools: Any = None,
        stop: Any = None,
        stream: bool = True,
    ) -> Any:
        self.prompts.append(list(prompt_messages))
        if self._answer is None:
            chunks = self._model.invoke_llm(
                prompt_messages=prompt_messages, model_parameters=model_parameters, tools=tools, stop=stop, stream=True
            )
            if stream:
                return chunks
            text = "".join(str(c.delta.message.content or "") for c in chunks)
            return self._result(prompt_messages, text)
        text = self._answer()
        return self._chunks(prompt_messages, text) if stream else self._result(prompt_messages, text)

    def _result(self, prompt_messages: Sequence[PromptMessage], text: str) -> LLMResult:
        return LLMResult(
            model=self.model_name,
            prompt_messages=list(prompt_messages),
            message=AssistantPromptMessage(content=text),
            usage=LLMUsage.empty_usage(),
        )

    def _chunks(self, prompt_messages: Sequence[PromptMessage], text: str) -> Generator[LLMResultChunk]:
        pieces = [text[i : i + DELTA_SIZE] for i in range(0, len(text), DELTA_SIZE)] or [""]
        for index, piece in enumerate(pieces):
            last = index == len(pieces) - 1
            yield LLMResultChunk(
                model=self.model_name,
                prompt_messages=list(prompt_messages),
                delta=LLMResultChunkDelta(
                    index=index,
                    message=AssistantPromptMessage(content=piece),
                    usage=LLMUsage.empty_usage() if last else None,
                    finish_reason="stop" if last else None,
                ),
            )


# --- HTTP -------------------------------------------------------------------------------------------------------


class LocalOnlyHttpClient:
    """graphon's `HttpClientProtocol`: requests to 127.0.0.1 go out for real; everything else goes to `fallback`
    (the runner's search client: built-in Bocha samples, no network for any other host)."""

    def __init__(self, fallback: Any, timeout: float = 10) -> None:
        self.fallback, self.timeout = fallback, timeout

    @property
    def max_retries_exceeded_error(self) -> type[Exception]:
        return self.fallback.max_retries_exceeded_error

    @property
    def request_error(self) -> type[Exception]:
        return self.fallback.request_error

    def _send(self, method: str, url: str, kwargs: dict[str, Any]) -> HttpResponse:
        if urlsplit(url).hostname not in LOCAL_HOSTS:
            return getattr(self.fallback, method.lower())(url, **kwargs)
        allowed = {k: v for k, v in kwargs.items() if k in ("headers", "params", "data", "json", "files", "content")}
        if "content" in allowed:
            allowed["data"] = allowed.pop("content")
        timeout = kwargs.get("timeout")
        try:
            response = requests.request(
                method,
                url,
                timeout=timeout if isinstance(timeout, (int, float)) else self.timeout,
                allow_redirects=bool(kwargs.get("follow_redirects")),
                **allowed,
            )
        except requests.RequestException as error:
            raise self.request_error(f"request to {url} failed: {error}") from None
        return HttpResponse(
            status_code=response.status_code,
            headers=dict(response.headers),
            content=response.content,
            url=url,
            reason_phrase=response.reason or "",
        )

    def _method(self, method: str, url: str, max_retries: int = 0, **kwargs: Any) -> HttpResponse:
        return self._send(method, url, kwargs)

    get = partialmethod(_method, "GET")
    post = partialmethod(_method, "POST")
    put = partialmethod(_method, "PUT")
    patch = partialmethod(_method, "PATCH")
    delete = partialmethod(_method, "DELETE")
    head = partialmethod(_method, "HEAD")


# --- another plugin's tool --------------------------------------------------------------------------------------


class UninstalledPluginToolNode(Node[ToolNodeData]):
    """A tool node of a plugin the runner does not have: it fails as Dify's fails when the plugin is not installed
    (`ToolManager`: "plugin provider … not found"); the engine then applies the node's error strategy."""

    node_type = BuiltinNodeTypes.TOOL

    @classmethod
    def version(cls) -> str:
        return "1"

    def _run(self) -> NodeRunResult:
        return NodeRunResult(
            status=WorkflowNodeExecutionStatus.FAILED,
            inputs={},
            error=f"plugin provider {self.node_data.provider_id} not found",
            error_type="ToolProviderNotFoundError",
        )


# --- document extractor -----------------------------------------------------------------------------------------


class DocumentExtractorNodeData(BaseNodeData):
    """graphon's `DocumentExtractorNodeData` (its package imports the parsers with it)."""

    type: str = BuiltinNodeTypes.DOCUMENT_EXTRACTOR
    variable_selector: list[str]


class LocalDocumentExtractorNode(Node[DocumentExtractorNodeData]):
    """graphon's document extractor needs file parsers (python-docx, pandas, …) this project does not install, and
    the runner takes no files: this node fails as graphon's fails for a missing file variable, and gives an empty
    text for an empty one (what graphon extracts from no file)."""

    node_type = BuiltinNodeTypes.DOCUMENT_EXTRACTOR

    @classmethod
    def version(cls) -> str:
        return "1"

    def _run(self) -> NodeRunResult:
        selector = list(self.node_data.variable_selector)
        variable = self.graph_runtime_state.variable_pool.get(selector)
        if variable is None:
            return NodeRunResult(
                status=WorkflowNodeExecutionStatus.FAILED, error=f"File variable not found for selector: {selector}"
            )
        if variable.value:
            return NodeRunResult(
                status=WorkflowNodeExecutionStatus.FAILED,
                error="the local runner takes no files, so it extracts no document",
            )
        return NodeRunResult(
            status=WorkflowNodeExecutionStatus.SUCCEEDED,
            inputs={"variable_selector": selector},
            outputs={"text": [] if isinstance(variable.value, list) else ""},
        )


# --- the factory's extra node types -----------------------------------------------------------------------------


def create_node(
    factory: Any,
    node_type: str,
    payload: Mapping[str, Any],
    common: Mapping[str, Any],
    model: Any,
    local_plugins: Sequence[str] = (),
) -> Node | None:
    """A node the runner's own factory does not build, or None to let it build the node. `factory` is the runner's
    node factory, `model` the runner's LLM, `local_plugins` the plugin id prefixes the runner can run."""
    pool = common["graph_runtime_state"].variable_pool
    if node_type == BuiltinNodeTypes.TOOL:
        data = ToolNodeData.model_validate(payload)
        plugin = data.plugin_unique_identifier or data.provider_id
        if any(plugin.startswith(prefix) for prefix in local_plugins):
            return None
        return UninstalledPluginToolNode(data=data, **common)
    standin = isinstance(model, ExtractiveModel)
    if node_type == BuiltinNodeTypes.QUESTION_CLASSIFIER:
        data = QuestionClassifierNodeData.model_validate(_vendor(payload))
        classes = [c.model_dump() for c in data.classes]

        def category() -> str:
            chosen = classify(_question(pool, data.query_variable_selector), classes)
            return json.dumps({"category_id": chosen["id"], "category_name": chosen["name"]}, ensure_ascii=False)

        return QuestionClassifierNode(
            data=data,
            dependencies=QuestionClassifierNodeDependencies(
                model_instance=StandInAnswers(model, category if standin else None),
                template_renderer=_DefaultJinja2TemplateRenderer(),
                llm_file_saver=_TextOnlyFileSaver(),
                prompt_message_serializer=_PassthroughPromptMessageSerializer(),
            ),
            **common,
        )
    if node_type == BuiltinNodeTypes.PARAMETER_EXTRACTOR:
        data = ParameterExtractorNodeData.model_validate(_vendor(payload))
        parameters = [{"name": p.name, "type": str(p.type.value), "options": p.options} for p in data.parameters]

        def values() -> str:
            return json.dumps(extract(_question(pool, data.query), parameters), ensure_ascii=False)

        return ParameterExtractorNode(
            data=data,
            model_instance=StandInAnswers(model, values if standin else None),
            prompt_message_serializer=_PassthroughPromptMessageSerializer(),
            **common,
        )
    if node_type == BuiltinNodeTypes.LEGACY_VARIABLE_AGGREGATOR:
        return VariableAggregatorNode(
            data=VariableAggregatorNodeData.model_validate({**payload, "type": BuiltinNodeTypes.VARIABLE_AGGREGATOR}),
            **common,
        )
    if node_type == BuiltinNodeTypes.DOCUMENT_EXTRACTOR:
        return LocalDocumentExtractorNode(data=DocumentExtractorNodeData.model_validate(payload), **common)
    return None


def _vendor(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The node's data as graphon validates it: the model provider named by its vendor (`langgenius/openai/openai`
    → `openai`), as graphon's own factory normalises it."""
    data = dict(payload)
    model = dict(data.get("model") or {})
    provider = str(model.get("provider") or "")
    model["provider"] = provider.split("/")[-1] if provider else "gcite"
    model.setdefault("name", "gcite-stand-in")
    model.setdefault("mode", "chat")
    data["model"] = model
    return data
