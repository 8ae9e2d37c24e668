"""G-Cite merge node: knowledge-base and web-search chunks -> one numbered UnifiedChunk list.

A Dify Code node (standard library only, Python 3.10 syntax, self-contained). Paste this whole file into a
Code node, or use the plugin tool `merge_chunks`, which runs this same code.

Outputs:
  formatted_chunks  "[C:1]\\n<content>\\n\\n[C:2]\\n<content>" for the LLM's context
  chunk_count       number of chunks
  chunk_metadata    the UnifiedChunk list (reaches the client in the node_finished event)
  skipped           items that were not used, each {source, index, reason}
"""

import ast
import datetime
import html
import json
import math
import re
from urllib.parse import urlsplit, urlunsplit

# --- Marker grammar (the part this node needs) --------------------------------------------------------
# The citation validator accepts markers that open with one of these brackets, then optional spaces, then
# `C` in either case, optional spaces and an ASCII or full-width colon. Any such opening inside chunk
# content is neutralised, so the only markers the LLM sees are the headers this node writes.
MARKER_OPENING = re.compile(r"[\[【［][ \t\u00a0\u3000]*[Cc][ \t\u00a0\u3000]*[:：]")
NEUTRAL_BRACKET = {"[": "(", "【": "（", "［": "（"}
MARKER_HEADER = "[C:{id}]"

# --- Web result field priority --------------------------------------------------------------------------
TITLE_FIELDS = ("title", "name")
URL_FIELDS = ("url", "link", "href")
CONTENT_FIELDS = ("content", "summary", "snippet", "body", "description", "text")
SITE_FIELDS = ("site_name", "siteName", "website", "source")
DATE_FIELDS = ("published_date", "publishedDate", "datePublished", "date", "dateLastCrawled", "page_age")
SCORE_FIELDS = ("score", "authority_score", "rerank_score")

# Where each provider puts its result list, tried in this order on a dict envelope.
WEB_RESULT_PATHS = (
    ("references",),  # Baidu Qianfan AI search
    ("data", "webPages", "value"),  # Bocha raw
    ("webPages", "value"),  # Bing raw
    ("search_results",),  # official Google (SerpAPI) plugin
    ("organic_results",),  # SerpAPI raw
    ("organic",),  # Serper raw, official Serper and Bing plugins
    ("web", "results"),  # Brave
    ("results",),  # Tavily raw and plugin, Exa, SearXNG raw
    ("items",),  # Google CSE
    ("data",),  # Jina
    ("value",),  # Bocha value list
)
RAG_RESULT_KEYS = ("result", "results", "chunks")
TOOL_ENVELOPE_KEY = "json"  # a Dify tool node's outputs {text, files, json}

DEFAULT_MAX_WEB_RESULTS = 5
DEFAULT_MAX_CHUNKS = 30  # the most objects a Dify Code node may output in one array
MAX_SKIPPED_REPORTED = 30  # the same limit for `skipped`: past it, one entry counts the rest

HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
ISO_DATE = re.compile(r"^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:$|[T ]\d)")
WHITESPACE_RUN = re.compile(r"\s+")


# --- Parsing the inputs ----------------------------------------------------------------------------------

def parse_structured(value, field):
    """A list/dict as given; a JSON string or Dify's Python-repr string of one parsed; None, "" or null empty."""
    if value is None:
        return []
    if isinstance(value, (list, dict)):
        return value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        try:
            return parse_structured(json.loads(text), field)
        except ValueError:
            pass
        try:
            return parse_structured(ast.literal_eval(text), field)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(
                f"{field}: expected a list of objects, or JSON text of one; got a string that is neither JSON "
                f"nor a Python literal: {text[:80]!r}"
            ) from None
    raise ValueError(f"{field}: expected a list of objects, or JSON text of one; got {type(value).__name__}")


def parse_count(value, field, minimum):
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{field}: expected a whole number >= {minimum}, got {value!r}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or value < minimum:
        raise ValueError(f"{field}: expected a whole number >= {minimum}, got {value!r}")
    return value


def rag_items(raw):
    data = parse_structured(raw, "rag_chunks")
    if isinstance(data, dict):
        for key in RAG_RESULT_KEYS:
            if isinstance(data.get(key), list):
                return data[key]
        if "content" in data:
            return [data]
        raise ValueError(
            "rag_chunks: expected the Knowledge Retrieval node's `result` list; got an object with keys "
            + ", ".join(sorted(map(str, data))[:10])
        )
    if not isinstance(data, list):
        raise ValueError(f"rag_chunks: expected a list of objects, got {type(data).__name__}")
    return data


def dig(obj, path):
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def envelope_results(obj):
    """The result list inside a provider's response object, or None when `obj` is not an envelope."""
    if isinstance(obj.get(TOOL_ENVELOPE_KEY), list):
        return obj[TOOL_ENVELOPE_KEY]
    for path in WEB_RESULT_PATHS:
        found = dig(obj, path)
        if isinstance(found, list):
            return found
    return None


