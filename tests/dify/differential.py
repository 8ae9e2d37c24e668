"""Runner vs Dify, event by event: normalise only what must differ between two runs of the same chatflow (ids,
timestamps, elapsed times, token counts), then list every remaining difference as (event index, path, Dify's
value, the runner's value). `KNOWN` is the ONE place a difference that cannot vanish is accepted, each with its
reason; any other difference fails the test with both events printed."""

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ID_KEYS_KEPT = {"node_id", "predecessor_node_id"}  # the graph's own ids: the same in both
TIME_KEYS = {
    "created_at",
    "finished_at",
    "elapsed_time",
    "latency",
    "time_to_first_token",
    "time_to_generate",
    "upload_date",
    "last_update_date",
}
TOKEN_KEYS = {"total_tokens", "prompt_tokens", "completion_tokens", "tokens"}


def is_id_key(key: str) -> bool:
    return key not in ID_KEYS_KEPT and (key == "id" or key.endswith("_id") or key.endswith(".user_id"))


def normalise(value: Any, key: str = "") -> Any:
    if isinstance(value, Mapping):
        return {k: normalise(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, key) for v in value]
    if key in TIME_KEYS and value is not None:
        return "<time>"
    if key in TOKEN_KEYS and isinstance(value, (int, float)):
        return "<tokens>"
    if is_id_key(key) and isinstance(value, str) and value:
        return "<id>"
    if isinstance(value, str):
        return UUID.sub("<uuid>", value)
    return value


def comparable(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Without pings (Dify's are `event: ping` lines, not data), normalised."""
    return [normalise(dict(e)) for e in events if e.get("event") != "ping"]


@dataclass(frozen=True)
class Difference:
    index: int
    event: str
    node_id: str | None
    path: str
    dify: Any
    runner: Any

    def __str__(self) -> str:
        where = f"event {self.index} ({self.event}{', ' + self.node_id if self.node_id else ''}) {self.path}"
        return (
            f"{where}: Dify {json.dumps(self.dify, ensure_ascii=False)[:300]} / runner "
            f"{json.dumps(self.runner, ensure_ascii=False)[:300]}"
        )


MISSING = "<missing>"


def _walk(path: str, a: Any, b: Any, out: list[tuple[str, Any, Any]]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in list(a) + [k for k in b if k not in a]:
            _walk(f"{path}.{key}", a.get(key, MISSING), b.get(key, MISSING), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for n, (x, y) in enumerate(zip(a, b)):
            _walk(f"{path}[{n}]", x, y, out)
    elif a != b:
        out.append((path, a, b))


def differences(dify: list[dict[str, Any]], runner: list[dict[str, Any]]) -> list[Difference]:
    """Event by event; a different event name at one position is one difference (and the rest is compared on)."""
    out = []
    for n in range(max(len(dify), len(runner))):
        a = dify[n] if n < len(dify) else MISSING
        b = runner[n] if n < len(runner) else MISSING
        name = (a if a is not MISSING else b).get("event")
        node_id = (
            ((a if a is not MISSING else b).get("data") or {}).get("node_id")
            if isinstance((a if a is not MISSING else b).get("data"), Mapping)
            else None
        )
        if a is MISSING or b is MISSING or a.get("event") != b.get("event"):
            out.append(
                Difference(
                    n,
                    str(name),
                    node_id,
                    "event",
                    a if a is MISSING else a.get("event"),
                    b if b is MISSING else b.get("event"),
                )
            )
            continue
        found: list[tuple[str, Any, Any]] = []
        _walk("", a, b, found)
        out += [Difference(n, str(name), node_id, path, x, y) for path, x, y in found]
    return out


@dataclass(frozen=True)
class Known:
    """An accepted difference: `matches(difference)` and why it cannot vanish."""

    name: str
    matches: Callable[[Difference], bool]
    reason: str


def unexplained(found: list[Difference], known: list[Known]) -> list[Difference]:
    return [d for d in found if not any(k.matches(d) for k in known)]


NODE_EVENTS = ("node_started", "node_finished")


def canonical(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The stream without what the scheduler decides: parallel branches interleave in either order (in two Dify
    runs too), so node events are compared by node, the `message` events as one list of (answer, selector),
    the other events in order, and the causal order that matters as the nodes finished before the first
    `message`."""
    stream = comparable(events)
    nodes: dict[tuple[str, str], dict[str, Any]] = {}
    sequence, messages, before = [], [], []
    for event in stream:
        if event["event"] in NODE_EVENTS:
            key = (event["data"]["node_id"], event["event"])
            assert key not in nodes, f"{key} twice"
            nodes[key] = event
            if event["event"] == "node_finished" and not messages:
                before.append(event["data"]["node_id"])
        elif event["event"] == "message":
            messages.append([event.get("answer"), "/".join(event.get("from_variable_selector") or [])])
            rest = {k: v for k, v in event.items() if k not in ("answer", "from_variable_selector")}
            if len(messages) == 1:
                sequence.append(rest)  # the envelope of the first message stands for all of them
        else:
            sequence.append(event)
    return {"sequence": sequence, "nodes": nodes, "messages": messages, "finished_before_answer": sorted(before)}


def stream_differences(dify: Iterable[Mapping[str, Any]], runner: Iterable[Mapping[str, Any]]) -> list[Difference]:
    a, b = canonical(dify), canonical(runner)
    out = differences(a["sequence"], b["sequence"])
    for key in list(a["nodes"]) + [k for k in b["nodes"] if k not in a["nodes"]]:
        x, y = a["nodes"].get(key, MISSING), b["nodes"].get(key, MISSING)
        if x is MISSING or y is MISSING:
            out.append(
                Difference(-1, key[1], key[0], "event", x if x is MISSING else key[1], y if y is MISSING else key[1])
            )
            continue
        found: list[tuple[str, Any, Any]] = []
        _walk("", x, y, found)
        out += [Difference(-1, key[1], key[0], path, v, w) for path, v, w in found]
    if a["messages"] != b["messages"]:
        out.append(Difference(-1, "message", None, "messages", a["messages"], b["messages"]))
    if a["finished_before_answer"] != b["finished_before_answer"]:
        out.append(
            Difference(
                -1, "message", None, "finished_before_answer", a["finished_before_answer"], b["finished_before_answer"]
            )
        )
    return out
