"""Hostile input: every case is a clear error or a correct result, bounded in time and memory.

The cases are defined here once: `make test` runs each (tests/hostile/test_hostile_nodes.py, with a memory bound) and
`make bench` times them and prints the worst time and peak memory. Each case is a function that raises
AssertionError when the node misbehaves and returns the size of its input in bytes (for the memory bound).
The plugin-process cases (a 10 MB request line, …) are in tests/hostile/test_hostile_plugin.py; `make bench` times them
too (`plugin_cases`).
"""

import json
import time
import tracemalloc
from collections.abc import Callable

from bench.common import print_table
from citations import acl_prefilter
from citations import filter as filter_chunks
from citations import memory as remember_turn
from citations import merge as merge_chunks
from citations import validate as validate_citations
from citations import web_request as web_search_request
from citations.stream import CitationStream

MB = 1024 * 1024
CODE_NODE_ARRAY, CODE_NODE_STRING, CODE_NODE_NUMBER = 30, 400_000, 2**63


def raises(function: Callable[[], object], field: str) -> None:
    """The call fails with a ValueError whose message starts with `field`."""
    try:
        function()
    except ValueError as error:
        assert str(error).startswith(field), f"error does not name {field}: {str(error)[:200]}"
        assert len(str(error)) < 2000, "error message too long"
        return
    raise AssertionError(f"expected an error naming {field}")


def fits_a_code_node(outputs: dict, arrays: tuple[str, ...]) -> None:
    json.dumps(outputs, allow_nan=False).encode("utf-8")
    for name in arrays:
        assert len(outputs[name]) <= CODE_NODE_ARRAY, f"{name}: {len(outputs[name])} entries"
    for name, value in outputs.items():
        if isinstance(value, str):
            assert len(value) <= CODE_NODE_STRING, f"{name}: {len(value)} characters"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert -CODE_NODE_NUMBER < value < CODE_NODE_NUMBER


def rag(n: int, content: str = "正文", **doc_meta) -> dict:
    return {"content": content, "metadata": {"score": 0.5, "segment_id": f"s{n}", "doc_metadata": doc_meta}}


def web(n: int, content: str = "网页") -> dict:
    return {"title": f"t{n}", "url": f"https://example.com/{n}", "content": content, "score": 0.5}


# --- the merge node --------------------------------------------------------------------------------------------


def merge_5mb_chunks() -> int:
    big = "巡" * (5 * MB)
    out = merge_chunks.main([rag(1, big), rag(2, big)], [web(1, big)])
    fits_a_code_node(out, ("chunk_metadata", "skipped"))
    assert [len(c["content"]) for c in out["chunk_metadata"]] == [merge_chunks.MAX_CONTENT_CHARS] * 3
    assert [s["reason"] for s in out["skipped"]] == [f"content cut at {merge_chunks.MAX_CONTENT_CHARS} characters"] * 3
    return 2 * 5 * MB  # one string of 5 M characters (2 bytes each), three times


def merge_10000_chunks() -> int:
    out = merge_chunks.main([rag(n, f"c{n}") for n in range(10_000)], [web(n) for n in range(10_000)])
    fits_a_code_node(out, ("chunk_metadata", "skipped"))
    assert out["chunk_count"] == 30 and out["skipped"][-1]["reason"] == f"and {20_000 - 30 - 29} more items not used"
    return 20_000 * 200


def merge_marker_flood() -> int:
    flood = "".join(["[C:1]", "［Ｃ：２］", "[\u200bC\u0301:3]", "【𝐂﹕4】", "[[C:5", "`[C:6]`"] * 2000)
    out = merge_chunks.main([rag(1, flood)], [web(1, flood)])
    fits_a_code_node(out, ("chunk_metadata", "skipped"))
    for chunk in out["chunk_metadata"]:
        assert validate_citations.main(chunk["content"].replace("`", " "), None)["citations"] == []
    return 2 * 4 * len(flood)


def merge_deep_json() -> int:
    for field in ("rag_chunks", "web_chunks"):
        raises(
            lambda field=field: merge_chunks.main(**{field: "[" * 100_000 + "]" * 100_000}),
            f"{field}: JSON nested too deeply",
        )
        raises(lambda field=field: merge_chunks.main(**{field: '{"a":' * 50_000 + "1" + "}" * 50_000}), field)
    raises(lambda: merge_chunks.main(None, [[[[[[{"url": "http://a.b"}]]]]]]), "web_chunks: nested too deeply")
    return 4 * 200_000


