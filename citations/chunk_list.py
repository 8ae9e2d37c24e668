"""The validator's chunk list: the merge node's `chunk_metadata` (a list, or JSON text of one) by chunk id."""

import json

CITATION_FIELDS = ("document_title", "source_type", "url", "display_subtitle", "site_name", "published_date")


def parse_chunk_metadata(value):
    """{int id: chunk} from a list or JSON text; None means the list is unknown (every id is accepted)."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"chunk_metadata: not valid JSON: {value[:80]!r}") from None
        except RecursionError:
            raise ValueError("chunk_metadata: JSON nested too deeply") from None
    if isinstance(value, dict) and isinstance(value.get("chunk_metadata"), list):
        value = value["chunk_metadata"]
    if not isinstance(value, list):
        raise ValueError(f"chunk_metadata: expected a list of chunks, got {type(value).__name__}")
    chunks = {}
    for position, chunk in enumerate(value):
        if not isinstance(chunk, dict):
            raise ValueError(f"chunk_metadata[{position}]: expected an object, got {type(chunk).__name__}")
        chunks[chunk_id_of(chunk.get("id"), position)] = chunk
    return chunks


def chunk_id_of(value, position):
    """A chunk's id as an int: digits as text or a number; a float counts when it is a whole number (1.0 is 1)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        digits = value.strip()
        if len(digits) <= 1000:
            return int(digits)
    shown = repr(value) if isinstance(value, (str, int, float)) else type(value).__name__
    raise ValueError(f"chunk_metadata[{position}].id: {shown[:80]} is not a whole number")


def field_text(value, field):
    """A chunk field as text: text as is, a number as its digits; any other value (object, list, true/false,
    null, a url that is not text) is left out as ""."""
    if isinstance(value, str):
        return value
    if field != "url" and isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                return ""
            if value.is_integer() and abs(value) < 1e16:
                return str(int(value))
        return str(value)
    return ""
