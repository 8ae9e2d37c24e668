"""G-Cite citation validator: [C:N] markers -> display numbers 1..K in order of first appearance.

The validate Code node. `main` validates a whole answer with the stream scanner (`CitationStream`) and caps every
list it returns for Dify's Code node (30 items).
"""

from citations.phrases import INSUFFICIENT_DEFAULT
from citations.references import MAX_URL_CHARS
from citations.stream import CitationStream

# Dify fails a Code node whose string output (at any depth) is over 400,000 characters (CODE_MAX_STRING_LENGTH):
# every string `main` returns is capped below that, a cut one ending in CUT (issue 34, item 7)
CUT = "…[cut]"
MAX_ANSWER_CHARS = 380_000  # answer, answer_without_markers (the lists are bounded in citations.references)
MAX_FIELD_CHARS = 2_000  # a citation's text fields and its one-line reason
MAX_ITEM_CHARS = 200  # an invalid id, a reason's claim, source or missing item


def capped(value, limit):
    """A string to `limit` characters, ending in CUT when it was cut; anything else as it is."""
    if not isinstance(value, str) or len(value) <= limit:
        return value
    return value[: limit - len(CUT)] + CUT


def capped_reason(reason):
    out = {}
    for key, value in reason.items():
        out[key] = (
            [capped(item, MAX_ITEM_CHARS) for item in value]
            if isinstance(value, list)
            else capped(value, MAX_ITEM_CHARS)
        )
    return out


def capped_citation(citation):
    """A citation with every text field within MAX_FIELD_CHARS; a URL over MAX_URL_CHARS is dropped (cut, it would
    be another address)."""
    out = {key: capped(value, MAX_FIELD_CHARS) for key, value in citation.items()}
    if isinstance(citation.get("url"), str) and len(citation["url"]) > MAX_URL_CHARS:
        out["url"] = ""
    if isinstance(citation.get("reasons"), list):
        out["reasons"] = [capped_reason(r) if isinstance(r, dict) else r for r in citation["reasons"]]
    return out


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
    result["citations"] = [capped_citation(c) for c in cap_citations(result["citations"], max_list_items)]
    result["invalid_ids"] = [capped(i, MAX_ITEM_CHARS) for i in cap_texts(result["invalid_ids"], max_list_items)]
    result["uncited_sentences"] = [
        capped(s, MAX_FIELD_CHARS) for s in cap_texts(result["uncited_sentences"], max_list_items)
    ]
    for name in ("answer", "answer_without_markers"):
        result[name] = capped(result[name], MAX_ANSWER_CHARS)
    result["id_map"] = {capped(key, MAX_ITEM_CHARS): value for key, value in result["id_map"].items()}
    return result
