"""Fuzz targets: one function per target, `target(data: bytes) -> None`, raising only when G-Cite misbehaves.

A target decodes the bytes into a node's arguments (deterministically, without the fuzzer, so `make test` can replay
a reproducer), calls the node, and checks what it returns. It raises when the node
- raises anything but a ValueError whose message starts with the name of one of its parameters (a clear error);
- returns something that is not JSON (NaN, a non-string key, an object JSON cannot hold);
- breaks an invariant: ids 1..N, no citation marker in `formatted_chunks` but the headers (also as a model might
  normalise the text), a kept chunk whose ACL does not name one of the user's roles, a kept malformed ACL, an
  array longer than a Code node may output, the stream differing from the batch or holding back more than 63
  characters.

Input format: the first byte is a bit mask, the rest is split on NUL bytes into fields (UTF-8, invalid bytes become
lone surrogates). Field i is one argument: JSON-decoded when bit i is set and it decodes, else the text itself; a
missing field leaves the argument at its default.
"""

import json
import math
import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from citations import acl_prefilter
from citations import filter as filter_chunks
from citations import memory as remember_turn
from citations import merge as merge_chunks
from citations import validate as validate_citations
from citations import web_request as web_search_request
from citations.dify_inputs import load_json
from citations.stream import CitationStream
from citations.support.check import UNCHECKED, check_support
from citations.support.weights import DEFAULT_WEIGHTS
from gcite.authoring.retrofit.reading import RetrofitRefusal, parse
from gcite.release import signing
from gcite.release.archive import ArchiveError, Limits, read_entries

MISSING = object()
ARRAY_LIMIT = 30  # a Code node's default array limit
STRING_LIMIT = 400_000  # a Code node's default string limit
NUMBER_LIMIT = 2**63


class Broken(AssertionError):
    """An invariant does not hold."""


def check(condition, message):
    if not condition:
        raise Broken(message)


# --- decoding ------------------------------------------------------------------------------------------------


def fields(data, count):
    flags, parts = (data[0], data[1:].split(b"\x00")) if data else (0, [])
    values = []
    for n in range(count):
        if n >= len(parts):
            values.append(MISSING)
            continue
        text = parts[n].decode("utf-8", "surrogateescape")
        value = text
        if flags >> n & 1:
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                value = text
        values.append(value)
    return values


def encode(values, as_json=()):
    """The bytes that decode to `values` (for seeds): JSON-encode the fields listed in `as_json`."""
    flags = sum(1 << n for n in as_json)
    parts = [json.dumps(v, ensure_ascii=False) if n in as_json else v for n, v in enumerate(values)]
    return bytes([flags]) + b"\x00".join(p.encode("utf-8", "surrogateescape") for p in parts)


def kwargs_of(names, values):
    return {name: value for name, value in zip(names, values) if value is not MISSING}


def call(node, names, data, defaults=None):
    """The node's outputs, or None when it refused the input with a clear error naming one of `names`."""
    try:
        return node(**{**(defaults or {}), **kwargs_of(names, fields(data, len(names)))})
    except ValueError as error:
        message = str(error)
        check(
            any(re.match(re.escape(name) + r"[:\[. ]", message) for name in names),
            f"error does not name an input: {message[:200]!r}",
        )
        check(len(message) <= 2000, f"error message of {len(message)} characters")
        return None


def as_json(outputs, allow_nan=False):
    try:
        return json.dumps(outputs, allow_nan=allow_nan)
    except (ValueError, TypeError, RecursionError) as error:
        raise Broken(f"output is not JSON: {error}") from None


def within_code_node_limits(outputs, arrays, strings=()):
    for name in arrays:
        check(len(outputs[name]) <= ARRAY_LIMIT, f"{name} has {len(outputs[name])} entries")
    for name in strings:
        check(len(outputs[name]) <= STRING_LIMIT, f"{name} has {len(outputs[name])} characters")
    for value in outputs.values():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            check(-NUMBER_LIMIT < value < NUMBER_LIMIT, f"number {value} out of a Code node's range")


