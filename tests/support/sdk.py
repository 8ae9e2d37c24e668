"""Load and invoke the plugin through dify_plugin exactly as the runtime does, in-process.

dify_plugin is imported on first use, not at collection: importing it monkey-patches threading with gevent,
which slows graphon's engine in the chatflow tests that run earlier in the same session.
"""

import os
from contextlib import contextmanager
from typing import Any
from unittest.mock import MagicMock

from tests.support import ROOT

PROVIDER = "gcite"


@contextmanager
def in_plugin_root():
    before = os.getcwd()
    os.chdir(ROOT)  # the runtime loads YAML and modules relative to the plugin root
    try:
        yield
    finally:
        os.chdir(before)


def registration() -> Any:
    from dify_plugin import DifyPluginEnv
    from dify_plugin.core.plugin_registration import PluginRegistration

    with in_plugin_root():
        return PluginRegistration(DifyPluginEnv())


def invoke(reg: Any, tool: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """The daemon's request, through the SDK executor's invoke_tool; returns the variables the tool yielded."""
    from dify_plugin import DifyPluginEnv
    from dify_plugin.core.entities.plugin.request import ToolInvokeRequest
    from dify_plugin.core.plugin_executor import PluginExecutor
    from dify_plugin.core.runtime import Session
    from dify_plugin.entities.tool import ToolInvokeMessage

    request = ToolInvokeRequest.model_validate(
        {
            "type": "tool",
            "action": "invoke_tool",
            "user_id": "user-1",
            "provider": PROVIDER,
            "tool": tool,
            "credentials": {},
            "credential_type": "api-key",
            "tool_parameters": parameters,
        }
    )
    session = MagicMock(spec=Session)
    session.session_id = "session-1"
    messages = list(PluginExecutor(DifyPluginEnv(), reg).invoke_tool(session, request))
    variables: dict[str, Any] = {}
    for message in messages:
        assert isinstance(message, ToolInvokeMessage)
        assert message.type == ToolInvokeMessage.MessageType.VARIABLE, f"unexpected {message.type} message"
        body = message.message
        if body.stream:
            variables[body.variable_name] = variables.get(body.variable_name, "") + body.variable_value
        else:
            variables[body.variable_name] = body.variable_value
    return variables


def model_chunk(index: int, text: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """One streamed piece of a backwards LLM call, as the daemon sends it to the plugin (an LLMResultChunk)."""
    return {
        "model": "m",
        "prompt_messages": [],
        "system_fingerprint": None,
        "delta": {
            "index": index,
            "message": {"role": "assistant", "content": text, "name": None, "tool_calls": []},
            "usage": usage,
            "finish_reason": None,
        },
    }