def looks_like_result(obj):
    return any(obj.get(k) for k in URL_FIELDS + CONTENT_FIELDS + TITLE_FIELDS)


def provider_error(obj):
    """The message of a search API's error response (`{"code": 401, "msg": …}` and no results), else None."""
    code = obj.get("code", obj.get("status"))
    message = obj.get("msg") or obj.get("message") or obj.get("error")
    if code in (None, 0, 200, "0", "200") and not obj.get("error"):
        return None
    return f"{code}: {message}" if message else str(code)


def flatten_web(data, out, skipped, depth=0):
    """Append every result found in `data` (a list of results and/or envelopes, or one envelope) to `out`.
    A search API's error response is recorded in `skipped` and yields no result."""
    if depth > 4:
        raise ValueError("web_chunks: nested too deeply to be a search response")
    if isinstance(data, dict):
        results = envelope_results(data)
        if results is None:
            if looks_like_result(data):
                out.append(data)
                return
            error = provider_error(data)
            if error is not None:
                skipped.append(skip("web", -1, f"search provider error {error}"))
                return
            raise ValueError(
                "web_chunks: unrecognised search response (keys: " + ", ".join(sorted(map(str, data))[:10])
                + "); expected a list of results or a known provider shape (Baidu, Bocha, Tavily, SerpAPI, "
                "Serper, Bing, Brave, Google CSE, Jina, Exa, SearXNG, DuckDuckGo)"
            )
        flatten_web(results, out, skipped, depth + 1)
        return
    for element in data:
        if isinstance(element, str) and element.strip()[:1] in ("{", "["):
            element = parse_structured(element, "web_chunks")  # Dify wraps a JSON body given to an array in a list
        if isinstance(element, list) or (isinstance(element, dict) and (
                envelope_results(element) is not None or (not looks_like_result(element) and provider_error(element)))):
            flatten_web(element, out, skipped, depth + 1)
        else:
            out.append(element)


def web_items(raw, skipped):
    data = parse_structured(raw, "web_chunks")
    if not isinstance(data, (list, dict)):
        raise ValueError(f"web_chunks: expected a list of objects, got {type(data).__name__}")
    out = []
    flatten_web(data, out, skipped)
    return out


# --- Field helpers ---------------------------------------------------------------------------------------

def first_text(item, fields, clean=str.strip):
    """The first of `fields` whose value, cleaned, is not empty."""
    for field in fields:
        text = clean(text_of(item.get(field)))
        if text:
            return text
    return ""


def first_score(item, fields):
    for field in fields:
        if item.get(field) is not None:
            return to_score(item.get(field))
    return 0.0


def to_score(value):
    if isinstance(value, bool):
        return 0.0
    try:
        score = float(value)
    except (TypeError, ValueError):
        return 0.0
    return score if math.isfinite(score) else 0.0


def to_int(value):
    if isinstance(value, bool):
        return 0
    try:
        return int(float(value))
    except (TypeError, ValueError, OverflowError):
        return 0


def plain_text(value):
    """Provider text without HTML tags and entities (`<em>Dify</em> &amp; co` -> `Dify & co`)."""
    return html.unescape(HTML_TAG.sub("", value)).strip()


def one_line(value):
    return WHITESPACE_RUN.sub(" ", value).strip()


def web_url(value):
    """The URL when it is http(s) with a host, else ""."""
    try:
        parts = urlsplit(value.strip())
        return value.strip() if parts.scheme.lower() in ("http", "https") and parts.hostname else ""
    except ValueError:
        return ""


def host_of(url):
    if not url:
        return ""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return ""
    return host[4:] if host.startswith("www.") else host


def url_identity(url):
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def normalise_date(value):
    text = value.strip()
    match = ISO_DATE.match(text)
    if match:
        try:
            return datetime.date(*(int(g) for g in match.groups())).isoformat()
        except ValueError:
            pass
    return text


def neutralise_markers(text):
    return MARKER_OPENING.sub(lambda m: NEUTRAL_BRACKET[m.group(0)[0]] + m.group(0)[1:], text)


def web_subtitle(site_name, host, date):
    """The seed's fallback chain: site · date, host · date, site or host, date, ""."""
    place = site_name or host
    if place and date:
        return f"{place} · {date}"
    return place or date


# --- Normalising one item --------------------------------------------------------------------------------

def text_of(value):
    if value is None or isinstance(value, (dict, list, bool)):
        return ""
    return str(value).strip()