def fold(text):
    """The text as a model might normalise it: NFKD, without Cf/Mn/Mc/Me, NFKC."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Mn", "Mc", "Me"))
    return unicodedata.normalize("NFKC", text)


def cited_ids(text):
    return [c["id"] for c in validate_citations.main(text, None)["citations"]]


def no_marker(text, what):
    """No marker, even where the validator would skip code (a model may copy text out of a code span): each
    stretch between backticks is checked on its own, as written and folded."""
    for piece in text.split("`"):
        check(not cited_ids(piece), f"a marker in {what}: {piece[:200]!r}")
        check(not cited_ids(fold(piece)), f"a look-alike marker in {what}: {piece[:200]!r}")


# --- the merge node ------------------------------------------------------------------------------------------

MERGE_ARGS = ("rag_chunks", "web_chunks", "max_web_results", "max_chunks", "web_text")


def check_merge(out):
    as_json(out)
    meta = out["chunk_metadata"]
    check([c["id"] for c in meta] == [str(n) for n in range(1, len(meta) + 1)], "ids are not 1..N")
    check(out["chunk_count"] == len(meta), "chunk_count differs from the list")
    check(len(out["skipped"]) <= ARRAY_LIMIT, f"skipped has {len(out['skipped'])} entries")
    if len(meta) <= ARRAY_LIMIT:
        check(len(out["formatted_chunks"]) <= STRING_LIMIT, "formatted_chunks over a Code node's string limit")
    expected = [c["id"] for c in meta]
    check(re.findall(r"\[C:(\d+)\]", out["formatted_chunks"]) == expected, "formatted_chunks: headers are not 1..N")
    for chunk in meta:
        no_marker(chunk["content"], "a chunk's content")
    kinds = [c["source_type"] for c in meta]
    check(kinds == sorted(kinds), "a web chunk before a knowledge chunk")
    for chunk in meta:
        check(chunk["content"] != "", "a chunk without text")
        check(isinstance(chunk["score"], float) and math.isfinite(chunk["score"]), "score not a finite float")
        check(-NUMBER_LIMIT < chunk["segment_position"] < NUMBER_LIMIT, "segment_position out of range")
        if chunk["source_type"] == "web":
            check(chunk["url"] == "" or chunk["url"].lower().startswith(("http://", "https://")), "a non-http web url")
        for key in ("document_title", "display_subtitle", "site_name", "published_date"):
            check("\n" not in chunk[key] and len(chunk[key]) <= 300, f"{key} is not one bounded line")


def merge_main(data):
    out = call(merge_chunks.main, MERGE_ARGS, data)
    if out is not None:
        check_merge(out)


def merge_web(data):
    """The web mapping: the input is one search response."""
    out = call(
        lambda web_chunks: merge_chunks.main(None, web_chunks, max_web_results=50),
        ("web_chunks",),
        data,
        {"web_chunks": None},
    )
    if out is not None:
        check_merge(out)
        check(all(c["source_type"] == "web" for c in out["chunk_metadata"]), "a knowledge chunk from web input")


# --- the filter node -----------------------------------------------------------------------------------------

FILTER_ARGS = ("rag_chunks", "user_roles", "acl_field", "condition", "case_sensitive", "missing_acl")
PUBLIC = ("", "[]")


def names_a_role(acl, roles, case_sensitive):
    """Independent of the node: some role of the user stands in the ACL's text as a whole item."""
    if isinstance(acl, str) and acl.strip().startswith("["):
        acl = load_json(acl.strip())  # a kept JSON-array ACL was readable
    text = (
        acl if isinstance(acl, str) else ",".join(map(scalar_text, acl)) if isinstance(acl, list) else scalar_text(acl)
    )
    if not case_sensitive:
        text = text.casefold()
    for role in roles:
        if re.search(r'(?:^|[\s,，;；|、"\[])' + re.escape(role) + r'(?:$|[\s,，;；|、"\]])', text):
            return True
    return False


def scalar_text(value):
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def user_roles_of(value, case_sensitive):
    try:
        roles = filter_chunks.parse_roles(value) or set()
    except ValueError:
        return set()
    return roles if case_sensitive else {r.casefold() for r in roles}


