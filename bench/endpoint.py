"""The chat endpoint under load: 50 concurrent streams over one plugin process (stdio, the daemon played by
`PluginProcess`), each checked complete and unmixed; time to `sources`, to the first `text`, and to the end.

Two upstreams answer the plugin's app invocations:
- paced: a canned chatflow stream at an LLM's pace (chunk list after 200 ms, then 40 deltas 25 ms apart), so the
  figures show what the endpoint adds to what Dify sends;
- chatflow: the shipped chatflow run on graphon by the runner (stand-in LLM), 50 at once on this machine.
"""

import json
import statistics
import sys
import time

from bench.common import ROOT, print_table
from gcite.authoring.chatflows import PLUGIN_DSL
from gcite.local.app_host import AppHost, sample_services
from gcite.local.plugin_process import EndpointCall, PluginProcess
from gcite.protocol import parse_gcite_sse

STREAMS = 50
SECRET = "bench-secret-" + "x" * 40
SETTINGS = {"app": {"app_id": "app-bench"}, "token_secret": SECRET, "allowed_origins": ""}
CHUNK_DELAY = 0.2
DELTAS = 40
DELTA_PAUSE = 0.025
QUERIES = ("巡更时发现异常怎么上报？", "会议室怎么预约？", "访客怎么登记？", "冷水机组供水温度设定为多少？")


def paced_stream(request: dict):
    n = request["query"].rsplit(" ", 1)[-1]
    conversation, message = f"conv-{n}", f"msg-{n}"

    def envelope(event: str, **body):
        return {"event": event, "conversation_id": conversation, "message_id": message, **body}

    chunks = [
        {
            "id": "1",
            "source_type": "rag",
            "content": f"chunk of stream {n}",
            "document_title": f"title {n}",
            "url": "",
            "display_subtitle": "kb",
            "site_name": "",
            "published_date": "",
        }
    ]
    yield envelope("workflow_started", data={})
    time.sleep(CHUNK_DELAY)
    yield envelope(
        "node_finished", data={"node_id": "merge", "node_type": "tool", "outputs": {"chunk_metadata": chunks}}
    )
    yield envelope("node_started", data={"node_id": "llm", "node_type": "llm"})
    for i in range(DELTAS):
        time.sleep(DELTA_PAUSE)
        yield envelope(
            "message", answer=f"{n}:{i} " + ("[C:1]" if i == DELTAS - 1 else ""), from_variable_selector=["llm", "text"]
        )
    yield envelope("message_end", id=message)


def expected_paced_text(n: int) -> str:
    """What the caller sees: the deltas with the marker removed, and the space before it (no space before an end)."""
    return " ".join(f"{n}:{i}" for i in range(DELTAS))


def token(n: int) -> str:
    import jwt  # imported late: it imports ssl, which dify_plugin's gevent patching wants to come first

    return jwt.encode(
        {"sub": f"user-{n}", "roles": ["物业经理"], "exp": int(time.time()) + 3600}, SECRET, algorithm="HS256"
    )


def timings(call: EndpointCall) -> dict[str, float]:
    out: dict[str, float] = {}
    for at, piece in call.timeline:
        for name, _ in parse_gcite_sse(piece.decode("utf-8")):
            out.setdefault(name, at)
    out["end"] = call.timeline[-1][0]
    return out


def load(plugin: PluginProcess, handler, query_of, streams: int = STREAMS) -> tuple[list[EndpointCall], float]:
    start = time.perf_counter()
    calls = [
        plugin.request(
            "POST",
            "/gcite/chat",
            headers={"Authorization": f"Bearer {token(n)}"},
            body=json.dumps({"query": query_of(n)}, ensure_ascii=False),
            settings=SETTINGS,
            app_handler=handler,
        )
        for n in range(streams)
    ]
    for call in calls:
        call.read(timeout=600)
    return calls, time.perf_counter() - start


def row(label: str, calls: list[EndpointCall], wall: float, ok: int) -> tuple:
    figures = [timings(c) for c in calls]

    def stat(key: str) -> str:
        values = [f[key] for f in figures if key in f]
        return f"{statistics.median(values):.2f} / {max(values):.2f}" if values else "-"

    return (label, f"{ok}/{len(calls)}", stat("sources"), stat("text"), stat("end"), f"{wall:.2f}")


def run() -> bool:
    rows, good = [], True
    with PluginProcess(ROOT, sys.executable) as plugin:
        single = []
        for _ in range(3):  # one stream at a time: the baseline
            calls, _ = load(plugin, paced_stream, lambda n: f"question {n}", streams=1)
            single += calls
        rows.append(
            row(
                "paced upstream, 1 stream at a time (3 runs)",
                single,
                sum(c.timeline[-1][0] for c in single),
                sum(list(parse_gcite_sse(c.text))[-1][0] == "done" for c in single),
            )
        )
        calls, wall = load(plugin, paced_stream, lambda n: f"question {n}")
        ok = 0
        for n, call in enumerate(calls):
            events = list(parse_gcite_sse(call.text))
            text = "".join(d["text"] for name, d in events if name == "text")
            ok += (
                events[-1][0] == "done"
                and text == expected_paced_text(n)
                and events[-1][1]["conversation"].startswith(f"conv-{n}.")
            )
        good &= ok == STREAMS
        rows.append(row(f"paced upstream, {STREAMS} at once", calls, wall, ok))

        services = sample_services()
        try:
            host = AppHost(PLUGIN_DSL.read_text(encoding="utf-8"), services)
            host.services.plugin()  # started before the clock, as in a running deployment
            calls, wall = load(plugin, host, lambda n: QUERIES[n % len(QUERIES)])
        finally:
            services.close()
        ok = 0
        for n, call in enumerate(calls):
            events = list(parse_gcite_sse(call.text))
            ok += events[-1][0] == "done" and call.app_requests[0]["query"] == QUERIES[n % len(QUERIES)]
        good &= ok == STREAMS
        rows.append(row(f"shipped chatflow on graphon, {STREAMS} at once", calls, wall, ok))
    print(
        f"\n(paced upstream: chunk list after {CHUNK_DELAY * 1000:.0f} ms, "
        f"then {DELTAS} deltas {DELTA_PAUSE * 1000:.0f} ms apart, i.e. {CHUNK_DELAY:.2f} s to sources "
        f"and {CHUNK_DELAY + DELTA_PAUSE:.3f} s to first text at best; "
        f"the chatflow runs the stand-in LLM on graphon, {STREAMS} in this process at once)"
    )
    print_table(
        "Chat endpoint over one plugin process (seconds, median / max)",
        ("upstream", "complete", "to sources", "to first text", "total", "wall"),
        rows,
    )
    return good
