"""`cited_answer`'s cost per streamed answer: the tool against the same tool relaying the model's deltas unchanged.

A 14,000-character answer (bench/streaming.py's, markers of every kind) in 4-character deltas, 30 chunks, the support
check off (it runs once after the stream; bench/support.py measures it). Each delta reaches the tool as it does in the
plugin process: its line from the daemon parsed as the SDK's stdio reader parses it, handed over through a queue as
its filter reader does, then read as `_line_converter_wrapper` reads it (`BackwardsInvocationResponseEvent`,
`LLMResultChunk`); one delta every 10 ms of a virtual clock (a model writing 100 deltas a second). Every message the
tool yields is written as the SDK writes it (`session_message(stream_object(…))`, to a sink). Both variants run
through `CitedAnswerTool._invoke` and its threaded model reader, the clock showing each delta's arrival when the tool
takes it; the relay's only difference is a stream that passes each delta on as text.

Targets: CPU of the tool ≤ 1.2 × the relay's; answer events ≤ deltas / 5; no piece waits longer than the window.
Run in a process of its own (`python -m bench.cited_answer` prints JSON): importing dify_plugin patches threading
with gevent, which the other benchmarks must not share.
"""

import json
import subprocess
import sys

from bench.common import ROOT, paired_times, print_table, verdict

ANSWER_CHARS = 14_000
DELTA = 4
DELTA_INTERVAL = 0.01  # seconds of virtual time between two deltas
TARGET_CPU, TARGET_EVENTS = 1.2, 1 / 5
MODEL = {
    "provider": "langgenius/openai/openai",
    "model": "gpt-4o-mini",
    "model_type": "llm",
    "mode": "chat",
    "completion_params": {},
}


def measure() -> dict:
    import queue
    from typing import Any

    import dify_plugin  # noqa: F401 - patches threading as in the plugin process
    from dify_plugin.core.entities.plugin.io import PluginInStream, PluginInStreamEvent
    from dify_plugin.core.runtime import BackwardsInvocationResponseEvent
    from dify_plugin.core.server.__base.request_reader import RequestReader
    from dify_plugin.core.server.__base.response_writer import ResponseWriter
    from dify_plugin.entities.model.llm import LLMResultChunk
    from dify_plugin.entities.tool import ToolRuntime
    from pydantic import TypeAdapter

    from bench.streaming import CHUNKS, answer_of
    from citations import stream as citation_stream
    from citations.merge import format_context
    from gcite.local.plugin_process import envelope
    from tools.cited_answer import CitedAnswerTool

    answer = answer_of(ANSWER_CHARS)
    deltas = [answer[i : i + DELTA] for i in range(0, len(answer), DELTA)]
    lines = [
        json.dumps(
            envelope(
                "bench",
                "backwards_response",
                {
                    "backwards_request_id": "b",
                    "event": "response",
                    "message": "stream",
                    "data": {
                        "model": "m",
                        "prompt_messages": [],
                        "system_fingerprint": None,
                        "delta": {
                            "index": i,
                            "usage": None,
                            "finish_reason": None,
                            "message": {"role": "assistant", "content": d, "name": None, "tool_calls": []},
                        },
                    },
                },
            )
        ).encode()
        for i, d in enumerate(deltas)
    ]
    now = [0.0]

    class Sink(ResponseWriter):
        def write(self, data: str) -> None:
            pass

        def done(self) -> None:
            pass

    class Reader(RequestReader):
        def _read_stream(self):
            return iter(())

    reader, writer, envelope = Reader(), Sink(), TypeAdapter(dict[str, Any])

    arrived: dict[int, float] = {}  # id of a chunk -> its time on the virtual clock

    class Model:
        def invoke(self, model_config, prompt_messages, tools=None, stop=None, stream=True):
            handover: queue.Queue = queue.Queue()
            for n, line in enumerate(lines, start=1):
                data = envelope.validate_json(line)  # StdioRequestReader._read_stream, per line
                handover.put(
                    PluginInStream(
                        session_id=data["session_id"],
                        conversation_id=data.get("conversation_id"),
                        message_id=data.get("message_id"),
                        app_id=data.get("app_id"),
                        endpoint_id=data.get("endpoint_id"),
                        event=PluginInStreamEvent.value_of(data["event"]),
                        data=data["data"],
                        context=data.get("context"),
                        reader=reader,
                        writer=writer,
                    )
                )
                received = handover.get()  # FilterReader: the reader thread hands the line to the session
                event = BackwardsInvocationResponseEvent(**received.data)  # _line_converter_wrapper
                chunk = LLMResultChunk(**event.data)
                arrived[id(chunk)] = n * DELTA_INTERVAL
                yield chunk

    class Session:
        session_id = "bench"
        model = type("Models", (), {"llm": Model()})()

    def on_the_virtual_clock(chunks, wait):
        """The tool's own threaded reader; the clock shows each chunk's arrival when the tool takes it (the model
        runs ahead in real time, so the reader never waits and never ticks)."""
        for kind, value in CitedAnswerTool.pump(chunks, wait):
            now[0] = arrived.pop(id(value), now[0])
            yield kind, value

    class Tool(CitedAnswerTool):
        clock = staticmethod(lambda: now[0])
        pump = staticmethod(on_the_virtual_clock)
        states: list = []

        def _new_answer(self, request):
            state = super()._new_answer(request)
            self.states.append(state)
            return state

    class Relay(Tool):
        def _new_answer(self, request):
            state = super()._new_answer(request)
            state["stream"] = PassOn()
            return state

    def support_off(pieces, chunks, **_):
        return citation_stream.unchecked(pieces)  # what the stream gives for an answer it does not check

    citation_stream.check_support = support_off
    chunks = [{**c, "id": int(c["id"]), "content": f"chunk {c['id']} text"} for c in CHUNKS]
    parameters = {"model": MODEL, "query": "q", "context": format_context(chunks), "chunk_metadata": chunks}

    def invoke(tool_class) -> list[str]:
        now[0] = 0.0
        tool = tool_class(runtime=ToolRuntime(credentials={}, user_id="bench", session_id="bench"), session=Session())
        sent = []
        for message in tool.invoke(dict(parameters)):
            writer.session_message(session_id="bench", data=writer.stream_object(data=message))  # as plugin.py
            if message.message.variable_name == "answer":
                sent.append(message.message.variable_value)
        return sent

    shown, relayed = invoke(Tool), invoke(Relay)
    assert "[C:" not in "".join(shown).replace("`[C:1]`", "") and "".join(relayed) == answer  # code keeps its [C:1]
    state = Tool.states[0]
    best = paired_times({"cited": lambda: invoke(Tool), "relay": lambda: invoke(Relay)}, rounds=25)
    return {
        "deltas": len(deltas),
        "events": len(shown),
        "relay_events": len(relayed),
        "window": Tool.window,
        "longest_wait": state["longest_wait"],
        "cpu_cited": best["cited"],
        "cpu_relay": best["relay"],
    }


