"""G-Cite merge node: knowledge-base and web-search chunks -> one numbered UnifiedChunk list.

The merge Code node (`nodes/merge_chunks.py` is generated from this module: `make dsl`) and the plugin tool
`merge_chunks`, which runs this same code.

Setting: show_storage_urls (default False): a knowledge chunk's `url`/`source_file_url` is its document's
`source_file_url` only when that is an http(s) address with a host, else ""; True keeps any stored address
(oss://, s3://, a path …), which the validator shows as text, never as a link.

Outputs:
  formatted_chunks  "[C:1]\\n<content>\\n\\n[C:2]\\n<content>" for the LLM's context
  chunk_count       number of chunks
  chunk_metadata    the UnifiedChunk list (reaches the client in the node_finished event)
  skipped           items that were not used (or not wholly), each {source, index, reason}; at most 30 entries,
                    the 30th counting the rest
"""

import datetime
import html
import math
import re
from urllib.parse import urlsplit, urlunsplit

from citations.dify_inputs import TooDeep, load_json, no_surrogate, python_data, shown
from citations.neutralise import neutralise_markers

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
ENVELOPE_KEYS = frozenset([TOOL_ENVELOPE_KEY] + [path[0] for path in WEB_RESULT_PATHS])  # an envelope has one

DEFAULT_MAX_WEB_RESULTS = 5
DEFAULT_MAX_CHUNKS = 30  # the most objects a Dify Code node may output in one array
MAX_SKIPPED_REPORTED = 30  # the same limit for `skipped`: past it, one entry counts the rest
# 30 chunks of at most 12,000 characters keep `formatted_chunks` under a Code node's 400,000-character string
# limit; a longer chunk is cut (and reported in `skipped`). Titles and the like are one line, cut at 300.
MAX_CONTENT_CHARS = 12000
MAX_LINE_CHARS = 300
MAX_URL_CHARS = 4096
MAX_PROVIDER_MESSAGE = 300

HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
ISO_DATE = re.compile(r"^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:$|[T ]\d)")
WHITESPACE_RUN = re.compile(r"\s+")
URL_IGNORED = re.compile(r"[\t\r\n]")
# http(s)://, a host of ASCII letters, digits, dots and hyphens, an optional port, then anything: urlsplit gives
# each such URL the scheme http(s) and a host, without an error (web_url needs no split for it).
PLAIN_WEB_URL = re.compile(r"[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9.-]+(?::[0-9]*)?(?:[/?#].*)?", re.DOTALL)
URL_LEADING = "".join(map(chr, range(33)))  # what urlsplit strips from the start of a URL (C0 controls, space)


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
            parsed = load_json(text)
        except TooDeep:
            raise ValueError(f"{field}: JSON nested too deeply to be a list of chunks") from None
        except ValueError:
            try:
                parsed = python_data(text)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                raise ValueError(
                    f"{field}: expected a list of objects, or JSON text of one; got a string that is neither JSON "
                    f"nor a Python literal of JSON data: {text[:80]!r}"
                ) from None
        return parse_structured(parsed, field)
    raise ValueError(f"{field}: expected a list of objects, or JSON text of one; got {type(value).__name__}")


WHOLE_NUMBER = re.compile(r"[+]?[0-9]{1,18}")


def parse_count(value, field, minimum):
    """A whole number >= minimum from an int, an integral float or ASCII digits ("¹" or "١" are not numbers)."""
    if isinstance(value, str) and WHOLE_NUMBER.fullmatch(value.strip()):
        value = int(value.strip())
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{field}: expected a whole number >= {minimum}, got {shown(value, 80)}")
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
    if ENVELOPE_KEYS.isdisjoint(obj):  # a result (no key an envelope starts with): the usual case, made quick
        return None
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
    code, message = cut(line_of(code) or "error", 40), line_of(message)
    return cut(f"{code}: {message}" if message else code, MAX_PROVIDER_MESSAGE)


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
                "web_chunks: unrecognised search response (keys: "
                + ", ".join(sorted(map(str, data))[:10])
                + "); expected a list of results or a known provider shape (Baidu, Bocha, Tavily, SerpAPI, "
                "Serper, Bing, Brave, Google CSE, Jina, Exa, SearXNG, DuckDuckGo)"
            )
        flatten_web(results, out, skipped, depth + 1)
        return
    for element in data:
        if isinstance(element, str) and element.strip()[:1] in ("{", "["):
            element = parse_structured(element, "web_chunks")  # Dify wraps a JSON body given to an array in a list
        if isinstance(element, list) or (
            isinstance(element, dict)
            and (envelope_results(element) is not None or (not looks_like_result(element) and provider_error(element)))
        ):
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
        value = item.get(field)
        if value is None:  # text_of(None) is "": nothing to clean
            continue
        text = clean(text_of(value))
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
    except (TypeError, ValueError, OverflowError):
        return 0.0
    return score if math.isfinite(score) else 0.0


