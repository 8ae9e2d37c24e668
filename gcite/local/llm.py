"""LLMs for the local runner, behind graphon's `LLMProtocol`.

- `ExtractiveModel`: a deterministic built-in stand-in, NOT a language model. It reads the numbered chunks in the
  system prompt, picks the ones that share the most with the question, quotes their first sentence and cites each
  with `[C:N]`; with nothing relevant it gives the insufficient-evidence answer. It answers in the question's
  language: Chinese when the question has a CJK character, else English (the prompts' two refusal phrases). It
  lets the demo and the tests run the real chatflow offline and repeatably.
- `OpenAICompatibleModel`: any `/chat/completions` endpoint, streamed with `requests`.

`invocation_chunks` answers a plugin tool's backwards model call (`cited_answer`) with either, as Dify's inner API
answers it: `LLMResultChunk`s as JSON dicts, without the prompt.
"""

import json
import os
import re
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any

import requests

from citations.phrases import INSUFFICIENT_DEFAULT
from gcite.local.engine import (
    AIModelEntity,
    AssistantPromptMessage,
    FetchFrom,
    I18nObject,
    LLMResultChunk,
    LLMResultChunkDelta,
    LLMUsage,
    ModelPropertyKey,
    ModelType,
    PromptMessage,
    SystemPromptMessage,
    UserPromptMessage,
)
from gcite.local.knowledge import relevance
from gcite.sse import sse_lines

EXTRACTIVE_LABEL = "gcite-extractive (built-in extractive stand-in, not an LLM)"
REFUSAL_ZH, REFUSAL_EN = INSUFFICIENT_DEFAULT.split("|")  # the refusals the validator recognises by default
INSUFFICIENT = REFUSAL_ZH + "。"
INSUFFICIENT_EN = REFUSAL_EN + "."
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")
CHUNK_HEADER = re.compile(r"^\[C:(\d+)\]$", re.MULTILINE)
SENTENCE_END = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s")
DELTA_SIZE = 4  # characters per streamed chunk, like an LLM's tokens


def message_text(message: PromptMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "data", "") for part in content or [])


def numbered_chunks(system_prompt: str) -> list[tuple[str, str]]:
    """(id, text) of every `[C:N]` header and the text under it, in the order of the context."""
    headers = list(CHUNK_HEADER.finditer(system_prompt))
    chunks = []
    for n, header in enumerate(headers):
        end = headers[n + 1].start() if n + 1 < len(headers) else len(system_prompt)
        chunks.append((header.group(1), system_prompt[header.end() : end].strip()))
    return chunks


def first_sentence(text: str) -> str:
    sentence = SENTENCE_END.split(text.strip(), maxsplit=1)[0].strip()
    return sentence.rstrip("。.!！?？;；") or text.strip()


def extractive_answer(prompt_messages: Sequence[PromptMessage], top: int = 2, threshold: float = 0.2) -> str:
    system = "\n".join(message_text(m) for m in prompt_messages if m.role.value == "system")
    question = message_text(next((m for m in reversed(prompt_messages) if m.role.value == "user"), prompt_messages[-1]))
    scored = []
    for chunk_id, text in numbered_chunks(system):
        overlap = relevance(question, text)
        if overlap >= threshold:
            scored.append((overlap, chunk_id, text))
    scored.sort(key=lambda s: -s[0])  # stable: ties keep the context's order
    english = not CJK.search(question)
    if not scored:
        return INSUFFICIENT_EN if english else INSUFFICIENT
    if english:
        return " ".join(f"{first_sentence(text)}[C:{chunk_id}]." for _, chunk_id, text in scored[:top])
    return "".join(f"{first_sentence(text)}[C:{chunk_id}]。" for _, chunk_id, text in scored[:top])


class _ModelBase:
    """What graphon's LLM node needs besides `invoke_llm`."""

    def __init__(self, provider: str, model_name: str) -> None:
        self._provider, self._model_name = provider, model_name
        self._parameters: Mapping[str, Any] = {}
        self.prompts: list[Sequence[PromptMessage]] = []  # every prompt received, for inspection

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def parameters(self) -> Mapping[str, Any]:
        return self._parameters

    @parameters.setter
    def parameters(self, value: Mapping[str, Any]) -> None:
        self._parameters = value

    @property
    def stop(self) -> Sequence[str] | None:
        return None

    def get_model_schema(self) -> AIModelEntity:
        return AIModelEntity(
            model=self._model_name,
            label=I18nObject(en_US=self._model_name),
            model_type=ModelType.LLM,
            fetch_from=FetchFrom.PREDEFINED_MODEL,
            model_properties={ModelPropertyKey.MODE: "chat", ModelPropertyKey.CONTEXT_SIZE: 128000},
        )

    def get_llm_num_tokens(self, prompt_messages: Sequence[PromptMessage]) -> int:
        return sum(len(message_text(m)) for m in prompt_messages) // 2

    def invoke_llm_with_structured_output(self, **kwargs: Any) -> Any:
        raise NotImplementedError("structured output is not used by the G-Cite chatflow")

    def is_structured_output_parse_error(self, error: Exception) -> bool:
        return False

    def _chunks(self, prompt_messages: Sequence[PromptMessage], pieces: Iterator[str]) -> Generator[LLMResultChunk]:
        index = 0
        for piece in pieces:
            yield LLMResultChunk(
                model=self._model_name,
                prompt_messages=prompt_messages,
                delta=LLMResultChunkDelta(index=index, message=AssistantPromptMessage(content=piece)),
            )
            index += 1
        usage = LLMUsage.empty_usage()
        yield LLMResultChunk(
            model=self._model_name,
            prompt_messages=prompt_messages,
            delta=LLMResultChunkDelta(
                index=index, message=AssistantPromptMessage(content=""), usage=usage, finish_reason="stop"
            ),
        )


