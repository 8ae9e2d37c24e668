"""Access filter: 10,000 chunks through the role ACL and a nested metadata condition."""

import json
import random

from bench.common import best_time, print_table
from nodes.filter_chunks import main

CHUNKS = 10_000
ROLES = ["运维工程师", "物业经理", "前台", "保安", "财务", "行政"]
CONDITION = json.dumps({"all": [
    {"any": [{"field": "dept", "op": "in", "value": ["ops", "facility"]}, {"field": "level", "op": "gte", "value": 3}]},
    {"not": {"field": "tags", "op": "contains", "value": "保密"}},
    {"field": "updated", "op": "after", "value": "2025-01-01"},
]})


def sample_chunks(count: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    forms = [json.dumps, ",".join, lambda r: "," + ",".join(r) + ",", "；".join, list]
    items = []
    for n in range(count):
        roles = rng.sample(ROLES, rng.randint(0, 3))
        doc = {"access_roles": rng.choice(forms)(roles), "dept": rng.choice(["ops", "hr", "facility", "it"]),
               "level": rng.randint(1, 5), "tags": json.dumps(rng.sample(["电梯", "消防", "保密", "暖通"], 2)),
               "updated": f"202{rng.randint(4, 6)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"}
        items.append({"content": f"chunk {n}", "metadata": {"segment_id": f"s{n}", "doc_metadata": doc}})
    return items


def run() -> bool:
    items = sample_chunks(CHUNKS)
    acl_only = best_time(lambda: main(items, "物业经理,前台"), repeat=3)
    nested = best_time(lambda: main(items, "物业经理,前台", condition=CONDITION), repeat=3)
    result = main(items, "物业经理,前台", condition=CONDITION)
    print_table(f"Access filter: {CHUNKS:,} chunks, 5 ACL encodings, user with 2 roles", (
        "filter", "kept", "seconds", "µs per chunk"), [
        ("roles only", main(items, "物业经理,前台")["kept_count"], f"{acl_only:.4f}", f"{acl_only / CHUNKS * 1e6:.1f}"),
        ("roles + nested condition (all/any/not, 4 leaves)", result["kept_count"], f"{nested:.4f}",
         f"{nested / CHUNKS * 1e6:.1f}"),
    ])
    return True
