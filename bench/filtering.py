"""Access filter: 10,000 chunks through the role ACL and a nested metadata condition, against the node at commit
20e5c42 (before hardening) in the same run."""

import json
import random

from bench.common import BASELINE, baseline_module, paired_times, print_table, verdict
from citations.filter import main

TARGET = 1.1

CHUNKS = 10_000
ROLES = ["运维工程师", "物业经理", "前台", "保安", "财务", "行政"]
CONDITION = json.dumps(
    {
        "all": [
            {
                "any": [
                    {"field": "dept", "op": "in", "value": ["ops", "facility"]},
                    {"field": "level", "op": "gte", "value": 3},
                ]
            },
            {"not": {"field": "tags", "op": "contains", "value": "保密"}},
            {"field": "updated", "op": "after", "value": "2025-01-01"},
        ]
    }
)


def sample_chunks(count: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    forms = [json.dumps, ",".join, lambda r: "," + ",".join(r) + ",", "；".join, list]
    items = []
    for n in range(count):
        roles = rng.sample(ROLES, rng.randint(0, 3))
        doc = {
            "access_roles": rng.choice(forms)(roles),
            "dept": rng.choice(["ops", "hr", "facility", "it"]),
            "level": rng.randint(1, 5),
            "tags": json.dumps(rng.sample(["电梯", "消防", "保密", "暖通"], 2)),
            "updated": f"202{rng.randint(4, 6)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
        }
        items.append({"content": f"chunk {n}", "metadata": {"segment_id": f"s{n}", "doc_metadata": doc}})
    return items


def distinct_chunks(count: int) -> list[dict]:
    """sample_chunks where no two chunks share an ACL text, a date or tags: nothing judged once serves twice."""
    items = sample_chunks(count)
    for n, item in enumerate(items):
        doc = item["metadata"]["doc_metadata"]
        if isinstance(doc["access_roles"], str):
            doc["access_roles"] += f",r{n}"
        doc["updated"] = f"{doc['updated']}T{n % 24:02d}:{n % 60:02d}:{n // 60 % 60:02d}"
        doc["tags"] = json.dumps(json.loads(doc["tags"]) + [f"t{n}"], ensure_ascii=False)
    return items


def run() -> bool:
    items = sample_chunks(CHUNKS)
    old = baseline_module("nodes/filter_chunks.py")
    works = {
        "acl": lambda: main(items, "物业经理,前台"),
        "nested": lambda: main(items, "物业经理,前台", condition=CONDITION),
    }
    if not isinstance(old, str):
        works["acl old"] = lambda: old.main(items, "物业经理,前台")
        works["nested old"] = lambda: old.main(items, "物业经理,前台", condition=CONDITION)
    distinct = distinct_chunks(CHUNKS)
    works["distinct"] = lambda: main(distinct, "物业经理,前台", condition=CONDITION)
    if not isinstance(old, str):
        works["distinct old"] = lambda: old.main(distinct, "物业经理,前台", condition=CONDITION)
    best = paired_times(works, rounds=9)
    kept = {
        "acl": main(items, "物业经理,前台")["kept_count"],
        "nested": main(items, "物业经理,前台", condition=CONDITION)["kept_count"],
    }
    rows, verdicts = [], []
    kept["distinct"] = main(distinct, "物业经理,前台", condition=CONDITION)["kept_count"]
    for name, label in (
        ("acl", "roles only"),
        ("nested", "roles + nested condition (all/any/not, 4 leaves)"),
        ("distinct", "the same, no value shared by two chunks (report)"),
    ):
        row = [label, kept[name], f"{best[name] * 1e3:.1f}", f"{best[name] / CHUNKS * 1e6:.1f}"]
        if isinstance(old, str):
            row += ["-", "-"]
        else:
            ratio = best[name] / best[f"{name} old"]
            row += [f"{best[f'{name} old'] / CHUNKS * 1e6:.1f}", f"{ratio:.2f}"]
            if name == "nested":
                verdicts.append(
                    verdict(
                        f"filter, {label.split(' (')[0]}: now / {BASELINE} (x)", ratio, f"<= {TARGET}", ratio <= TARGET
                    )
                )
        rows.append(tuple(row))
    print_table(
        f"Access filter: {CHUNKS:,} chunks, 5 ACL encodings, user with 2 roles",
        ("filter", "kept", "ms now", "µs per chunk now", f"µs per chunk {BASELINE}", "ratio"),
        rows,
    )
    if isinstance(old, str):
        print(f"  no ratio against {BASELINE}: {old}")
        return True
    print_table("Filter targets", ("ratio", "measured", "target", "result"), verdicts)
    return all(v[-1] == "met" for v in verdicts)
