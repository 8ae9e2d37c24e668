"""`python -m fuzz.seeds` writes the seed inputs (tests/fuzz_corpus/<target>/seed-*) from the test fixtures."""

import hashlib
import io
import json
import sys
import zipfile

from fuzz.targets import ROOT, encode

sys.path.insert(0, str(ROOT))
from tests.support.web_shapes import WEB_SHAPES  # noqa: E402

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
    yield from reader_seeds()
    yield from support_seeds()


RETROFIT_FIXTURES = ROOT / "tests" / "fixtures" / "retrofit"


def reader_seeds():
    """retrofit_reader: small DSLs as Studio exports them, one in the export API's JSON form, one with an alias;
    archive_reader: packages as the daemon's packager writes them (one with a signature's comment and
    verification entry), the daemon's own test package, and one stored uncompressed."""
    for name in ("svcvit-thinking-assistant.zh.yml", "own-0.4.0-workflow-extractor.en.yml"):
        yield "retrofit_reader", name.removesuffix(".yml"), (RETROFIT_FIXTURES / name).read_bytes()
    text = (RETROFIT_FIXTURES / "own-0.6.0-own-refusal.es.yml").read_text(encoding="utf-8")
    yield "retrofit_reader", "export_api_json", json.dumps({"data": text}).encode()
    yield (
        "retrofit_reader",
        "alias",
        b"a: &x [1, 2]\nb: [*x, *x]\napp: {mode: advanced-chat}\nworkflow: {graph: {nodes: []}}\n",
    )

    from gcite.release import signing

    entries = [
        ("manifest.yaml", b"author: gcite\nname: gcite\nversion: 0.1.0\ntype: plugin\n"),
        ("main.py", b"from dify_plugin import Plugin\n"),
        ("_assets/icon.svg", b"<svg/>"),
    ]
    yield "archive_reader", "package", signing.write_package(entries)
    yield (
        "archive_reader",
        "daemon_dummy",
        (ROOT / "tests" / "fixtures" / "dify-signing" / "dummy_plugin.difypkg").read_bytes(),
    )
    entries.append((signing.VERIFICATION_FILE, b'{"authorized_category": "community"}'))
    comment = json.dumps({"signature": "c2lnbmVk" * 43, "time": 1764633600}).encode()  # signed in shape, not by a key
    yield "archive_reader", "signed_shape", signing.write_package(entries, comment)
    stored = io.BytesIO()
    with zipfile.ZipFile(stored, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, content in (("manifest.yaml", entries[0][1]), ("dir/", b"")):
            archive.writestr(zipfile.ZipInfo(name, date_time=signing.ZIP_TIME), content)
    yield "archive_reader", "stored", stored.getvalue()


def support_seeds():
    """support_check: an answer with its markers, the chunks, the question (English and Chinese, a contradiction)."""
    chunks = [
        "Night patrols cover every floor twice, at 22:00 and 02:00. Visitors must not park in zone B.",
        "巡更每晚两次，分别在 22:00 和 02:00。访客不得在 B 区停车。",
        "The gym is open from 6 am to 10 pm, 7 days a week.",
    ]
    answer = (
        "Patrols cover every floor twice [C:1]. Visitors may park in zone B [C:1,2]. 巡更每晚三次 [C:2]。"
        "The gym opens at 7 am [C:3]. Lunch is free [C:9]."
    )
    yield "support_check", "answer", encode([answer, chunks, "When are the patrols?"], as_json=(1,))
    yield "support_check", "text_chunks", encode(["所有楼层每晚巡更两次 [C:1]。", "\x01".join(chunks[1:]), ""])


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