def run() -> bool:
    done = subprocess.run(
        [sys.executable, "-m", "bench.cited_answer"], cwd=ROOT, capture_output=True, text=True, timeout=1800
    )
    if done.returncode != 0:
        print(f"\n== cited_answer ==\n  failed: {done.stderr[-2000:]}")
        return False
    r = json.loads(done.stdout.strip().splitlines()[-1])
    ms = 1000
    print_table(
        f"cited_answer: a {ANSWER_CHARS:,}-character answer in {DELTA}-character deltas, 30 chunks, support "
        f"check off, a delta every {DELTA_INTERVAL * ms:.0f} ms",
        ("tool", "deltas", "events", "ms CPU", "µs CPU per delta"),
        [
            (
                "cited_answer",
                r["deltas"],
                r["events"],
                f"{r['cpu_cited'] * ms:.1f}",
                f"{r['cpu_cited'] / r['deltas'] * 1e6:.1f}",
            ),
            (
                "the same tool relaying the deltas",
                r["deltas"],
                r["relay_events"],
                f"{r['cpu_relay'] * ms:.1f}",
                f"{r['cpu_relay'] / r['deltas'] * 1e6:.1f}",
            ),
        ],
    )
    cpu = r["cpu_cited"] / r["cpu_relay"]
    events = r["events"] / r["deltas"]
    checks = [
        verdict("cited_answer CPU / relaying (x)", cpu, f"<= {TARGET_CPU}", cpu <= TARGET_CPU),
        verdict("cited_answer events / deltas", events, f"<= {TARGET_EVENTS:.2f}", events <= TARGET_EVENTS),
        verdict(
            "longest wait of a delta (ms)",
            r["longest_wait"] * ms,
            f"<= {r['window'] * ms:.0f}",
            r["longest_wait"] <= r["window"] + 1e-9,
        ),
    ]
    print_table("cited_answer targets", ("ratio", "measured", "target", "result"), checks)
    return all(c[-1] == "met" for c in checks)


class PassOn:
    """A stream that shows each delta as it comes: what relaying the model unchanged costs."""

    pending = ""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def feed_pieces(self, text: str) -> list[dict]:
        self.texts.append(text)
        return [{"type": "text", "text": text}] if text else []

    def finish_pieces(self) -> list[dict]:
        return []

    def result(self) -> dict:
        return {
            "answer_without_markers": "".join(self.texts),
            "citations": [],
            "invalid_ids": [],
            "status": "uncited",
            "uncited_sentences": [],
            "citation_recall_proxy": None,
            "citation_precision_proxy": None,
        }


if __name__ == "__main__":
    from bench import common  # noqa: F401  (puts the repository root on sys.path)

    print(json.dumps(measure()))
