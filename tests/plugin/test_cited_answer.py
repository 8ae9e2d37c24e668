"""The `cited_answer` tool: in-process through the SDK's executor with a scripted model, and over stdio in the real
plugin process with the backwards model call answered as the daemon answers it."""

import copy
import json
import re
import sys
import time

import pytest

from citations.answer import NOTICES
from gcite.local.plugin_process import PluginProcess
from tests.support import ROOT, sdk
from tests.support.yamltext import safe_load

MODEL = {
    "provider": "langgenius/openai/openai",
    "model": "gpt-4o-mini",
    "model_type": "llm",
    "mode": "chat",
    "completion_params": {"temperature": 0.2},
}
CHUNKS = [
    {
        "id": 1,
        "document_title": "Meeting room rules",
        "source_type": "rag",
        "dataset_name": "Building KB",
        "display_subtitle": "Building KB",
        "url": "https://kb.example.com/rooms.pdf",
        "content": "Rooms are booked in the app, for at most 4 hours.",
    },
    {
        "id": 2,
        "document_title": "Parking",
        "source_type": "web",
        "site_name": "City",
        "display_subtitle": "City",
        "url": "https://city.example.com/p",
        "content": "Parking costs 5 per hour.",
    },
]
CONTEXT = "[C:1]\nRooms are booked in the app, for at most 4 hours.\n\n[C:2]\nParking costs 5 per hour."
ANSWER = "Rooms are booked in the app [C:2][C:1], for at most 4 hours [C:1]. Also [C:7]."
PARAMETERS = {
    "model": MODEL,
    "query": "How do I book a room?",
    "context": CONTEXT,
    "chunk_metadata": CHUNKS,
    "instructions": "You are the building's assistant.",
}
SUP = re.compile(r'<sup(?: title="[^"]*")?>\[(\d+)\]\(#gcite-(\d+)\)</sup>')


def load(path):
    return safe_load((ROOT / path).read_text(encoding="utf-8"))


# --- in-process, through the SDK ----------------------------------------------------------------------------------


class ScriptedModel:
    """`session.model.llm`: streams `pieces` (text, or ("sleep", s), or an exception to raise) as SDK chunks."""

    def __init__(self, pieces, usage=None):
        self.pieces, self.usage, self.calls = pieces, usage, []

    def invoke(self, model_config, prompt_messages, tools=None, stop=None, stream=True):
        from dify_plugin.entities.model.llm import LLMResultChunk, LLMResultChunkDelta, LLMUsage
        from dify_plugin.entities.model.message import AssistantPromptMessage

        self.calls.append({"model_config": model_config, "prompt_messages": prompt_messages, "stream": stream})

        def chunks():
            for index, piece in enumerate(self.pieces):
                if isinstance(piece, BaseException):
                    raise piece
                if isinstance(piece, tuple):
                    time.sleep(piece[1])
                    continue
                yield LLMResultChunk(
                    model="m", delta=LLMResultChunkDelta(index=index, message=AssistantPromptMessage(content=piece))
                )
            if self.usage:
                usage = LLMUsage.empty_usage()
                usage.prompt_tokens, usage.completion_tokens, usage.total_tokens = self.usage
                yield LLMResultChunk(
                    model="m",
                    delta=LLMResultChunkDelta(
                        index=len(self.pieces), message=AssistantPromptMessage(content=""), usage=usage
                    ),
                )

        return chunks()


def run_tool(reg, parameters, model, window=None):
    """[(seconds since start, variable name, value, stream)] of every message, in order."""
    from dify_plugin import DifyPluginEnv
    from dify_plugin.core.entities.plugin.request import ToolInvokeRequest
    from dify_plugin.core.plugin_executor import PluginExecutor

    tool_class = reg.get_tool_cls("gcite", "cited_answer")
    before = tool_class.window
    if window is not None:
        tool_class.window = window
    session = type("FakeSession", (), {})()
    session.session_id = "s-1"
    session.model = type("Models", (), {"llm": model})()
    request = ToolInvokeRequest.model_validate(
        {
            "type": "tool",
            "action": "invoke_tool",
            "user_id": "u",
            "provider": "gcite",
            "tool": "cited_answer",
            "credentials": {},
            "credential_type": "api-key",
            "tool_parameters": copy.deepcopy(parameters),
        }
    )
    out, start = [], time.monotonic()
    try:
        for message in PluginExecutor(DifyPluginEnv(), reg).invoke_tool(session, request):
            body = message.message
            out.append((time.monotonic() - start, body.variable_name, body.variable_value, body.stream))
    finally:
        tool_class.window = before
    return out


def joined(messages, name):
    return "".join(value for _, n, value, stream in messages if n == name and stream)


def plain(messages):
    return {n: value for _, n, value, stream in messages if not stream}


@pytest.fixture(scope="module")
def reg():
    return sdk.registration()


