"""Hostile requests to the plugin process (`python -m main` over stdio, as the daemon runs it): each gets a clear
error or a correct result, and the process stays up and answers the next request. `make bench` times them
(`plugin_cases`)."""

import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gcite.local.plugin_process import PluginProcess, Session, envelope
from tests.support import ROOT
from tests.support.plugin_memory import declared_memory

MB = 1024 * 1024
PROVIDER = "gcite"


class RawPluginProcess(PluginProcess):
    """Sends JSON with ASCII escapes (a lone surrogate as the six characters `\\ud800`) or raw lines."""

    def send(self, data: dict[str, Any], session_id: str | None = None) -> str:
        session_id = session_id or f"s-{uuid.uuid4().hex[:12]}"
        return self.send_line(json.dumps(envelope(session_id, "request", data)).encode("ascii"), session_id)

    def send_line(self, line: bytes, session_id: str) -> str:
        with self._lock:
            self._sessions[session_id] = Session(session_id, time.perf_counter())
        with self._write_lock:
            self._process.stdin.write(line + b"\n")
            self._process.stdin.flush()
        return session_id

    def stray_error_after(self, action: Callable[[], None], timeout: float = 60) -> dict[str, Any]:
        """Run `action` (a request the SDK cannot read), then wait for the error event that belongs to no session."""
        before = len(self.stray)
        action()
        with self._changed:  # the reader thread appends it
            if not self._changed.wait_for(lambda: len(self.stray) > before, timeout):
                raise TimeoutError(f"no error event from the plugin in {timeout:.0f} s")
            return self.stray[-1]

    @property
    def peak_rss(self) -> int:
        status = Path(f"/proc/{self._process.pid}/status").read_text()
        return int(status.split("VmHWM:")[1].split()[0]) * 1024


def still_serves(plugin: RawPluginProcess) -> None:
    assert plugin.alive
    done = plugin.call_tool(PROVIDER, "merge_chunks", {"rag_chunks": [{"content": "ok"}]})
    assert done.error is None and done.variables["formatted_chunks"] == "[C:1]\nok"


def invoke(plugin: RawPluginProcess, tool: str, parameters: dict[str, Any]) -> Session:
    return plugin.call_tool(PROVIDER, tool, parameters, timeout=120)


# --- the cases ----------------------------------------------------------------------------------------------------