def merge_huge_numbers_nan_surrogates() -> int:
    text = (
        '[{"content": "x\\ud800 [C:1]", "metadata": {"score": 1' + "0" * 400 + ', "segment_position": NaN,'
        ' "segment_id": "a"}}, {"content": "y", "metadata": {"score": NaN, "segment_id": "b"}}]'
    )
    out = merge_chunks.main(text, [{"url": "http://a.b", "content": "z", "score": 10**5000}], max_chunks=10**400)
    fits_a_code_node(out, ("chunk_metadata", "skipped"))
    assert [c["score"] for c in out["chunk_metadata"]] == [0.0, 0.0, 0.0]
    assert out["chunk_metadata"][0]["content"] == "x\ufffd (C:1)"
    raises(lambda: merge_chunks.main([], max_chunks=float("nan")), "max_chunks")
    raises(lambda: merge_chunks.main([], max_chunks="¹"), "max_chunks")
    return 10_000


# --- the filter node -------------------------------------------------------------------------------------------


def filter_5mb_chunks() -> int:
    big = "巡" * (5 * MB)
    out = filter_chunks.main([rag(1, big, access_roles=",a,"), rag(2, big, access_roles=",b,")], "a")
    fits_a_code_node({k: v for k, v in out.items() if k != "chunks"}, ("dropped", "warnings"))
    assert out["kept_count"] == 1 and out["chunks"][0]["content"] is big
    return 2 * 5 * MB


def filter_10000_chunks() -> int:
    items = [rag(n, access_roles=",a," if n % 2 else ",b,") for n in range(10_000)]
    out = filter_chunks.main(items, "a")
    fits_a_code_node(out, ("chunks", "dropped", "warnings"))
    assert [c["metadata"]["segment_id"] for c in out["chunks"]] == [f"s{n}" for n in range(1, 60, 2)]
    assert out["dropped_count"] == 5000 and out["warnings"][0].startswith("5000 chunks passed the filter")
    return 10_000 * 150


def filter_100_huge_acls() -> int:
    roles = [f"role{n}" for n in range(100_000)]
    items = [rag(n, access_roles=f"{','.join(roles)},x{n}") for n in range(50)]  # 50 distinct 1 MB ACLs
    items += [rag(n, access_roles=roles + [f"x{n}"]) for n in range(50, 100)]  # 50 lists of 100,001 roles
    items += [rag(n, access_roles=",".join(roles[:5000])) for n in range(100, 200)]  # long, within the bound
    out = filter_chunks.main(items, "nobody")
    fits_a_code_node(out, ("chunks", "dropped", "warnings"))
    assert out["dropped_count"] == 200 and all(len(d["detail"]) <= 2000 for d in out["dropped"])
    assert [d["reason"] for d in out["dropped"][:29]] == ["malformed_acl"] * 29  # too long: fails closed
    assert filter_chunks.main(items[100:101], "nobody")["dropped"][0]["reason"] == "no_matching_role"
    assert filter_chunks.main(items[100:101], "role4999")["kept_count"] == 1
    return 50 * 1_090_000 + 50 * 100_001 * 8 + 100_000 * 55 + 100 * 50_000  # strings, list slots, role names


def filter_deep_json_and_numbers() -> int:
    items = [
        rag(1, access_roles="[" * 100_000),
        rag(2, access_roles=",a,", d=1.7e12),
        rag(3, access_roles=",a,", d=10**5000),
        rag(4, access_roles=",a,", d=float("nan")),
        rag(5, access_roles=",a,", d="2025-01-02"),
    ]
    out = filter_chunks.main(items, "a", condition={"field": "d", "op": "after", "value": "2024-01-01"})
    fits_a_code_node(out, ("chunks", "dropped", "warnings"))
    assert [c["metadata"]["segment_id"] for c in out["chunks"]] == ["s5"]
    assert [d["reason"] for d in out["dropped"]] == ["malformed_acl"] + ["uncomparable_value"] * 3
    raises(lambda: filter_chunks.main("[" * 100_000, "a"), "rag_chunks")
    raises(lambda: filter_chunks.main([], "a", condition='{"not":' * 10_000 + "{}" + "}" * 10_000), "condition")
    raises(lambda: filter_chunks.main([], "a", condition={"field": "d", "op": "is", "value": 10**400}), "condition")
    raises(lambda: filter_chunks.main([], "a", condition={"field": "d", "op": "after", "value": 1.7e12}), "condition")
    raises(lambda: filter_chunks.main([], "[" * 100_000), "user_roles")
    return 400_000


# --- the small nodes -------------------------------------------------------------------------------------------


def acl_prefilter_hostile() -> int:
    for slots in (10**7, 10**400):
        raises(lambda slots=slots: acl_prefilter.main("a", slots), "role_slots")
    raises(lambda: acl_prefilter.main([f"r{n}" for n in range(10_000)]), "user_roles: 10000 roles")
    raises(lambda: acl_prefilter.main("[" * 100_000), "user_roles")
    raises(lambda: acl_prefilter.main(["a\ud800"]), "user_roles")
    raises(lambda: acl_prefilter.main([10**5000]), "user_roles")
    return 200_000


