"""The built-in sample knowledge base, retrieved in the shape of Dify's Knowledge Retrieval `result`."""

import json
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parent / "samples"


def load_json(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text(encoding="utf-8"))


def bigrams(text: str) -> set[str]:
    chars = [c for c in text.lower() if c.isalnum()]
    return {a + b for a, b in zip(chars, chars[1:])}


def relevance(query: str, text: str) -> float:
    """Share of the query's character bigrams found in the text: a small, deterministic stand-in for a vector score."""
    wanted = bigrams(query)
    return round(len(wanted & bigrams(text)) / len(wanted), 4) if wanted else 0.0


def result_items(knowledge_base: dict[str, Any], query: str, top_k: int = 4) -> list[dict[str, Any]]:
    """Every segment with a non-zero score, best first, as Dify's knowledge_retrieval node outputs them."""
    scored = []
    for document in knowledge_base["documents"]:
        for position, segment in enumerate(document["segments"], start=1):
            score = relevance(query, segment["content"])
            if score > 0:
                scored.append((score, document, position, segment))
    scored.sort(key=lambda s: -s[0])
    return [_result_item(knowledge_base, rank, *s) for rank, s in enumerate(scored[:top_k], start=1)]


def _result_item(
    kb: dict[str, Any], rank: int, score: float, document: dict[str, Any], position: int, segment: dict[str, Any]
) -> dict[str, Any]:
    """One item as Dify's Knowledge Retrieval node outputs it for an economy dataset (the keys of Dify's
    `result`, checked in real Dify by tests/dify): no child chunks, files or summary; no index node here."""
    return {
        "metadata": {
            "_source": "knowledge",
            "dataset_id": kb["dataset_id"],
            "dataset_name": kb["dataset_name"],
            "document_id": document["document_id"],
            "document_name": document["document_name"],
            "data_source_type": "upload_file",
            "segment_id": segment["segment_id"],
            "retriever_from": "workflow",
            "score": score,
            "child_chunks": [],
            "segment_hit_count": 1,
            "segment_word_count": len(segment["content"]),
            "segment_position": position,
            "segment_index_node_hash": None,
            "doc_metadata": dict(document["doc_metadata"]),
            "position": rank,
        },
        "title": document["document_name"],
        "files": None,
        "content": segment["content"],
        "summary": None,
    }
