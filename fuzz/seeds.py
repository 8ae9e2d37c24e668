"""`python -m fuzz.seeds` writes the seed inputs (tests/fuzz_corpus/<target>/seed-*) from the test fixtures."""

import hashlib
import json
import sys

from fuzz.targets import ROOT, encode

sys.path.insert(0, str(ROOT))
from tests.fixtures.web_shapes import WEB_SHAPES  # noqa: E402

CORPUS_ROOT = ROOT / "tests" / "fuzz_corpus"


def rag():
    base = json.loads((ROOT / "gcite" / "local" / "samples" / "knowledge_base.json").read_text(encoding="utf-8"))
    segments = [segment for document in base["documents"] for segment in document["segments"]]
    out = []
    for n, segment in enumerate(segments[:4]):
        out.append(
            {
                "content": segment["content"][:200] + " [C:9] ［Ｃ：９］",
                "metadata": {
                    "score": 0.5,
                    "segment_id": f"s{n}",
                    "dataset_name": "kb",
                    "doc_metadata": {
                        "access_roles": [",物业经理,", '["前台"]', "", None][n],
                        "d": 1.7e9,
                        "dept": "ops",
                    },
                },
            }
        )
    return out


def seeds():
    chunks = rag()
    condition = {
        "all": [
            {
                "any": [
                    {"field": "dept", "op": "in", "value": ["ops"]},
                    {"field": "d", "op": "after", "value": "2024-01-01"},
                ]
            },
            {"not": {"field": "tags", "op": "contains", "value": "x"}},
        ]
    }
    yield "merge_main", "rag_only", encode([json.dumps(chunks, ensure_ascii=False)])
    yield "merge_main", "tavily_failure", encode(["", '[{"data": []}]', "5", "30", "Tavily error: 432"], as_json=(1,))
    yield "filter_main", "roles", encode([json.dumps(chunks, ensure_ascii=False), "物业经理,前台"])
    yield (
        "filter_main",
        "condition",
        encode([chunks, ["前台"], "access_roles", condition, True, "hidden"], as_json=(0, 1, 3, 4)),
    )
    yield "filter_acl", "convention", encode([",a,b,", "a"])
    yield "filter_acl", "json_text", encode([["a", 2.0], ["2"], True], as_json=(0, 1, 2))
    yield (
        "filter_condition",
        "nested",
        encode([condition, {"dept": "ops", "d": 1.7e12, "tags": '["x"]'}], as_json=(0, 1)),
    )
    yield "acl_prefilter_main", "list", encode(['["物业经理", 3]', 3], as_json=(1,))
    yield (
        "remember_turn_main",
        "turns",
        encode([[{"query": "q", "answer": "a [C:1"}], "q2", "见 【C：2】", 3], as_json=(0, 3)),
    )
    yield "web_search_request_main", "query", encode(['巡更 "x"', 5], as_json=(1,))
    yield (
        "validate_main",
        "answer",
        encode(
            [
                "甲[C:1]乙[C:2-4]丙【C：9】`[C:1]`",
                json.dumps([{"id": str(n), "document_title": f"T{n}", "url": "https://e.com"} for n in range(1, 5)]),
            ]
        ),
    )
    yield (
        "stream",
        "answer",
        encode(["a [C:1] b [C:2, C:3] ```\n[C:1]\n``` [C:4", "\x01\x05\x09\x20", None], as_json=(2,)),
    )
    for name, (response, _) in sorted(WEB_SHAPES.items()):
        yield "merge_web", name, encode([json.dumps(response, ensure_ascii=False)])


def main() -> None:
    for target, name, data in seeds():
        folder = CORPUS_ROOT / target
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob(f"seed-{name}-*"):
            old.unlink()
        (folder / f"seed-{name}-{hashlib.sha1(data).hexdigest()[:8]}").write_bytes(data)
    print(f"seeds written under {CORPUS_ROOT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
