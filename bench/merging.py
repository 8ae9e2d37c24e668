"""Merge node: knowledge chunks and web results (six providers' shapes) at 10, 1,000 and 10,000 items, against the
node at commit 20e5c42 (before hardening) in the same run."""

import json

from bench.common import BASELINE, ROOT, baseline_module, paired_times, print_table, verdict
from citations import merge as merge_chunks

SIZES = (10, 1_000, 10_000)
TARGET = 1.3
SAMPLES = ROOT / "gcite" / "local" / "samples"


def knowledge_items(count: int) -> list[dict]:
    """`count` chunks of the built-in knowledge base in the Knowledge Retrieval node's shape (segments repeated
    under new ids)."""
    kb = json.loads((SAMPLES / "knowledge_base.json").read_text(encoding="utf-8"))
    segments = [
        (document, position, segment)
        for document in kb["documents"]
        for position, segment in enumerate(document["segments"], 1)
    ]
    items = []
    for n in range(count):
        document, position, segment = segments[n % len(segments)]
        items.append(
            {
                "metadata": {
                    "_source": "knowledge",
                    "position": n + 1,
                    "dataset_id": kb["dataset_id"],
                    "dataset_name": kb["dataset_name"],
                    "document_id": document["document_id"],
                    "document_name": document["document_name"],
                    "document_data_source_type": "upload_file",
                    "segment_id": f"{segment['segment_id']}-{n}",
                    "retriever_from": "workflow",
                    "score": round(0.9 - (n % 50) / 100, 2),
                    "segment_hit_count": 1,
                    "segment_word_count": len(segment["content"]),
                    "segment_position": position,
                    "segment_index_node_hash": None,
                    "doc_metadata": dict(document["doc_metadata"], document_name=document["document_name"]),
                },
                "title": document["document_name"],
                "content": segment["content"],
            }
        )
    return items


def web_results(count: int) -> list:
    """`count` results of the sample web corpus, spread over six providers' response shapes (Baidu, Bocha, Tavily,
    Serper, Bing, Brave), each with its own URL."""
    corpus = json.loads((SAMPLES / "web_corpus.json").read_text(encoding="utf-8"))
    shaped = {name: [] for name in ("baidu", "bocha", "tavily", "serper", "bing", "brave")}
    names = list(shaped)
    for n in range(count):
        page = corpus[n % len(corpus)]
        url = f"{page['url']}{'&' if '?' in page['url'] else '?'}n={n}"
        name = names[n % len(names)]
        if name == "baidu":
            result = {
                "id": n,
                "title": f"{page['title']} - {page['site_name']}",
                "url": url,
                "content": page["content"],
                "website": page["site_name"],
                "date": page["date"][:10] + " 09:30:00",
                "type": "web",
                "authority_score": 0.7,
            }
        elif name == "bocha":
            result = {
                "id": f"https://api.bochaai.com/v1/#WebPages.{n}",
                "name": page["title"],
                "url": url,
                "displayUrl": url,
                "snippet": page["content"][:40],
                "summary": page["content"],
                "siteName": page["site_name"],
                "dateLastCrawled": page["date"][:10] + "T00:00:00Z",
            }
        elif name == "tavily":
            result = {
                "title": page["title"],
                "url": url,
                "content": page["content"],
                "score": 0.81,
                "raw_content": None,
                "published_date": "Tue, 12 Aug 2025 10:00:00 GMT",
            }
        elif name == "serper":
            result = {
                "title": page["title"],
                "link": url,
                "snippet": page["content"],
                "position": n,
                "date": page["date"],
            }
        elif name == "bing":
            result = {
                "name": page["title"],
                "url": url,
                "snippet": page["content"],
                "siteName": page["site_name"],
                "dateLastCrawled": page["date"][:10] + "T08:00:00.0000000Z",
            }
        else:
            result = {
                "title": page["title"],
                "url": url,
                "description": f"<strong>{page['title']}</strong> {page['content']}",
                "page_age": page["date"][:10] + "T00:00:00",
                "profile": {"name": page["site_name"]},
            }
        shaped[name].append(result)
    return [
        {"request_id": "r1", "references": shaped["baidu"]},
        {
            "code": 200,
            "log_id": "x",
            "msg": None,
            "data": {"_type": "SearchResponse", "webPages": {"value": shaped["bocha"]}},
        },
        {"query": "q", "answer": None, "images": [], "results": shaped["tavily"]},
        {"searchParameters": {"q": "q"}, "organic": shaped["serper"]},
        {"_type": "SearchResponse", "webPages": {"value": shaped["bing"]}},
        {"type": "search", "web": {"type": "search", "results": shaped["brave"]}},
    ]


