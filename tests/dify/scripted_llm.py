"""The scripted LLM behind the stand-in daemon: NOT a model. It answers from the `[C:N]` headers it finds in the
prompt with the same extractive script as the runner's built-in stand-in (`ExtractiveModel`: first sentence of
the chunks that share most with the question, each cited `[C:N]`, or the refusal), so Dify and the runner get the
same answer for the same prompt. Dify's title-generation call (one per new conversation) gets the JSON object
that prompt asks for.
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gcite.local.engine import AssistantPromptMessage, PromptMessage, SystemPromptMessage, UserPromptMessage
from gcite.local.llm import DELTA_SIZE, extractive_answer
from tests.support.local_http import origin, start_server, stop_server

TITLE_PROMPT_START = "You are asked to generate a concise chat title"  # api/core/llm_generator/prompts.py


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("data") or part.get("text") or "") for part in content if isinstance(part, dict))
    return ""


def prompt_messages(messages: Sequence[Mapping[str, Any]]) -> list[PromptMessage]:
    kinds = {"system": SystemPromptMessage, "user": UserPromptMessage, "assistant": AssistantPromptMessage}
    return [kinds.get(str(m.get("role")), UserPromptMessage)(content=text_of(m.get("content"))) for m in messages]


def is_title_request(messages: Sequence[Mapping[str, Any]]) -> bool:
    return len(messages) == 1 and text_of(messages[0].get("content")).startswith(TITLE_PROMPT_START)


def answer(messages: Sequence[Mapping[str, Any]]) -> str:
    """The whole answer for a prompt given as JSON messages ({role, content}), as Dify or an OpenAI client sends."""
    if is_title_request(messages):
        query = text_of(messages[0].get("content")).rsplit("User Input:", 1)[-1].strip()
        return json.dumps(
            {"Language Type": "scripted", "Your Reasoning": "scripted title", "Your Output": query[:20] or "G-Cite"},
            ensure_ascii=False,
        )
    return extractive_answer(prompt_messages(messages))


def pieces(text: str) -> list[str]:
    """The answer in streamed pieces of DELTA_SIZE characters, like an LLM's tokens (as the runner's stand-in)."""
    return [text[i : i + DELTA_SIZE] for i in range(0, len(text), DELTA_SIZE)]


class OpenAICompatibleServer:
    """The same scripted answer behind `POST /v1/chat/completions` (streamed), for the runner's `--llm-base-url`
    (`OpenAICompatibleModel`): the differential check gives the runner and Dify the same LLM."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler

        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self.send_error(404)
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                server.requests.append(body)
                text = answer(body.get("messages") or [])
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for piece in pieces(text):
                    event = {
                        "object": "chat.completion.chunk",
                        "model": body.get("model"),
                        "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}],
                    }
                    self.wfile.write(f"data: {json.dumps(event, ensure_ascii=False)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

        self._server = start_server(Handler)
        self.base_url = f"{origin(self._server)}/v1"

    def close(self) -> None:
        stop_server(self._server)