def test_the_tool_is_declared_with_the_model_permission_and_streamed_outputs(reg):
    assert reg.get_tool_cls("gcite", "cited_answer").__name__ == "CitedAnswerTool"
    assert "tools/cited_answer.yaml" in load("provider/gcite.yaml")["tools"]
    assert load("manifest.yaml")["resource"]["permission"]["model"] == {"enabled": True, "llm": True}
    tool = load("tools/cited_answer.yaml")
    parameters = {p["name"]: p for p in tool["parameters"]}
    assert list(parameters) == [
        "model",
        "query",
        "context",
        "chunk_metadata",
        "history",
        "instructions",
        "style",
        "insufficient_phrases",
    ]
    assert {k: parameters["model"][k] for k in ("type", "scope", "form", "required")} == {
        "type": "model-selector",
        "scope": "llm",
        "form": "form",
        "required": True,
    }
    assert [o["value"] for o in parameters["style"]["options"]] == ["html", "plain", "markers"]
    assert set(tool["output_schema"]["properties"]) == {
        "answer",
        "sources",
        "answer_without_markers",
        "citations",
        "invalid_ids",
        "status",
        "uncited_sentences",
        "citation_recall_proxy",
        "citation_precision_proxy",
        "usage",
    }


def test_the_answer_streams_with_clean_citations_then_the_sources_then_the_plain_outputs(reg):
    from dify_plugin.entities.model.message import SystemPromptMessage, UserPromptMessage

    model = ScriptedModel([ANSWER[i : i + 3] for i in range(0, len(ANSWER), 3)], usage=(321, 45, 366))
    messages = run_tool(reg, PARAMETERS, model)
    names = [n for _, n, _, _ in messages]
    last_answer = max(i for i, n in enumerate(names) if n == "answer")
    assert names.index("sources") > last_answer and names[-8:] == [
        "answer_without_markers",
        "citations",
        "invalid_ids",
        "status",
        "uncited_sentences",
        "citation_recall_proxy",
        "citation_precision_proxy",
        "usage",
    ]
    answer = joined(messages, "answer")
    assert "[C:" not in answer and [n for n, _ in SUP.findall(answer)] == ["1", "2", "2"]
    assert re.findall(r'id="gcite-(\d)"', joined(messages, "sources")) == ["1", "2"]
    outputs = plain(messages)
    assert outputs["invalid_ids"] == ["7"] and outputs["status"] == "cited"
    assert [c["id"] for c in outputs["citations"]] == ["2", "1"]
    assert outputs["usage"] == {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366}
    assert outputs["answer_without_markers"] == "Rooms are booked in the app, for at most 4 hours. Also."
    call = model.calls[0]
    assert call["model_config"] == MODEL and call["stream"] is True
    system, user = call["prompt_messages"]
    assert isinstance(system, SystemPromptMessage) and isinstance(user, UserPromptMessage)
    assert system.content.startswith("You are the building's assistant.\n\n# Citation rules")
    assert system.content.endswith(CONTEXT) and user.content == "How do I book a room?"


def test_held_text_goes_out_within_the_window_while_the_model_pauses(reg):
    model = ScriptedModel(["Rooms ", "are booked", ("sleep", 0.6), " in the app [C:1]."])
    messages = run_tool(reg, PARAMETERS, model, window=0.05)
    answer = [(at, value) for at, name, value, _ in messages if name == "answer"]
    assert answer[0][1] == "Rooms"  # the first piece at once (its trailing space waits for what follows)
    held = next(at for at, value in answer if "are booked" in value)
    assert held < 0.4, answer  # sent by the window's timer, not when the model spoke again 0.6 s later
    assert answer[-1][0] >= 0.55


def test_a_model_error_before_any_text_fails_the_tool_with_a_clear_message(reg):
    model = ScriptedModel([RuntimeError("invoke llm model failed: 401 Incorrect API key")])
    with pytest.raises(
        Exception,
        match="cited_answer: the model failed before writing any text: invoke llm model failed: 401 Incorrect API key",
    ) as failed:
        run_tool(reg, PARAMETERS, model)
    assert type(failed.value).__name__ == "ModelFailedError"


def test_a_model_error_after_text_ends_the_answer_with_a_notice_and_lists_what_was_cited(reg):
    model = ScriptedModel(["Rooms are booked in the app [C:1]. Park", "ing [C:", RuntimeError("read llm model failed")])
    messages = run_tool(reg, PARAMETERS, model)
    answer = joined(messages, "answer")
    assert answer.endswith("Parking\n\n" + NOTICES["en"]["error"]) and "[C:" not in answer
    outputs = plain(messages)
    assert outputs["status"] == "model_error" and [c["id"] for c in outputs["citations"]] == ["1"]
    assert 'id="gcite-1"' in joined(messages, "sources")


@pytest.mark.parametrize(
    "change,field",
    [
        ({"model": None}, "model:"),
        ({"style": "markdown"}, "style:"),
        ({"chunk_metadata": [{"id": "x"}]}, "chunk_metadata[0].id"),
        ({"query": ""}, "query:"),
        ({"context": {"x": 1}}, "context:"),
    ],
)
def test_bad_input_raises_naming_the_parameter_and_the_model_is_not_called(reg, change, field):
    model = ScriptedModel(["never"])
    with pytest.raises(ValueError, match=re.escape(field)):
        run_tool(reg, {**PARAMETERS, **change}, model)
    assert model.calls == []