def check_filter(out, items, user_roles, acl_field, case_sensitive, missing_acl):
    as_json({k: v for k, v in out.items() if k != "chunks"})
    as_json(out["chunks"], allow_nan=True)  # the input items, unchanged (NaN in, NaN out)
    within_code_node_limits(out, ("chunks", "dropped", "warnings"))
    check(out["kept_count"] == len(out["chunks"]), "kept_count differs from chunks")
    check(out["kept_count"] + out["dropped_count"] <= len(items), "more chunks out than in")
    if out["kept_count"] + out["dropped_count"] < len(items):
        check(any("passed the filter" in w for w in out["warnings"]), "chunks cut without a warning")
    positions = [next(n for n, item in enumerate(items) if item is kept) for kept in out["chunks"]]
    check(positions == sorted(positions), "kept chunks out of input order")
    field = acl_field.strip() if isinstance(acl_field, str) else "access_roles"
    roles = user_roles_of(user_roles, case_sensitive)
    for kept in out["chunks"]:
        doc = kept.get("metadata", {}).get("doc_metadata") if isinstance(kept.get("metadata"), dict) else None
        if isinstance(doc, str) and doc.strip():
            doc = load_json(doc)  # kept, so it was readable
        acl = doc.get(field) if isinstance(doc, dict) else None
        if acl is None:
            check(missing_acl != "hidden", "kept a chunk without an ACL although missing_acl is hidden")
            continue
        if (isinstance(acl, str) and acl in PUBLIC) or acl == []:
            continue
        check(not isinstance(acl, (dict, bool)), f"kept a malformed ACL {acl!r:.80}")
        if isinstance(acl, str) and acl.strip().startswith("["):
            try:
                check(isinstance(load_json(acl.strip()), list), f"kept a malformed ACL {acl!r:.80}")
            except (ValueError, RecursionError):
                raise Broken(f"kept a malformed ACL {acl!r:.80}") from None
        check(names_a_role(acl, roles, case_sensitive), f"kept a chunk whose ACL {acl!r:.80} excludes the user")


def filter_main(data):
    values = fields(data, len(FILTER_ARGS))
    if call(filter_chunks.main, FILTER_ARGS, data) is None:
        return
    # Checked again on the parsed list itself, so that kept chunks can be found among the inputs.
    items = filter_chunks.parse_items(values[0], "rag_chunks") if values[0] is not MISSING else []
    args = dict(zip(FILTER_ARGS, values))
    out = filter_chunks.main(items, **{k: v for k, v in args.items() if k != "rag_chunks" and v is not MISSING})
    check_filter(
        out,
        items,
        None if args["user_roles"] is MISSING else args["user_roles"],
        "access_roles" if args["acl_field"] is MISSING else args["acl_field"],
        True if args["case_sensitive"] is MISSING else args["case_sensitive"],
        "visible" if args["missing_acl"] is MISSING else args["missing_acl"],
    )


def filter_acl(data):
    """The ACL reading: field 0 is one document's ACL value, field 1 the user's roles, field 2 the doc_metadata
    form (bit: JSON text instead of an object)."""
    acl, user_roles, as_text = fields(data, 3)
    doc = {} if acl is MISSING else {"access_roles": acl}
    if as_text is not MISSING and as_text:
        try:
            doc = json.dumps(doc)
        except (ValueError, RecursionError):
            pass
    items = [{"content": "x", "metadata": {"segment_id": "s", "doc_metadata": doc}}]
    user_roles = None if user_roles is MISSING else user_roles
    try:
        out = filter_chunks.main(items, user_roles)
    except ValueError as error:
        check(str(error).startswith("user_roles:"), f"error does not name user_roles: {str(error)[:200]!r}")
        return
    check_filter(out, items, user_roles, "access_roles", True, "visible")


def filter_condition(data):
    """The condition language: field 0 the condition, field 1 one document's metadata."""
    condition, doc = fields(data, 2)
    items = [{"content": "x", "metadata": {"segment_id": "s", "doc_metadata": {} if doc is MISSING else doc}}]
    try:
        out = filter_chunks.main(items, None, condition="" if condition is MISSING else condition)
    except ValueError as error:
        check(str(error).startswith("condition"), f"error does not name the condition: {str(error)[:200]!r}")
        return
    as_json({k: v for k, v in out.items() if k != "chunks"})
    as_json(out["chunks"], allow_nan=True)  # the input item, unchanged
    check(out["kept_count"] + out["dropped_count"] == 1, "the document vanished")


# --- the other nodes -----------------------------------------------------------------------------------------


def acl_prefilter_main(data):
    values = fields(data, 2)
    out = call(acl_prefilter.main, ("user_roles", "role_slots"), data)
    if out is None:
        return
    as_json(out)
    slots = [v for k, v in out.items() if k.startswith("role_") and k != "role_count"]
    check(len(slots) <= acl_prefilter.MAX_ROLE_SLOTS, "too many slots")
    filled = {v for v in slots if v != acl_prefilter.UNUSED_SLOT}
    check(len(filled) == out["role_count"], "role_count differs from the filled slots")
    check(all(v and v.strip() == v for v in slots), "an empty or padded slot")
    expected = filter_chunks.parse_roles(None if values[0] is MISSING else values[0]) or set()
    check(filled == expected, f"slots {sorted(filled)!r:.100} differ from the filter node's roles")