def ten_mb_request_line(plugin: RawPluginProcess) -> None:
    big = [
        {"content": "巡更" * (5 * MB // 2), "metadata": {"segment_id": "s", "doc_metadata": {"access_roles": ",a,"}}}
    ]
    done = invoke(plugin, "merge_chunks", {"rag_chunks": big})
    assert done.error is None
    assert len(done.variables["chunk_metadata"][0]["content"]) == 12000
    done = invoke(plugin, "filter_chunks", {"rag_chunks": big, "user_roles": "a"})
    assert done.error is None and done.variables["kept_count"] == 1


def ten_mb_line_that_is_not_json(plugin: RawPluginProcess) -> None:
    error = plugin.stray_error_after(lambda: plugin.send_line(b"{" + b"x" * (10 * MB), "garbage"))
    assert error["event"] == "error" and "Invalid JSON" in error["data"]["error"]


def deep_json_request(plugin: RawPluginProcess) -> None:
    deep = '{"session_id": "deep", "event": "request", "data": ' + "[" * 100_000 + "]" * 100_000 + "}"
    error = plugin.stray_error_after(lambda: plugin.send_line(deep.encode(), "deep"))
    assert error["event"] == "error"
    done = invoke(plugin, "merge_chunks", {"rag_chunks": "[" * 100_000 + "]" * 100_000})
    assert done.error and done.error["message"].startswith("rag_chunks: JSON nested too deeply")
    done = invoke(
        plugin,
        "filter_chunks",
        {"rag_chunks": [], "user_roles": "a", "condition": '{"not":' * 10_000 + "{}" + "}" * 10_000},
    )
    assert done.error and done.error["message"].startswith("condition: nested more than 32 levels")


def lone_surrogates(plugin: RawPluginProcess) -> None:
    # As a JSON escape in the request itself, the SDK refuses the line (the daemon never sends one: Go's JSON
    # decoder makes it U+FFFD) ...
    error = plugin.stray_error_after(
        lambda: plugin.invoke_tool(PROVIDER, "merge_chunks", {"rag_chunks": [{"content": "a\ud800"}]})
    )
    assert error["event"] == "error"
    # ... but inside a parameter's JSON text it reaches the nodes, and no output may carry it (the SDK could not
    # send it: the request would never be answered).
    text = json.dumps(
        [
            {
                "content": "a\ud800 [C:1]",
                "metadata": {"segment_id": "\udcff", "doc_metadata": {"access_roles": ",a\ud800,", "\ud800k": 1}},
            }
        ]
    )
    merged = invoke(plugin, "merge_chunks", {"rag_chunks": text})
    assert merged.error is None and merged.variables["chunk_metadata"][0]["content"] == "a\ufffd (C:1)"
    public = json.dumps([{"content": "b\udcff", "metadata": {"doc_metadata": {"access_roles": ""}}}])
    for roles in ("a\ufffd", "b"):
        filtered = invoke(plugin, "filter_chunks", {"rag_chunks": text, "user_roles": roles})
        assert filtered.error is None and filtered.variables["dropped"][0]["segment_id"] == "\ufffd"
    filtered = invoke(plugin, "filter_chunks", {"rag_chunks": public, "user_roles": "b"})
    assert filtered.error is None and filtered.variables["chunks"][0]["content"] == "b\ufffd"


def huge_numbers_and_nan(plugin: RawPluginProcess) -> None:
    line = json.dumps(
        envelope(
            "nan",
            "request",
            {
                "type": "tool",
                "action": "invoke_tool",
                "user_id": "u",
                "provider": PROVIDER,
                "tool": "merge_chunks",
                "credentials": {},
                "credential_type": "api-key",
                "tool_parameters": {
                    "rag_chunks": [{"content": "x", "metadata": {"score": float("nan")}}],
                    "max_chunks": float("nan"),
                },
            },
        )
    )
    assert "NaN" in line  # not JSON, but Python's encoder writes it
    session = plugin.wait([plugin.send_line(line.encode(), "nan")], timeout=60)[0]
    assert session.error and session.error["message"].startswith("max_chunks: expected a whole number")
    score_400_digits = '[{"content": "x", "metadata": {"score": 1' + "0" * 400 + "}}]"
    done = invoke(plugin, "merge_chunks", {"rag_chunks": score_400_digits, "max_chunks": 1e300})
    assert done.error is None and done.variables["chunk_metadata"][0]["score"] == 0.0
    done = invoke(plugin, "merge_chunks", {"rag_chunks": score_400_digits, "max_chunks": float("inf")})
    assert done.error and done.error["message"].startswith("max_chunks")
    done = invoke(
        plugin,
        "filter_chunks",
        {"rag_chunks": [], "user_roles": "a", "condition": '{"field": "x", "op": "gt", "value": 1' + "0" * 400 + "}"},
    )
    assert done.error and done.error["message"] == "condition: inf is not a finite number"  # 401 digits: a float


CASES: dict[str, Callable[[RawPluginProcess], None]] = {
    f.__name__: f
    for f in (
        ten_mb_request_line,
        ten_mb_line_that_is_not_json,
        deep_json_request,
        lone_surrogates,
        huge_numbers_and_nan,
    )
}


@pytest.fixture(scope="module")
def plugin():
    with RawPluginProcess(ROOT, sys.executable) as process:
        yield process


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_request(plugin, name):
    CASES[name](plugin)
    still_serves(plugin)
    assert plugin.peak_rss < declared_memory()  # manifest.yaml's resource.memory


def plugin_cases() -> list[tuple[str, float, int]]:
    """For `make bench`: (case, seconds, the process's peak resident memory so far) for each case."""
    rows = []
    with RawPluginProcess(ROOT, sys.executable) as process:
        for name, case in CASES.items():
            started = time.perf_counter()
            case(process)
            rows.append((f"plugin: {name}", time.perf_counter() - started, process.peak_rss))
    return rows