def to_int(value):
    """A whole number within a Code node's number range, else 0."""
    if isinstance(value, bool):
        return 0
    try:
        number = int(value) if isinstance(value, int) else int(float(value))
    except (TypeError, ValueError, OverflowError):
        return 0
    return number if -(2**63) < number < 2**63 else 0


def plain_text(value):
    """Provider text without HTML tags and entities (`<em>Dify</em> &amp; co` -> `Dify & co`)."""
    if "<" in value:  # a tag starts with "<"; html.unescape itself returns text without "&" at once
        value = HTML_TAG.sub("", value)
    return html.unescape(value).strip()


def one_line(value):
    # Fast path: printable text holds no whitespace but the ASCII space (str.isprintable), so with no double
    # space there is no run to collapse.
    if not value.isprintable() or "  " in value:
        value = WHITESPACE_RUN.sub(" ", value)
    return cut(value.strip(), MAX_LINE_CHARS)


def cut(text, limit):
    return text if len(text) <= limit else text[: limit - 1] + "…"


def web_url(value):
    """The URL when it is http(s) with a host (and not absurdly long), else "". Tabs and line breaks are removed,
    as a browser (and urlsplit) reads the URL without them."""
    if "\t" in value or "\r" in value or "\n" in value:
        value = URL_IGNORED.sub("", value)
    value = value.strip()
    if len(value) <= MAX_URL_CHARS and PLAIN_WEB_URL.fullmatch(value):
        return value  # what urlsplit reads at once as http(s) with a host
    found = web_split(value)
    return found[0] if found else ""


def web_split(value):
    """(web_url(value), its urlsplit parts, its hostname) when it is a web URL, else None: the URL split once."""
    if "\t" in value or "\r" in value or "\n" in value:
        value = URL_IGNORED.sub("", value)
    value = value.strip()
    if len(value) > MAX_URL_CHARS or not value.lstrip(URL_LEADING)[:5].lower().startswith(("http:", "https")):
        return None  # urlsplit (which strips the same leading characters) would find another scheme
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:
        return None
    return (value, parts, host) if host and parts.scheme.lower() in ("http", "https") else None


def web_address(value):
    """(web_url(value), host_of(it), url_identity(it)); ("", "", "") when it is no web URL."""
    found = web_split(value)
    if found is None:
        return "", "", ""
    url, parts, host = found
    identity = urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, ""))
    return url, host[4:] if host.startswith("www.") else host, identity


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


def web_subtitle(site_name, host, date):
    """The seed's fallback chain: site · date, host · date, site or host, date, ""."""
    place = site_name or host
    if place and date:
        return f"{place} · {date}"
    return place or date


# --- Normalising one item --------------------------------------------------------------------------------


def text_of(value):
    if type(value) is str:  # the usual case, without the checks below
        text = value.strip()
    elif value is None or isinstance(value, (dict, list, bool)):
        return ""
    else:
        try:
            text = str(value).strip()
        except ValueError:  # an int too long to print
            return ""
    return no_surrogate(text)


def line_of(value):
    if type(value) is str:
        text = value.strip()
        if text.isprintable() and "  " not in text:  # no surrogate (not printable), no whitespace but single spaces
            return text if len(text) <= MAX_LINE_CHARS else cut(text, MAX_LINE_CHARS)
    return one_line(text_of(value))


def stored_url(value, show_storage_urls):
    """A document's `source_file_url` as end users may see it: by default only an http(s) address with a host
    (an internal storage address — oss://, s3://, gs://, hdfs://, a path, file: — means nothing to them and shows
    how the storage is laid out); with `show_storage_urls` the stored value as it is (the validator shows anything
    but http(s) as text, never as a link)."""
    if not show_storage_urls:
        return web_url(text_of(value))
    text = text_of(value)
    return text if len(text) <= MAX_URL_CHARS else ""


def rag_chunk(item, show_storage_urls=False, seen=None):
    """A knowledge chunk as a UnifiedChunk. `seen` (a dict kept over one merge) remembers the document fields
    already read: the chunks of one document repeat them, and each is read once."""
    metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
    doc_meta = metadata.get("doc_metadata") if isinstance(metadata.get("doc_metadata"), dict) else {}
    names = (
        doc_meta.get("document_name"),
        metadata.get("document_name"),
        doc_meta.get("document_title"),
        item.get("title"),
        metadata.get("dataset_name"),
        doc_meta.get("source_file_url"),
    )
    if seen is not None and TEXT_KINDS.issuperset(map(type, names)):  # equal text reads the same (1 == 1.0 …)
        fields = seen.get(names)
        if fields is None:
            fields = seen[names] = document_fields(*names, show_storage_urls)
    else:
        fields = document_fields(*names, show_storage_urls)
    document_name, title, item_title, dataset_name, source_file_url = fields
    return {
        "source_type": "rag",
        "content": text_of(item.get("content")),
        "document_title": title,
        "url": source_file_url,
        "score": to_score(metadata.get("score")),
        "display_subtitle": dataset_name,
        "document_name": document_name or item_title,
        "dataset_name": dataset_name,
        "site_name": "",
        "site_host": "",
        "source_file_url": source_file_url,
        "segment_position": to_int(metadata.get("segment_position")),
        "published_date": "",
        "dataset_id": line_of(metadata.get("dataset_id")),
        "document_id": line_of(metadata.get("document_id")),
        "segment_id": line_of(metadata.get("segment_id")),
        "provider": "",
    }