def remember_turn_main(data):
    out = call(remember_turn.main, ("history", "query", "answer", "max_turns"), data)
    if out is None:
        return
    as_json(out)
    within_code_node_limits(out, ("history",), ("history_text",))
    no_marker(out["history_text"], "history_text")


def web_search_request_main(data):
    values = fields(data, 2)
    out = call(web_search_request.main, ("query", "count"), data)
    if out is None:
        return
    out["body"].encode("utf-8")  # sendable
    body = json.loads(out["body"])
    query = "" if values[0] in (MISSING, None) else values[0]
    check(body["query"] == re.sub("[\ud800-\udfff]", "\ufffd", query.strip()), "the query changed")


def validate_main(data):
    out = call(validate_citations.main, ("answer", "chunk_metadata", "insufficient_phrases"), data, {"answer": ""})
    if out is None:
        return
    as_json(out)
    check(
        [c["index"] for c in out["citations"]] == list(range(1, len(out["citations"]) + 1)),
        "display numbers are not 1..K",
    )


def stream(data):
    """The streaming parser: field 0 the answer, field 1 the split points (bytes), field 2 chunk_metadata."""
    answer, cuts, chunks = fields(data, 3)
    if not isinstance(answer, str):
        answer = "" if answer is MISSING else json.dumps(answer)
    chunks = None if chunks is MISSING else chunks
    try:
        expected = validate_citations.main(answer, chunks)
    except ValueError as error:
        check(str(error).startswith(("answer", "chunk_metadata")), f"unclear error {str(error)[:200]!r}")
        return
    points = sorted(
        {b * 7 % (len(answer) + 1) for b in (cuts.encode("utf-8", "surrogateescape") if isinstance(cuts, str) else b"")}
    )
    parser = CitationStream(chunks)
    shown, last = [], 0
    for point in points + [len(answer)]:
        shown.append(parser.feed(answer[last:point]))
        check(len(parser.pending) <= 63, f"pending holds {len(parser.pending)} characters")
        last = point
    shown.append(parser.finish())
    check("".join(shown) == expected["answer"], "the stream differs from the batch")
    result = parser.result()
    for key in ("citations", "id_map", "invalid_ids", "status", "answer_without_markers"):
        check(result[key] == expected[key], f"the stream's {key} differs from the batch")


# --- the readers of files someone else made, and the support check (issue 34) -----------------------------------

ERROR_LIMIT = 2000  # characters of a clear error message


def one_line_error(error, what):
    message = str(error)
    check(message and "\n" not in message, f"{what}: not one line: {message[:200]!r}")
    check(len(message) <= ERROR_LIMIT, f"{what}: a message of {len(message)} characters")


def retrofit_reader(data):
    """gcite retrofit's reading of a DSL file's bytes: UTF-8 text (the CLI refuses other bytes itself; invalid bytes
    here become lone surrogates, which the export API's JSON escapes can carry too), then `reading.parse`: YAML or
    the export API's `{"data": "<yaml>"}`, within gcite/safeyaml.py's bounds, and the document's shape. The
    document and whether it came wrapped, or a one-line RetrofitRefusal; never another exception."""
    text = data.decode("utf-8", "surrogateescape").replace("\r\n", "\n").replace("\r", "\n")
    try:
        document, wrapped = parse(text)
    except RetrofitRefusal as refusal:
        one_line_error(refusal, "refusal")
        return
    check(isinstance(document, dict) and isinstance(wrapped, bool), "parse returned something else")
    check(document["app"]["mode"] in ("advanced-chat", "workflow"), "an app mode retrofit cannot rewire")
    check(isinstance(document["workflow"]["graph"]["nodes"], list), "no node list")


ARCHIVE_LIMITS = Limits(entry=256 * 1024, total=1024 * 1024, entries=64)  # small, so that fuzzing reaches them
DAEMON_KEYS = signing.daemon_keys()