def distinct_documents(count: int) -> list[dict]:
    """`count` knowledge chunks, each of its own document with its own web address: nothing read once serves twice."""
    items = knowledge_items(count)
    for n, item in enumerate(items):
        doc = item["metadata"]["doc_metadata"]
        doc["document_title"] = f"{doc['document_title']} {n}"
        doc["source_file_url"] = f"https://kb.example.com/files/{n}.pdf"
    return items


def inputs(size: int) -> tuple[list, list, int]:
    """Half knowledge chunks, half web results; every web result may be used (max_web_results = size)."""
    return knowledge_items(size - size // 2), web_results(size // 2), size


def run() -> bool:
    old = baseline_module("nodes/merge_chunks.py")
    rows, verdicts = [], []
    for size in SIZES:
        rag, web, limit = inputs(size)
        works = {"now": lambda rag=rag, web=web, limit=limit: merge_chunks.main(rag, web, max_web_results=limit)}
        if not isinstance(old, str):
            works[BASELINE] = lambda rag=rag, web=web, limit=limit: old.main(rag, web, max_web_results=limit)
        rounds, inner = (40, 50) if size <= 10 else (25, 1) if size <= 1_000 else (9, 1)
        best = paired_times(works, rounds=rounds, inner=inner)
        now = best["now"]
        row = [f"{size:,}", f"{now * 1e3:.3f}", f"{now / size * 1e6:.1f}"]
        if isinstance(old, str):
            row += ["-", "-", "-"]
        else:
            ratio = now / best[BASELINE]
            row += [f"{best[BASELINE] * 1e3:.3f}", f"{best[BASELINE] / size * 1e6:.1f}", f"{ratio:.2f}"]
            verdicts.append(
                verdict(f"merge, {size:,} chunks: now / {BASELINE} (x)", ratio, f"<= {TARGET}", ratio <= TARGET)
            )
        rows.append(tuple(row))
    # Report only: the least favourable knowledge base, each chunk its own document (no target).
    worst = distinct_documents(5_000)
    works = {"now": lambda: merge_chunks.main(worst, None)}
    if not isinstance(old, str):
        works[BASELINE] = lambda: old.main(worst, None)
    best = paired_times(works, rounds=9)
    rows.append(
        (
            "5,000 (each its own document)",
            f"{best['now'] * 1e3:.3f}",
            f"{best['now'] / 5_000 * 1e6:.1f}",
            *(
                ("-", "-", "-")
                if isinstance(old, str)
                else (
                    f"{best[BASELINE] * 1e3:.3f}",
                    f"{best[BASELINE] / 5_000 * 1e6:.1f}",
                    f"{best['now'] / best[BASELINE]:.2f} (report)",
                )
            ),
        )
    )
    print_table(
        "Merge node: knowledge base + six web providers' shapes (half each), 30 chunks out",
        ("items", "ms now", "µs/item now", f"ms {BASELINE}", f"µs/item {BASELINE}", "ratio"),
        rows,
    )
    if isinstance(old, str):
        print(f"  no ratio against {BASELINE}: {old}")
        return True
    print_table("Merge targets", ("ratio", "measured", "target", "result"), verdicts)
    return all(v[-1] == "met" for v in verdicts)