TEXT_KINDS = frozenset((str, type(None)))


def document_fields(doc_name, meta_name, doc_title, item_title, dataset_name, source_file_url, show_storage_urls):
    """(document_name, title, the item's title, dataset_name, source_file_url) of a knowledge chunk."""
    document_name = line_of(doc_name) or line_of(meta_name)
    item_title = line_of(item_title)
    title = line_of(doc_title) or document_name or item_title
    return document_name, title, item_title, line_of(dataset_name), stored_url(source_file_url, show_storage_urls)


def web_chunk(item):
    """A web result as (a UnifiedChunk, the identity of its URL for finding duplicates: "" when it has none)."""
    url, host, identity = web_address(first_text(item, URL_FIELDS))
    site_name = one_line(first_text(item, SITE_FIELDS, plain_text))
    date = normalise_date(one_line(first_text(item, DATE_FIELDS)))
    title = one_line(first_text(item, TITLE_FIELDS, plain_text)) or site_name or host
    return {
        "source_type": "web",
        "content": first_text(item, CONTENT_FIELDS, plain_text),
        "document_title": title,
        "url": url,
        "score": first_score(item, SCORE_FIELDS),
        "display_subtitle": cut(web_subtitle(site_name, host, date), MAX_LINE_CHARS),
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
        "provider": line_of(item.get("provider")),
    }, identity


# --- Merging ---------------------------------------------------------------------------------------------


def unique_chunks(items, source, to_chunk, skipped, limit=None):
    """Normalise `items` into (input index, chunk) pairs; `to_chunk` gives (chunk, identity: "" for none).
    Unusable items are recorded in `skipped`; duplicates are merged keeping the higher score; only the first
    `limit` distinct chunks are kept."""
    kept, position_of = [], {}
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            skipped.append(skip(source, index, f"not an object ({type(item).__name__})"))
            continue
        chunk, key = to_chunk(item)
        if not chunk["content"]:
            skipped.append(skip(source, index, "no text"))
            continue
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


def main(
    rag_chunks=None,
    web_chunks=None,
    max_web_results=DEFAULT_MAX_WEB_RESULTS,
    max_chunks=DEFAULT_MAX_CHUNKS,
    web_text=None,
    show_storage_urls=False,
) -> dict:
    max_web_results = parse_count(max_web_results, "max_web_results", 0)
    max_chunks = parse_count(max_chunks, "max_chunks", 1)
    if not isinstance(show_storage_urls, bool):
        raise ValueError(f"show_storage_urls: expected true or false, got {shown(show_storage_urls, 80)}")
    if web_text is not None and not isinstance(web_text, (str, int, float)):
        raise ValueError(f"web_text: expected the search tool's text output, got {type(web_text).__name__}")
    skipped = []
    documents = {}  # the document fields read so far (see rag_chunk)

    def rag_pair(item):
        chunk = rag_chunk(item, show_storage_urls, documents)
        return chunk, chunk["segment_id"]

    rag = unique_chunks(rag_items(rag_chunks), "rag", rag_pair, skipped)
    found = web_items(web_chunks, skipped)
    if not found and not any(s["reason"].startswith("search provider error") for s in skipped):
        # The official Tavily tool reports a failed search as its text output, with `json` [{"data": []}].
        message = line_of(web_text)  # the search tool's `text` as one short line ("" when there is none)
        if message:
            skipped.append(skip("web", -1, f"search provider error: {message}"))
    web = unique_chunks(found, "web", web_chunk, skipped, limit=max_web_results)
    merged = ordered(rag + web)
    for index, chunk in merged[max_chunks:]:
        skipped.append(skip(chunk["source_type"], index, "over max_chunks"))
    chunk_metadata = []
    for number, (index, chunk) in enumerate(merged[:max_chunks], 1):
        if len(chunk["content"]) > MAX_CONTENT_CHARS:
            chunk["content"] = cut(chunk["content"], MAX_CONTENT_CHARS)
            skipped.append(skip(chunk["source_type"], index, f"content cut at {MAX_CONTENT_CHARS} characters"))
        chunk["content"] = neutralise_markers(chunk["content"])
        chunk_metadata.append({"id": str(number), **chunk})
    return {
        "formatted_chunks": format_context(chunk_metadata),
        "chunk_count": len(chunk_metadata),
        "chunk_metadata": chunk_metadata,
        "skipped": capped(skipped),
    }


def capped(skipped):
    """At most MAX_SKIPPED_REPORTED entries (a Code node's array limit): past it, the last one counts the rest."""
    if len(skipped) <= MAX_SKIPPED_REPORTED:
        return skipped
    rest = len(skipped) - (MAX_SKIPPED_REPORTED - 1)
    return skipped[: MAX_SKIPPED_REPORTED - 1] + [skip("all", -1, f"and {rest} more items not used")]