def archive_reader(data):
    """The reader of a package someone else made (gcite/release/archive.py), as `retrofit --package` uses it
    (`read_entries`, here with small caps) and as `gcite verify` does (`signing.verify`, with the real caps): the
    entries within the caps or a verdict, or a one-line ArchiveError; never another exception."""
    try:
        entries = read_entries(data, ARCHIVE_LIMITS)
    except ArchiveError as error:
        one_line_error(error, "ArchiveError")
    else:
        check(len(entries) <= ARCHIVE_LIMITS.entries, f"{len(entries)} entries")
        check(all(isinstance(k, str) and isinstance(v, bytes) for k, v in entries.items()), "not {name: bytes}")
        check(all(len(v) <= ARCHIVE_LIMITS.entry for v in entries.values()), "an entry over the cap")
        check(sum(map(len, entries.values())) <= ARCHIVE_LIMITS.total, "entries over the total cap")
    try:
        verdict = signing.verify(data, DAEMON_KEYS)
    except ArchiveError as error:
        one_line_error(error, "ArchiveError")
        return
    check(isinstance(verdict, signing.Verification), "verify returned something else")
    check(not verdict.verified, "a fuzzed package verified against the daemon's official key")
    one_line_error(verdict.reason, "reason")


SUPPORT_KINDS = {"missing", "negation", "antonym", "number", "scope", "roles", "unchecked"}
MARKER = re.compile(r"\[C:([0-9,]{1,20})\]")


def support_check(data):
    """The support check (citations/support): field 0 the answer, its `[C:n]` markers as citations; field 1 the
    chunks (a JSON list, item n is chunk n+1's content; else the text split on \\x01); field 2 the question. It never
    raises; each cited chunk gets a verdict (a score: weak below the threshold, else supported) or `unchecked` with
    its reason (over the work budget), or nothing when the chunk has no text; reasons are of the known kinds."""
    answer, contents, question = fields(data, 3)
    answer = answer if isinstance(answer, str) else "" if answer is MISSING else json.dumps(answer)
    if isinstance(contents, str):
        contents = contents.split("\x01")
    contents = contents if isinstance(contents, list) else []
    chunks = {n: {"content": content} for n, content in enumerate(contents, start=1)}
    question = question if isinstance(question, str) else ""
    pieces, cited, last = [], set(), 0
    for match in MARKER.finditer(answer):
        pieces.append(answer[last : match.start()])
        ids = [i for i in match.group(1).split(",") if i]
        if ids:
            pieces.append({"ids": ids})
            cited.update(ids)
        last = match.end()
    pieces.append(answer[last:])
    out = check_support(pieces, chunks, question)
    check(out["text"] == "".join(p for p in pieces if isinstance(p, str)), "the text is not the answer's")
    for chunk_id in set(out["support"]) | set(out["reasons"]):
        check(chunk_id in cited, f"a verdict on chunk {chunk_id!r}, which nothing cites")
        content = chunks.get(int(chunk_id), {}).get("content")
        check(isinstance(content, str) and content.strip(), f"a verdict on chunk {chunk_id}, which has no text")
    for chunk_id, score in out["support"].items():
        check(isinstance(score, float) and math.isfinite(score) and 0 <= score <= 1, f"support {score!r}")
        kinds = [reason["kind"] for reason in out["reasons"].get(chunk_id, [])]
        check("unchecked" not in kinds, f"chunk {chunk_id} has a score and is unchecked")
        if score >= DEFAULT_WEIGHTS.threshold:
            check(not kinds or set(kinds) <= SUPPORT_KINDS - {"missing"}, f"supported, with reasons {kinds}")
    for chunk_id, reasons in out["reasons"].items():
        check(all(reason["kind"] in SUPPORT_KINDS for reason in reasons), f"an unknown reason in {reasons!r:.200}")
        if chunk_id not in out["support"]:
            check(reasons == [UNCHECKED], f"chunk {chunk_id}: no score, and not unchecked: {reasons!r:.200}")
            check(out["reason"][chunk_id].startswith("unchecked: "), "unchecked without its reason")
        check("\n" not in out["reason"][chunk_id], "a reason of more than one line")
    for proxy in ("citation_recall_proxy", "citation_precision_proxy"):
        value = out[proxy]
        check(value is None or 0 <= value <= 1, f"{proxy} {value!r}")
    check(all(len(sentence) <= 300 for sentence in out["uncited_sentences"]), "an uncited sentence over 300")
    as_json({k: v for k, v in out.items() if k != "text"})


def canary(data):
    """Fails on purpose for inputs containing `gcite-canary`: the tests use it to check that a failure writes a
    reproducer."""
    check(b"gcite-canary" not in data, "canary")


TARGETS = {
    f.__name__: f
    for f in (
        merge_main,
        merge_web,
        filter_main,
        filter_acl,
        filter_condition,
        acl_prefilter_main,
        remember_turn_main,
        web_search_request_main,
        validate_main,
        stream,
        retrofit_reader,
        archive_reader,
        support_check,
    )
}
ALL_TARGETS = {**TARGETS, "canary": canary}