# --- over stdio: the real plugin process, the backwards model call answered as the daemon does ----------------------


@pytest.fixture(scope="module")
def plugin():
    with PluginProcess(ROOT, sys.executable) as process:
        yield process


def test_over_stdio_the_answer_streams_while_the_model_writes(plugin):
    requests = []

    def model(request):
        requests.append(request)
        for index in range(0, len(ANSWER), 4):
            time.sleep(0.02)
            yield sdk.model_chunk(index, ANSWER[index : index + 4])

    call = plugin.start_tool("gcite", "cited_answer", PARAMETERS, llm_handler=model)
    messages = list(call.stream(timeout=60))
    assert call.error is None, call.error
    assert requests[0]["model"] == "gpt-4o-mini" and requests[0]["provider"] == MODEL["provider"]
    assert [m["role"] for m in requests[0]["prompt_messages"]] == ["system", "user"]
    answers = [
        (at, m["message"]["variable_value"]) for at, m in call.timeline if m["message"]["variable_name"] == "answer"
    ]
    assert len(answers) >= 3 and answers[-1][0] - answers[0][0] > 0.2  # it streamed, over the model's 0.4 s
    text = "".join(v for _, v in answers)
    assert "[C:" not in text and [n for n, _ in SUP.findall(text)] == ["1", "2", "2"]
    assert messages[-1]["message"]["variable_name"] == "usage"


def test_over_stdio_model_failures_come_back_as_the_daemon_reports_them(plugin):
    def fails_at_once(request):
        raise RuntimeError("request failed: model quota exceeded")
        yield  # a generator

    call = plugin.start_tool("gcite", "cited_answer", PARAMETERS, llm_handler=fails_at_once)
    assert list(call.stream(timeout=60)) == []
    assert (
        "failed before writing any text: invoke llm model failed: request failed: model quota exceeded"
        in call.error["message"]
    )

    def fails_later(request):
        yield sdk.model_chunk(0, "会议室在小程序中预约[C:1]。")
        raise RuntimeError("request failed: connection reset")

    call = plugin.start_tool(
        "gcite", "cited_answer", {**PARAMETERS, "query": "会议室怎么预约？"}, llm_handler=fails_later
    )
    variables = {}
    for message in call.stream(timeout=60):
        body = message["message"]
        variables[body["variable_name"]] = (
            variables.get(body["variable_name"], "") + body["variable_value"]
            if body["stream"]
            else body["variable_value"]
        )
    assert call.error is None and variables["status"] == "model_error"
    assert variables["answer"].endswith("\n\n" + NOTICES["zh"]["error"])
    assert plugin.alive


def test_over_stdio_without_the_manifest_permission_the_daemon_refuses(plugin):
    allowed = plugin.manifest
    plugin.manifest = json.loads(json.dumps(allowed))
    plugin.manifest["resource"]["permission"]["model"]["llm"] = False
    try:
        call = plugin.start_tool(
            "gcite", "cited_answer", PARAMETERS, llm_handler=lambda r: iter([sdk.model_chunk(0, "x")])
        )
        assert list(call.stream(timeout=60)) == []
    finally:
        plugin.manifest = allowed
    assert "permission denied, you need to enable llm access in plugin manifest" in call.error["message"]


def test_over_stdio_bad_input_and_a_malformed_model_chunk_leave_the_process_up(plugin):
    call = plugin.start_tool("gcite", "cited_answer", {**PARAMETERS, "model": "gpt-4o"}, llm_handler=lambda r: iter(()))
    assert list(call.stream(timeout=60)) == [] and "model:" in call.error["message"]

    def malformed(request):
        yield sdk.model_chunk(0, "Rooms are booked in the app [C:1].")
        yield {"model": "m", "delta": {"index": 1}}  # no message: the SDK cannot read it as a chunk

    call = plugin.start_tool("gcite", "cited_answer", PARAMETERS, llm_handler=malformed)
    variables = {
        m["message"]["variable_name"]: m["message"]["variable_value"]
        for m in call.stream(timeout=60)
        if not m["message"]["stream"]
    }
    assert call.error is None and variables["status"] == "model_error"
    assert plugin.alive and plugin.call_tool("gcite", "validate_citations", {"answer": "ok[C:1]"}).error is None


def test_a_chunk_whose_content_is_a_list_of_parts_gives_its_text_parts():
    from dify_plugin.entities.model.message import ImagePromptMessageContent, TextPromptMessageContent

    from tools.cited_answer import delta_text

    parts = [
        TextPromptMessageContent(data="Rooms "),
        ImagePromptMessageContent(url="https://x/y.png", format="png", mime_type="image/png"),
        TextPromptMessageContent(data="[C:1]"),
    ]
    assert delta_text(parts) == "Rooms [C:1]" and delta_text(None) == "" and delta_text("x") == "x"