def remember_turn_hostile() -> int:
    history = [{"query": "q" * 10_000, "answer": "[C:1] " * 2_000} for _ in range(300)]
    out = remember_turn.main(history, "q\ud800" * MB, "［Ｃ：１］" * MB, max_turns=30)
    fits_a_code_node(out, ("history",))
    assert (
        "[C:" not in out["history_text"] and "［Ｃ：" not in out["history_text"] and "\ud800" not in out["history_text"]
    )
    raises(lambda: remember_turn.main("[" * 100_000), "history")
    raises(lambda: remember_turn.main(None, max_turns=10**400), "max_turns")
    return 300 * 22_000 + 12 * MB


def web_search_request_hostile() -> int:
    body = json.loads(web_search_request.main("巡\ud800" * 100_000)["body"])
    assert len(body["query"]) == 200_000 and "\ud800" not in body["query"]
    raises(lambda: web_search_request.main("q", 10**400), "count")
    return 800_000


# --- the validator (its own branch owns it: here it is only called) -------------------------------------------

CHUNKS = [{"id": str(n), "document_title": f"T{n}", "url": "https://e.com", "source_type": "rag"} for n in range(1, 31)]


def validator_10000_markers() -> int:
    answer = "".join(f"第{n}句话说明一些事情[C:{n % 40 + 1}]。" for n in range(10_000))[:100_000]
    batch = validate_citations.main(answer, CHUNKS)
    stream = CitationStream(CHUNKS)
    shown = [stream.feed(answer[i : i + 7]) for i in range(0, len(answer), 7)] + [stream.finish()]
    assert "".join(shown) == batch["answer"] and len(batch["citations"]) == 30
    assert stream.result()["invalid_ids"] == batch["invalid_ids"]
    return 4 * len(answer)


PREFIXES = [
    "[C:1," * 20,
    "[" * 5000,
    "[C:" + "1, " * 30,
    "【C：" + "1，" * 40,
    "[C:" + " " * 100 + "1]",
    "[C:1-" + "9" * 80,
    "[c:1,C:2,C:3,C:4,C:5,C:6,C:7,C:8,C:9,C:10,C:11,C:12,C:13,C:14]",
    "``" + "[C:1" * 100,
]


def validator_prefixes_one_character_at_a_time() -> int:
    total = 0
    for prefix in PREFIXES:
        answer = prefix * 20
        total += len(answer)
        stream = CitationStream(CHUNKS)
        shown = []
        for char in answer:
            shown.append(stream.feed(char))
            assert len(stream.pending) <= 63
        shown.append(stream.finish())
        assert "".join(shown) == validate_citations.main(answer, CHUNKS)["answer"]
    return 4 * total


CASES: dict[str, Callable[[], int]] = {
    f.__name__: f
    for f in (
        merge_5mb_chunks,
        merge_10000_chunks,
        merge_marker_flood,
        merge_deep_json,
        merge_huge_numbers_nan_surrogates,
        filter_5mb_chunks,
        filter_10000_chunks,
        filter_100_huge_acls,
        filter_deep_json_and_numbers,
        acl_prefilter_hostile,
        remember_turn_hostile,
        web_search_request_hostile,
        validator_10000_markers,
        validator_prefixes_one_character_at_a_time,
    )
}


def measure(case: Callable[[], int]) -> tuple[float, int, int]:
    """(seconds, peak bytes allocated while it ran, its input size in bytes)."""
    tracemalloc.start()
    try:
        started = time.perf_counter()
        size = case()
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return seconds, peak, size


def run() -> bool:
    rows, worst_time, worst_peak = [], ("", 0.0), ("", 0)
    for name, case in CASES.items():
        seconds, peak, _ = measure(case)
        rows.append((name, f"{seconds:.3f}", f"{peak / MB:.1f}"))
        worst_time = max(worst_time, (name, seconds), key=lambda w: w[1])
        worst_peak = max(worst_peak, (name, peak), key=lambda w: w[1])
    from tests.hostile.test_hostile_plugin import plugin_cases  # the plugin process: time, and its peak resident memory

    for name, seconds, rss in plugin_cases():
        rows.append((name, f"{seconds:.3f}", f"{rss / MB:.1f} (process RSS)"))
        worst_time = max(worst_time, (name, seconds), key=lambda w: w[1])
    print_table(
        "Hostile input: each a clear error or a correct result (time with tracemalloc on)",
        ("case", "seconds", "peak MB"),
        rows,
    )
    print(
        f"worst time: {worst_time[1]:.3f} s ({worst_time[0]}); worst peak memory: {worst_peak[1] / MB:.1f} MB "
        f"({worst_peak[0]})"
    )
    return True
