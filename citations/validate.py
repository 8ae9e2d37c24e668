"""G-Cite citation validator: [C:N] markers -> display numbers 1..K in order of first appearance.

The validate Code node. `main` validates a whole answer with the stream scanner (`CitationStream`) and caps every
list it returns for Dify's Code node (30 items).
"""

from citations.phrases import INSUFFICIENT_DEFAULT
from citations.stream import CitationStream


def cap_texts(items, limit):
    """At most `limit` strings: beyond that, the first limit-1 and a last entry that counts the rest."""
    if limit is None or len(items) <= limit:
        return items
    return items[: limit - 1] + [f"…and {len(items) - limit + 1} more"]


def cap_citations(citations, limit):
    """At most `limit` citations: beyond that, the first limit-1 and a summary entry for the rest, which has
    index 0 (no display number), id "", the rest's marker count as `count` and a title that says how many
    (every cited source stays in `id_map`, `references_markdown` and the answer's numbers)."""
    if limit is None or len(citations) <= limit:
        return citations
    rest = citations[limit - 1 :]
    summary = {key: "" for key in citations[0]}
    summary.update(
        {
            "index": 0,
            "id": "",
            "count": sum(c["count"] for c in rest),
            "document_title": f"…and {len(rest)} more cited sources (see references_markdown)",
        }
    )
    scores = [c["support"] for c in rest if c.get("support") is not None]
    summary.update(
        {
            "support": min(scores) if scores else None,
            "weak": any(c.get("weak") for c in rest),
            "reasons": [],
            "reason": "",
        }
    )
    return citations[: limit - 1] + [summary]


def main(
    answer, chunk_metadata=None, insufficient_phrases=INSUFFICIENT_DEFAULT, max_list_items=30, question=""
) -> dict:
    """`max_list_items` caps every list in the result (Dify's Code node refuses longer arrays: 30 by default);
    `question` (optional, the user's question) makes the support check weigh the question's own words down."""
    if answer is None:
        answer = ""
    if not isinstance(answer, str):
        raise ValueError(f"answer: expected text, got {type(answer).__name__}")
    if max_list_items is not None and (
        isinstance(max_list_items, bool) or not isinstance(max_list_items, int) or max_list_items < 2
    ):
        raise ValueError(f"max_list_items: expected a whole number of at least 2, got {max_list_items!r}")
    stream = CitationStream(chunk_metadata, insufficient_phrases, question)
    stream.feed(answer)
    result = stream.result()
    result["citations"] = cap_citations(result["citations"], max_list_items)
    result["invalid_ids"] = cap_texts(result["invalid_ids"], max_list_items)
    result["uncited_sentences"] = cap_texts(result["uncited_sentences"], max_list_items)
    return result
