"""The one module that imports graphon, Dify's workflow engine (pinned in requirements-engine.txt).

Everything of graphon the local runner uses is named here, its private names included (`_code_limits`,
`_Python3TemplateTransformer`, …: graphon exports no public way to build a node factory or a Code node's limits as
Dify does). When a graphon upgrade moves or renames one, this import fails first, and `tests/local/test_engine.py`
names it; the rest of `gcite/local/` imports from here."""

# ruff: noqa: F401 - this module only re-exports

from graphon.dsl.code_runtime import SandboxCodeExecutionError, _Python3TemplateTransformer
from graphon.dsl.entities import DslCodeSettings, DslCredentials, DslKind
from graphon.dsl.importer import _normalize_graph_config, _select_root_node_id
from graphon.dsl.node_factory import (
    SlimDslNodeFactory,
    _code_limits,
    _DefaultJinja2TemplateRenderer,
    _PassthroughPromptMessageSerializer,
    _TextOnlyFileSaver,
    _TextOnlyHttpResponseFileManager,
    _UnsupportedHttpFileReferenceFactory,
    _UnsupportedHttpRequestFileManager,
    _UnsupportedToolFileManager,
)
from graphon.dsl.tool_runtime import SlimToolNodeRuntime
from graphon.entities.base_node_data import BaseNodeData
from graphon.entities.graph_init_params import GraphInitParams
from graphon.enums import BuiltinNodeTypes, WorkflowNodeExecutionMetadataKey, WorkflowNodeExecutionStatus
from graphon.graph.graph import Graph
from graphon.graph_engine import GraphEngine, GraphEngineConfig, GraphEventFilterContext, ResponseStreamFilter
from graphon.graph_engine.command_channels import InMemoryChannel
from graphon.graph_engine.layers.base import GraphEngineLayer
from graphon.graph_events import (
    GraphRunFailedEvent,
    GraphRunPartialSucceededEvent,
    GraphRunStartedEvent,
    GraphRunSucceededEvent,
    NodeRunExceptionEvent,
    NodeRunFailedEvent,
    NodeRunStartedEvent,
    NodeRunStreamChunkEvent,
    NodeRunSucceededEvent,
)
from graphon.http.response import HttpResponse
from graphon.model_runtime.entities.common_entities import I18nObject
from graphon.model_runtime.entities.llm_entities import LLMResult, LLMResultChunk, LLMResultChunkDelta, LLMUsage
from graphon.model_runtime.entities.message_entities import (
    AssistantPromptMessage,
    PromptMessage,
    SystemPromptMessage,
    UserPromptMessage,
)
from graphon.model_runtime.entities.model_entities import AIModelEntity, FetchFrom, ModelPropertyKey, ModelType
from graphon.node_events.base import NodeRunResult
from graphon.nodes.base.node import Node
from graphon.nodes.code.code_node import CodeNode
from graphon.nodes.code.entities import CodeLanguage, CodeNodeData
from graphon.nodes.http_request.config import build_http_request_config
from graphon.nodes.http_request.entities import HttpRequestNodeData
from graphon.nodes.http_request.node import HttpRequestNode, HttpRequestNodeDependencies
from graphon.nodes.llm import LLMNode, LLMNodeData
from graphon.nodes.parameter_extractor.entities import ParameterExtractorNodeData
from graphon.nodes.parameter_extractor.parameter_extractor_node import ParameterExtractorNode
from graphon.nodes.question_classifier import (
    QuestionClassifierNode,
    QuestionClassifierNodeData,
    QuestionClassifierNodeDependencies,
)
from graphon.nodes.tool.entities import ToolNodeData
from graphon.nodes.tool.exc import ToolNodeError
from graphon.nodes.tool.tool_node import ToolNode
from graphon.nodes.variable_aggregator.entities import VariableAggregatorNodeData
from graphon.nodes.variable_aggregator.variable_aggregator_node import VariableAggregatorNode
from graphon.runtime.graph_runtime_state import GraphRuntimeState
from graphon.runtime.variable_pool import VariablePool
from graphon.variables.factory import TypeMismatchError, build_segment_with_type
from graphon.variables.input_entities import VariableEntity, VariableEntityType
from graphon.variables.segments import ArrayObjectSegment, Segment
from graphon.variables.template_resolution import convert_template
from graphon.variables.types import SegmentType
