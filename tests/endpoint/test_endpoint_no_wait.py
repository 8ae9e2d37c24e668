"""Nobody waits for someone else's answer (issue 34, item 3): while the plugin checks one long answer's citations,
another caller's stream starts at once. The real plugin process over stdio, where every stream and tool call shares
one gevent loop: the support check runs in a real OS thread (`tools.validate_citations.off_loop`), never on it."""

import json
import sys
import threading
import time

import pytest

from gcite.local.plugin_process import PluginProcess
from tests.support import ROOT
from tests.support.endpoint import Canned, chunk, dify_stream, events_of, post, token

FIRST_EVENT_SECONDS = 0.5


@pytest.fixture(scope="module")
def plugin():
    with PluginProcess(ROOT, sys.executable) as process:
        yield process


def long_answer(sentences: int) -> tuple[list[str], list[dict]]:
    """An answer of `sentences` cited sentences (about 100 characters each) over 30 chunks of 20,000 characters:
    ordinary text, seconds of support check in all (linear, but long)."""
    words = "meeting room booking floor staff visitor badge parking lunch policy desk printer".split()
    line = [" ".join(words[(n * 7 + k * 5) % len(words)] for k in range(12)).capitalize() for n in range(97)]
    chunks = [
        chunk(n, " ".join(f"{line[(n + k) % 97]} not allowed {k % 9} days." for k in range(400))) for n in range(1, 31)
    ]
    deltas = [f"{line[n % 97]} is not allowed {n % 9} days [C:{n % 30 + 1}]. " for n in range(sentences)]
    return deltas, chunks


def first_event_seconds(plugin) -> float:
    call = post(
        plugin,
        {"query": "会议室怎么预约？"},
        bearer=token("bob"),
        handler=Canned(dify_stream(["会议室在三楼 [C:1]。"], [chunk(1, "会议室在三楼。")])),
    )
    for piece in call.pieces(60):
        if b"event:" in piece:
            return call.timeline[-1][0]
    raise AssertionError("no event")


def test_a_long_check_does_not_hold_another_callers_first_event(plugin):
    deltas, chunks = long_answer(20_000)
    deltas = ["".join(deltas[n : n + 200]) for n in range(0, len(deltas), 200)]  # few events: the check is the work
    sent = threading.Event()

    def stream(_request):
        yield from dify_stream(deltas, chunks, references="")
        sent.set()  # the plugin has the whole answer: what follows is its end, mostly the support check

    started = time.perf_counter()
    hostile = post(plugin, {"query": "long"}, bearer=token("mallory"), handler=Canned(stream))
    assert sent.wait(60)
    waits = []
    while not hostile.ended_at and time.perf_counter() - started < 120:
        waits.append(first_event_seconds(plugin))
        time.sleep(0.05)
    events = events_of(hostile, 120)
    assert events[-1][0] == "done" and json.dumps(events[-1][1])  # the long answer itself is checked
    assert any("support" in c for c in events[-1][1]["citations"])
    assert max(waits) <= FIRST_EVENT_SECONDS, [round(w, 2) for w in waits]
    assert len(waits) >= 5, "the long answer ended too soon to measure anything"