class ExtractiveModel(_ModelBase):
    def __init__(self) -> None:
        super().__init__("gcite", EXTRACTIVE_LABEL)

    def invoke_llm(
        self,
        *,
        prompt_messages: Sequence[PromptMessage],
        model_parameters: Mapping[str, Any],
        tools: Any = None,
        stop: Any = None,
        stream: bool = True,
    ) -> Generator[LLMResultChunk]:
        self.prompts.append(list(prompt_messages))
        answer = extractive_answer(prompt_messages)
        return self._chunks(prompt_messages, (answer[i : i + DELTA_SIZE] for i in range(0, len(answer), DELTA_SIZE)))


class OpenAICompatibleModel(_ModelBase):
    """Streams `POST {base_url}/chat/completions`. The key comes from GCITE_LLM_API_KEY (never from the DSL)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 120) -> None:
        super().__init__("openai_api_compatible", model)
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._key = api_key if api_key is not None else os.environ.get("GCITE_LLM_API_KEY", "")
        self._timeout = timeout

    def invoke_llm(
        self,
        *,
        prompt_messages: Sequence[PromptMessage],
        model_parameters: Mapping[str, Any],
        tools: Any = None,
        stop: Any = None,
        stream: bool = True,
    ) -> Generator[LLMResultChunk]:
        self.prompts.append(list(prompt_messages))
        body = {
            "model": self.model_name,
            "stream": True,
            **{k: v for k, v in model_parameters.items() if v is not None},
            "messages": [{"role": m.role.value, "content": message_text(m)} for m in prompt_messages],
        }
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        response = requests.post(self._url, json=body, headers=headers, stream=True, timeout=self._timeout)
        if response.status_code >= 400:
            raise RuntimeError(f"LLM endpoint answered {response.status_code}: {self._scrub(response.text[:300])}")
        return self._chunks(prompt_messages, self._deltas(response))

    def _scrub(self, text: str) -> str:
        """`text` without the API key: endpoints echo the Authorization header in their errors."""
        return text.replace(self._key, "[key removed]") if self._key else text

    @staticmethod
    def _deltas(response: requests.Response) -> Iterator[str]:
        """The `content` deltas of an OpenAI-compatible SSE body. The body is UTF-8 whatever the Content-Type says
        (no charset would make `requests` read ISO-8859-1), and lines end at LF only (an optional CR before it is
        dropped): U+2028 and other Unicode line separators inside the JSON are text, not line ends."""
        for raw in sse_lines(response.iter_content(chunk_size=None), sender="LLM endpoint"):
            if not raw.startswith("data:"):
                continue
            data = raw[5:].strip()
            if data == "[DONE]":
                return
            try:
                event = json.loads(data)
            except ValueError as error:
                raise RuntimeError(f"LLM endpoint sent an SSE data line that is not JSON: {error}") from None
            for choice in (event.get("choices") or []) if isinstance(event, dict) else []:
                piece = (choice.get("delta") or {}).get("content") if isinstance(choice, dict) else None
                if piece and isinstance(piece, str):
                    try:
                        piece.encode("utf-8")
                    except UnicodeEncodeError:
                        raise RuntimeError(
                            "LLM endpoint sent text that is not valid Unicode (a lone surrogate)"
                        ) from None
                    yield piece


PROMPT_ROLES = {"system": SystemPromptMessage, "user": UserPromptMessage, "assistant": AssistantPromptMessage}


def invocation_prompt(messages: Any) -> list[PromptMessage]:
    """The prompt of a backwards model call ({role, content} dicts; content text or a list of parts) as graphon's
    prompt messages; a part that is not text (an image) is left out, a role other than system/assistant is user."""
    if not isinstance(messages, list):
        raise ValueError("prompt_messages: expected a list")
    prompt = []
    for message in messages:
        if not isinstance(message, Mapping):
            raise ValueError("prompt_messages: expected {role, content} objects")
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(
                str(part.get("data") or "")
                for part in content
                if isinstance(part, Mapping) and part.get("type") == "text"
            )
        prompt.append(PROMPT_ROLES.get(str(message.get("role")), UserPromptMessage)(content=str(content or "")))
    return prompt


def invocation_chunks(model: Any, request: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """A plugin's backwards `invoke llm` (`request`: {provider, model, mode, completion_params, prompt_messages,
    stop, …}) answered by `model`, whatever model the request names: each chunk as the JSON dict Dify's inner API
    sends (`prompt_messages` emptied, as `PluginModelBackwardsInvocation.invoke_llm` does)."""
    parameters = request.get("completion_params")
    chunks = model.invoke_llm(
        prompt_messages=invocation_prompt(request.get("prompt_messages")),
        model_parameters=dict(parameters) if isinstance(parameters, Mapping) else {},
        stop=request.get("stop") or None,
        stream=True,
    )
    for chunk in chunks:
        data = chunk.model_dump(mode="json")
        data["prompt_messages"] = []
        yield data