def rag_chunk(item):
    metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
    doc_meta = metadata.get("doc_metadata") if isinstance(metadata.get("doc_metadata"), dict) else {}
    document_name = text_of(doc_meta.get("document_name")) or text_of(metadata.get("document_name"))
    title = text_of(doc_meta.get("document_title")) or document_name or text_of(item.get("title"))
    dataset_name = text_of(metadata.get("dataset_name"))
    source_file_url = text_of(doc_meta.get("source_file_url"))
    return {
        "source_type": "rag",
        "content": neutralise_markers(text_of(item.get("content"))),
        "document_title": title,
        "url": source_file_url,
        "score": to_score(metadata.get("score")),
        "display_subtitle": dataset_name,
        "document_name": document_name or text_of(item.get("title")),
        "dataset_name": dataset_name,
        "site_name": "",
        "site_host": "",
        "source_file_url": source_file_url,
        "segment_position": to_int(metadata.get("segment_position")),
        "published_date": "",
        "dataset_id": text_of(metadata.get("dataset_id")),
        "document_id": text_of(metadata.get("document_id")),
        "segment_id": text_of(metadata.get("segment_id")),
        "provider": "",
    }


def web_chunk(item):
    url = web_url(first_text(item, URL_FIELDS))
    host = host_of(url)
    site_name = one_line(first_text(item, SITE_FIELDS, plain_text))
    date = normalise_date(first_text(item, DATE_FIELDS))
    title = one_line(first_text(item, TITLE_FIELDS, plain_text)) or site_name or host
    return {
        "source_type": "web",
        "content": neutralise_markers(first_text(item, CONTENT_FIELDS, plain_text)),
        "document_title": title,
        "url": url,
        "score": first_score(item, SCORE_FIELDS),
        "display_subtitle": web_subtitle(site_name, host, date),
        "document_name": url,
        "dataset_name": "",
        "site_name": site_name,
        "site_host": host,
        "source_file_url": url,
        "segment_position": 0,
        "published_date": date,
        "dataset_id": "",
        "document_id": "",
        "segment_id": "",
        "provider": text_of(item.get("provider")),
    }


# --- Merging ---------------------------------------------------------------------------------------------

def unique_chunks(items, source, to_chunk, identity, skipped, limit=None):
    """Normalise `items` into (input index, chunk) pairs. Unusable items are recorded in `skipped`;
    duplicates are merged keeping the higher score; only the first `limit` distinct chunks are kept."""
    kept, position_of = [], {}
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            skipped.append(skip(source, index, f"not an object ({type(item).__name__})"))
            continue
        chunk = to_chunk(item)
        if not chunk["content"]:
            skipped.append(skip(source, index, "no text"))
            continue
        key = identity(chunk)
        if key and key in position_of:
            at = position_of[key]
            if chunk["score"] > kept[at][1]["score"]:
                skipped.append(skip(source, kept[at][0], "duplicate"))
                kept[at] = (index, chunk)
            else:
                skipped.append(skip(source, index, "duplicate"))
            continue
        if limit is not None and len(kept) >= limit:
            skipped.append(skip(source, index, "over max_web_results"))
            continue
        if key:
            position_of[key] = len(kept)
        kept.append((index, chunk))
    return kept


def skip(source, index, reason):
    return {"source": source, "index": index, "reason": reason}


def ordered(pairs):
    """RAG before web; within each, score descending; ties keep input order (sort is stable)."""
    return sorted(pairs, key=lambda p: (0 if p[1]["source_type"] == "rag" else 1, -p[1]["score"]))


def format_context(chunks):
    return "\n\n".join(MARKER_HEADER.format(id=c["id"]) + "\n" + c["content"] for c in chunks)


def main(rag_chunks=None, web_chunks=None, max_web_results=DEFAULT_MAX_WEB_RESULTS,
         max_chunks=DEFAULT_MAX_CHUNKS) -> dict:
    max_web_results = parse_count(max_web_results, "max_web_results", 0)
    max_chunks = parse_count(max_chunks, "max_chunks", 1)
    skipped = []
    rag = unique_chunks(rag_items(rag_chunks), "rag", rag_chunk, lambda c: c["segment_id"], skipped)
    web = unique_chunks(web_items(web_chunks, skipped), "web", web_chunk,
                        lambda c: url_identity(c["url"]) if c["url"] else "", skipped, limit=max_web_results)
    merged = ordered(rag + web)
    for index, chunk in merged[max_chunks:]:
        skipped.append(skip(chunk["source_type"], index, "over max_chunks"))
    chunk_metadata = [{"id": str(number), **chunk} for number, (_, chunk) in enumerate(merged[:max_chunks], 1)]
    return {
        "formatted_chunks": format_context(chunk_metadata),
        "chunk_count": len(chunk_metadata),
        "chunk_metadata": chunk_metadata,
        "skipped": capped(skipped),
    }


def capped(skipped):
    if len(skipped) <= MAX_SKIPPED_REPORTED:
        return skipped
    rest = len(skipped) - (MAX_SKIPPED_REPORTED - 1)
    return skipped[:MAX_SKIPPED_REPORTED - 1] + [skip("all", -1, f"and {rest} more items not used")]
