"""Check and repair a knowledge base's ACL metadata through Dify's Knowledge API: the library behind
`python -m gcite acl audit|fix` (its options and output are `gcite.cli.acl`).

What each stage does with a stored value is not described here but computed by the stages' own code: the filter
node through `citations.filter` (the code of `nodes/filter_chunks.py`), and the Knowledge Retrieval pre-filter
through `Stages`, which the caller hands in (the CLI: the pre-filter's conditions judged with Dify's SQL semantics),
so that this library imports no builder module and no local stand-in of Dify.

Dify's Knowledge API, as its source defines it (api/controllers/service_api/dataset/, services/metadata_service.py):
- `GET  /datasets/{id}/metadata` → `{"doc_metadata": [{"id", "name", "type", "count"}], "built_in_field_enabled"}`.
- `GET  /datasets/{id}/documents?page=N&limit=L` → `{"data": [document], "has_more", "limit", "total", "page"}`;
  `limit` is capped at 100 by the server, newest documents first. A document's `doc_metadata` is a list of
  `{"id", "name", "type", "value"}`, one per metadata field bound to the document (`value` is the stored value,
  `null` for a JSON null), plus the built-in fields (`"id": "built-in"`) when they are enabled.
- `GET  /datasets/{id}/documents/{doc}?metadata=only` → `{"id", "doc_type", "doc_metadata": [same items]}`.
- `POST /datasets/{id}/documents/metadata` with `{"operation_data": [{"document_id", "metadata_list": [{"id",
  "name", "value"}], "partial_update": bool}]}`. Without `partial_update` (default false) Dify REPLACES the
  document's whole metadata with `metadata_list` and drops the other fields' bindings; with `partial_update: true` it
  copies the stored metadata and sets only the listed fields. Dify versions before the flag ignore it (and replace):
  every write is therefore read back, and a write that changed another field stops the run.
- Errors are JSON `{"code", "message", "status"}`; 401 for a missing or invalid key, 403 for a key without access,
  and on Dify Cloud also 403 "Sorry, you have reached the knowledge base request rate limit of your subscription."
  (a per-minute quota, `cloud_edition_billing_rate_limit_check`), which is retried like a 429.
"""

from __future__ import annotations

import json
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from citations import acl_prefilter
from citations import filter as filter_chunks
from websearch.http_client import MAX_REDIRECTS, BodyTooLarge, RedirectRefused, Reply, exchange, parse_retry_after

# Exit codes (also in the README)
EXIT_OK = 0  # nothing outside the convention is left (audit), every needed write is done and verified (fix)
EXIT_ATTENTION = 1  # values outside the convention (audit / fix without --apply), or values left alone
EXIT_USAGE = 2  # bad arguments: no base URL or key, a malformed option
EXIT_REFUSED = 3  # the API refused the key (401/403)
EXIT_NOT_FOUND = 4  # no such dataset, or no such metadata field
EXIT_API = 5  # the API failed: retries exhausted (429/5xx/network), an unexpected answer, a write that did not hold

PAGE_LIMIT = 100  # Dify's document list caps `limit` at 100 (max_per_page)
MAX_PAGES = 10_000
DEFAULT_RETRIES = 4
QUOTA_WAIT = 20.0  # seconds between retries of Dify Cloud's quota 403 (a 60 s rolling window)
MAX_RETRY_AFTER = 120.0  # seconds; a longer Retry-After ends the run instead of hanging it
CONNECT_SECONDS = 10.0
REQUEST_SECONDS = 60.0  # one request, its whole answer included (a body that trickles in ends here)
MAX_BODY_BYTES = 64 * 2**20
DEFAULT_MAX_REQUESTS = 50_000  # one run: pages, read-backs and writes (a 100,000-document fix needs ~20,000)
DEFAULT_MAX_MINUTES = 120.0  # one run, waits included
MAX_PROBED_ROLES = 64  # a value naming more roles is judged from the first ones (the pre-filter) or as read (the node)
MAX_SHOWN_ROLES = 20
MAX_PROBED_ROLE_LENGTH = 40  # longer roles are not probed for shorter look-alikes
MISSING = object()  # the document has no value for the field (key absent / not bound)
UNREADABLE = object()  # the API's answer for this document's metadata cannot be read


class AclAdminError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


# --- What each stage does with a stored value ------------------------------------------------------------


@dataclass
class Verdict:
    """Who a stage lets see a document: everyone, users holding one of `roles`, or no one."""

    everyone: bool
    roles: tuple[str, ...] = ()
    reason: str = ""

    def text(self) -> str:
        if self.everyone:
            return "everyone"
        if self.roles:
            shown = ", ".join(map(role_label, self.roles[:MAX_SHOWN_ROLES]))
            more = len(self.roles) - MAX_SHOWN_ROLES
            return "roles " + shown + (f", … ({more} more)" if more > 0 else "")
        return "no one" + (f" ({self.reason})" if self.reason else "")


def role_label(role: str) -> str:
    """A role as printed: plain when unambiguous, else as JSON with invisible characters escaped."""
    return role if role.strip() == role and not any(c in role for c in ',"\\') and role.isprintable() else show(role)


@dataclass(frozen=True)
class Stages:
    """The pre-filter's own code, handed in by the caller. `admits(acl_field, doc_metadata, roles, missing_acl)`:
    whether Knowledge Retrieval's pre-filter (its conditions for a user with `roles`, judged as Dify's SQL judges
    them) lets a document with `doc_metadata` through; `stored_text(value)`: the text Dify's SQL matches a stored
    value as (None for a JSON null)."""

    admits: Callable[[str, dict[str, Any], list[str], str], bool]
    stored_text: Callable[[Any], str | None]


def metadata_of(field_name: str, value: Any) -> dict[str, Any]:
    return {} if value is MISSING else {field_name: value}


def prefilter_admits(stages: Stages, field_name: str, value: Any, roles: list[str], missing_acl: str) -> bool:
    return stages.admits(field_name, metadata_of(field_name, value), roles, missing_acl)


def node_result(field_name: str, value: Any, roles: list[str], missing_acl: str) -> dict[str, Any]:
    item = {"content": "", "metadata": {"doc_metadata": metadata_of(field_name, value)}}
    return filter_chunks.main([item], roles, acl_field=field_name, missing_acl=missing_acl)


def ordered_roles(value: Any) -> list[str] | None:
    """The roles the filter node reads from `value`, in the order written; None when it reads no restriction.
    Raises filter_chunks.Malformed when the value cannot be read."""
    if isinstance(value, str) and not value.strip().startswith("["):
        if value.strip().startswith("{"):
            filter_chunks.parse_roles(value)  # raises Malformed
        roles = [r.strip() for r in filter_chunks.ROLE_DELIMITERS.split(value)]
    elif isinstance(value, str):
        parsed = json.loads(value.strip()) if filter_chunks.parse_roles(value) is not None else []
        roles = [filter_chunks.role_text(e) for e in parsed] if isinstance(parsed, list) else []
    elif isinstance(value, (list, tuple)):
        roles = [filter_chunks.role_text(e) for e in value]
    else:
        roles = [filter_chunks.role_text(value)]
    unique = list(dict.fromkeys(r for r in roles if r))
    expected = filter_chunks.parse_roles(value)
    if set(unique) != (expected or set()):
        raise filter_chunks.Malformed(f"read as {sorted(expected or ())}, not {unique}")
    return unique or None


def node_verdict(field_name: str, value: Any, missing_acl: str) -> Verdict:
    no_roles = node_result(field_name, value, [], missing_acl)
    if no_roles["kept_count"]:
        return Verdict(True)
    reason = no_roles["dropped"][0]["reason"]
    if reason != "no_matching_role":
        return Verdict(False, reason=reason)
    roles = tuple(sorted(filter_chunks.parse_roles(value) or ()))
    if len(roles) > MAX_PROBED_ROLES:  # one probe per role would be quadratic: trust the node's own reading
        return Verdict(False, roles)
    kept = tuple(r for r in roles if node_result(field_name, value, [r], missing_acl)["kept_count"])
    return Verdict(False, kept)


def prefilter_verdict(
    stages: Stages, field_name: str, value: Any, missing_acl: str, candidate_roles: tuple[str, ...]
) -> Verdict:
    """Admitted for a user without roles (everyone), else for which of `candidate_roles` (the roles the value names)."""
    if prefilter_admits(stages, field_name, value, [], missing_acl):
        return Verdict(True)
    return Verdict(
        False, tuple(r for r in candidate_roles if prefilter_admits(stages, field_name, value, [r], missing_acl))
    )


def role_candidates(stages: Stages, value: Any) -> tuple[str, ...]:
    """Roles to probe the pre-filter with: the roles a value names (also when the filter node cannot read it), and
    every shorter role that a substring match could confuse with one of them (its proper prefixes and suffixes)."""
    try:
        named = set(filter_chunks.parse_roles(value) or ())
    except filter_chunks.Malformed:
        text = stages.stored_text(value) or ""  # the text Dify's SQL matches against
        for ch in '[]{}":':
            text = text.replace(ch, ",")
        named = {r.strip() for r in filter_chunks.ROLE_DELIMITERS.split(text)} - {""}
    probes = set(sorted(named)[:MAX_PROBED_ROLES])
    for role in list(probes):
        if len(role) <= MAX_PROBED_ROLE_LENGTH:
            probes.update(role[:n].strip() for n in range(1, len(role)))
            probes.update(role[n:].strip() for n in range(1, len(role)))
    return tuple(sorted(probes - {""}))


def representable(role: str) -> bool:
    """A role the convention (and the pre-filter's slots) can hold exactly."""
    return (
        role == role.strip()
        and role != ""
        and not filter_chunks.ROLE_DELIMITERS.search(role)
        and not any(bad in role for bad in acl_prefilter.FORBIDDEN_IN_ROLE)
    )


@dataclass
class Assessment:
    value: Any  # the stored value, MISSING or UNREADABLE
    status: str  # "ok" | "fix" | "unreadable" | "unset"
    target: str | None = None  # the conventional value `fix` writes
    prefilter: Verdict | None = None
    node: Verdict | None = None
    note: str = ""


def assess(field_name: str, value: Any, missing_acl: str = "visible", *, stages: Stages) -> Assessment:
    """What the pre-filter and the filter node do with `value`, and what `fix` writes (None: nothing)."""
    if value is UNREADABLE:
        return Assessment(value, "unreadable", note="the API's metadata for this document cannot be read")
    try:
        candidates = role_candidates(stages, value) if value is not MISSING else ()
        pre = prefilter_verdict(stages, field_name, value, missing_acl, candidates)
        node = node_verdict(field_name, value, missing_acl)
    except (ValueError, TypeError, RecursionError, OverflowError, MemoryError) as error:  # a stage fails on it
        return Assessment(value, "unreadable", note=f"a stage fails on this value ({type(error).__name__})")
    found = Assessment(value, "ok", prefilter=pre, node=node)
    if value is MISSING:
        found.status = "unset"
        if pre != node:  # cannot happen with the current stages; say so rather than hide it
            found.note = "the stages disagree on a document without the field"
        return found
    if value is None:
        if missing_acl == "hidden":
            found.status, found.note = "unset", "null: hidden by both stages, as an unset field is (missing_acl=hidden)"
            return found
        found.status, found.target = "fix", ""
        return found
    try:
        roles = ordered_roles(value)
    except filter_chunks.Malformed as error:
        found.status, found.note = "unreadable", f"the filter node cannot read it ({error})"
        return found
    if roles is None:
        target = ""
    elif all(representable(r) for r in roles):
        target = "," + ",".join(roles) + ","
    else:
        bad = [r for r in roles if not representable(r)]
        found.status = "unreadable"
        found.note = (
            f"role {bad[0]!r} cannot be written in the convention (it holds a delimiter, a quote or a backslash)"
        )
        return found
    if value != target:
        found.status, found.target = "fix", target
    return found


# --- Display -----------------------------------------------------------------------------------------------


def show(value: Any) -> str:
    """A value as JSON, with every invisible or look-alike space escaped, so blanks and controls can be seen."""
    if value is MISSING:
        return "(not set)"
    if value is UNREADABLE:
        return "(unreadable)"
    text = json.dumps(value, ensure_ascii=False)
    return "".join(
        c if c == " " or not (c.isspace() or unicodedata.category(c)[0] in "CZ") else f"\\u{ord(c):04x}" for c in text
    )


def safe(text: Any) -> str:
    """A document name or server message fit for a terminal: controls and invisible characters escaped."""
    return show(str(text))[1:-1]


# --- The Knowledge API ----------------------------------------------------------------------------------


def refused(error: BaseException) -> bool:
    """Whether a requests error comes from a refused connection (requests wraps urllib3's, which wraps the OS's)."""
    seen, todo = set(), [error]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, ConnectionRefusedError):
            return True
        todo += [
            e
            for e in (item.__cause__, item.__context__, getattr(item, "reason", None), *item.args)
            if isinstance(e, BaseException)
        ]
    return False


class KnowledgeApi:
    """Dify's Knowledge API over one requests.Session, with bounded retries for 429, 5xx and network errors."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        retries: int = DEFAULT_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
        log: Callable[[str], None] | None = None,
        max_requests: int = DEFAULT_MAX_REQUESTS,
        max_minutes: float = DEFAULT_MAX_MINUTES,
        clock: Callable[[], float] = time.monotonic,
        request_seconds: float = REQUEST_SECONDS,
    ):
        import requests

        self._requests = requests
        self.max_requests, self.max_minutes, self.request_seconds = max_requests, max_minutes, request_seconds
        self.clock = clock
        self.started = clock()
        self.requests_made = 0
        self.base_url = base_url.rstrip("/")
        self._key = api_key
        self.retries = retries
        self.sleep = sleep
        self.log = log or (lambda message: None)
        self.detail_endpoint = True  # GET /datasets/{id}/documents/{doc}; older Dify versions lack it
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Bearer {api_key}", "Accept": "application/json"})

    def close(self) -> None:
        self.session.close()

    def redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    def check_bounds(self, what: str) -> None:
        """The whole run's bounds: at most max_requests requests and max_minutes minutes."""
        if self.requests_made >= self.max_requests:
            raise AclAdminError(
                EXIT_API,
                f"{what}: stopped after {self.requests_made} requests to the Knowledge API, "
                f"the most one run makes (--max-requests {self.max_requests})",
            )
        minutes = (self.clock() - self.started) / 60
        if minutes >= self.max_minutes:
            raise AclAdminError(
                EXIT_API,
                f"{what}: stopped after {minutes:.1f} minutes, the longest one run takes "
                f"(--max-minutes {self.max_minutes:g})",
            )

    def run_left(self) -> float:
        """Seconds the run may still take (--max-minutes)."""
        return self.max_minutes * 60 - (self.clock() - self.started)

    def send(self, method: str, url: str, **kwargs: Any) -> Reply:
        """One request whose whole answer, body included, arrives within request_seconds and within the run's
        --max-minutes; a redirect is followed only when the library will connect it to --base-url's scheme, host
        and port (websearch.http_client)."""
        deadline = self.clock() + min(self.request_seconds, self.run_left())

        def remaining() -> float:
            return deadline - self.clock()

        return exchange(
            self.session,
            method,
            url,
            remaining=remaining,
            limit=MAX_BODY_BYTES,
            connect=CONNECT_SECONDS,
            on_request=self._count,
            **kwargs,
        )

    def _count(self) -> None:
        self.requests_made += 1

    def retry_or_fail(self, what: str, call: str, attempt: int, last: bool, problem: str) -> None:
        """After a failed attempt: wait before the next one, or fail when it was the last."""
        if last:
            raise AclAdminError(EXIT_API, f"{what}: {call} failed after {attempts(attempt + 1)}: {problem}") from None
        self.wait(attempt, None, f"{what}: {problem}")

    def request(self, method: str, path: str, what: str, **kwargs: Any) -> Any:
        url = self.base_url + path
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            self.check_bounds(what)
            try:
                response = self.send(method, url, **kwargs)
            except self._requests.exceptions.Timeout:
                problem = f"no complete answer within {self.request_seconds:g} s"
                self.retry_or_fail(what, f"{method} {url}", attempt, last, problem)
                continue
            except BodyTooLarge:
                raise AclAdminError(
                    EXIT_API, f"{what}: {method} {url} answered with a body over {MAX_BODY_BYTES // 2**20} MiB"
                ) from None
            except RedirectRefused as redirect:
                raise AclAdminError(EXIT_API, f"{what}: {method} {url} {redirect_problem(redirect)}") from None
            except self._requests.RequestException as error:
                if refused(error):  # nothing listens there: a wrong address, said once and not retried
                    raise AclAdminError(
                        EXIT_API,
                        f"{what}: cannot connect to {self.base_url} (connection refused): "
                        f"check --base-url / DIFY_BASE_URL",
                    ) from None
                problem = self.redact(f"{type(error).__name__}: {error}")
                self.retry_or_fail(what, f"{method} {url}", attempt, last, problem)
                continue
            status = response.status_code
            rate_limited = status == 429 or (status == 403 and "rate limit" in self.message(response))
            if status in (401, 403) and not rate_limited:
                raise AclAdminError(
                    EXIT_REFUSED,
                    f"{what}: the Knowledge API refused the key (HTTP {status}"
                    f"{self.message(response)}); check DIFY_DATASET_API_KEY / --api-key: a "
                    f"knowledge-base API key of the workspace that owns the dataset",
                )
            if rate_limited or status >= 500:
                if last:
                    raise AclAdminError(
                        EXIT_API,
                        f"{what}: HTTP {status} from {method} {url}"
                        f"{self.message(response)}; gave up after {attempts(attempt + 1)}",
                    )
                # Dify Cloud answers its per-minute knowledge-API quota with a 403 and no Retry-After
                floor = QUOTA_WAIT if status == 403 else 0.0
                self.wait(
                    attempt,
                    response.headers.get("Retry-After"),
                    f"{what}: HTTP {status}"
                    + (" (the subscription's knowledge-API rate limit)" if status == 403 else ""),
                    floor,
                )
                continue
            if status == 404 and not self.dify_error(response):
                raise AclAdminError(
                    EXIT_API,
                    f"{what}: {self.base_url} does not answer as Dify's Knowledge API (HTTP 404 "
                    f"from {method} {url} without Dify's JSON error): check --base-url / "
                    f"DIFY_BASE_URL, your Dify's API base ending in /v1, e.g. "
                    f"https://api.dify.ai/v1",
                )
            if status == 404:
                raise AclAdminError(
                    EXIT_NOT_FOUND, f"{what}: not found (HTTP 404 from {method} {url}{self.message(response)})"
                )
            if status >= 400:
                raise AclAdminError(EXIT_API, f"{what}: HTTP {status} from {method} {url}{self.message(response)}")
            try:
                return response.json()
            except (ValueError, RecursionError):
                raise AclAdminError(
                    EXIT_API, f"{what}: {method} {url} answered HTTP {status} with a body that is not JSON"
                ) from None
        raise AssertionError("unreachable")

    @staticmethod
    def dify_error(response: Any) -> bool:
        """Whether an error answer has the body Dify's API gives every error: {"code", "message", "status"}."""
        try:
            body = response.json()
        except ValueError:
            return False
        return isinstance(body, dict) and isinstance(body.get("code"), str) and "message" in body

    def message(self, response: Any) -> str:
        try:
            body = response.json()
        except (ValueError, RecursionError):
            return ""
        message = body.get("message") if isinstance(body, dict) else None
        return f": {safe(self.redact(str(message)))[:300]}" if message else ""

    def wait(self, attempt: int, retry_after: str | None, problem: str, floor: float = 0.0) -> None:
        delay = max(floor, min(0.5 * 2**attempt, 30.0))
        if retry_after:
            asked = parse_retry_after(retry_after)
            if asked is not None:
                if asked > MAX_RETRY_AFTER:
                    raise AclAdminError(
                        EXIT_API,
                        f"{problem}; the server asks to wait {asked:.0f} s "
                        f"(Retry-After), more than {MAX_RETRY_AFTER:.0f} s: try again later",
                    )
                delay = asked
        if delay >= self.run_left():  # the wait would end past --max-minutes: stop now, not after it
            raise AclAdminError(
                EXIT_API,
                f"{problem}; the next attempt would start {delay:g} s from now, after "
                f"the longest one run takes (--max-minutes {self.max_minutes:g}): stopped",
            )
        self.log(f"{problem}; retrying in {delay:g} s ({attempt + 1}/{self.retries})")
        self.sleep(delay)

    # endpoints
    def metadata_fields(self, dataset: str) -> dict[str, Any]:
        body = self.request("GET", f"/datasets/{dataset}/metadata", "listing the dataset's metadata fields")
        if not isinstance(body, dict) or not isinstance(body.get("doc_metadata"), list):
            raise AclAdminError(
                EXIT_API, "listing the dataset's metadata fields: the answer has no `doc_metadata` list"
            )
        return body

    def documents(self, dataset: str, keyword: str | None = None) -> Iterator[dict[str, Any]]:
        """Every document, page by page, each once. A server that says `has_more: true` but sends a page with no
        document not already listed (the same page again, or nothing) ends the listing with an error: it cannot be
        trusted to be complete. `has_more` must be true or false, not text."""
        seen: set[str] = set()
        for page in range(1, MAX_PAGES + 1):
            what = f"listing documents (page {page})"
            params: dict[str, Any] = {"page": page, "limit": PAGE_LIMIT}
            if keyword:
                params["keyword"] = keyword
            body = self.request("GET", f"/datasets/{dataset}/documents", what, params=params)
            data = body.get("data") if isinstance(body, dict) else None
            if not isinstance(data, list):
                raise AclAdminError(EXIT_API, f"{what}: the answer has no `data` list")
            has_more = body.get("has_more", False)
            if not isinstance(has_more, bool):
                raise AclAdminError(EXIT_API, f"{what}: the answer's has_more is {show(has_more)}, not true or false")
            new = 0
            for document in data:
                if not isinstance(document, dict) or not isinstance(document.get("id"), str):
                    raise AclAdminError(EXIT_API, f"{what}: an entry has no document id")
                if document["id"] not in seen:  # a document added while listing shifts the pages
                    seen.add(document["id"])
                    new += 1
                    yield document
            if not has_more:
                return
            if not new:
                said = "no documents" if not data else "only documents already listed"
                raise AclAdminError(
                    EXIT_API,
                    f"{what}: the server sent {said} but says has_more is true; stopped "
                    f"after {len(seen)} documents (the listing is not complete: run again, "
                    "or check the server)",
                )
        raise AclAdminError(EXIT_API, f"listing documents: more than {MAX_PAGES} pages")

    def document_metadata(self, dataset: str, document_id: str, name: str) -> Any:
        """The document's `doc_metadata` as the API shows it now. A Dify without the document-detail endpoint
        (404) is asked through the document list, searched by the document's name."""
        if self.detail_endpoint:
            try:
                body = self.request(
                    "GET",
                    f"/datasets/{dataset}/documents/{document_id}",
                    "reading the document back",
                    params={"metadata": "only"},
                )
                return body.get("doc_metadata") if isinstance(body, dict) else None
            except AclAdminError as error:
                if error.code != EXIT_NOT_FOUND:
                    raise
                self.detail_endpoint = False
        for document in self.documents(dataset, keyword=name):
            if document["id"] == document_id:
                return document.get("doc_metadata")
        raise AclAdminError(EXIT_API, f"reading document {document_id} back: it is no longer listed")

    def write_field(self, dataset: str, document_id: str, field_id: str, field_name: str, value: str) -> None:
        payload = {
            "operation_data": [
                {
                    "document_id": document_id,
                    "partial_update": True,
                    "metadata_list": [{"id": field_id, "name": field_name, "value": value}],
                }
            ]
        }
        self.request(
            "POST", f"/datasets/{dataset}/documents/metadata", f"writing {field_name} of {document_id}", json=payload
        )


def field_values(doc_metadata: Any) -> dict[str, Any] | None:
    """name → value from a document's `doc_metadata` (Dify's list of {id, name, type, value}; an older Dify's object);
    built-in fields left out (Dify recomputes them). None when the shape cannot be read."""
    if doc_metadata is None:
        return {}
    if isinstance(doc_metadata, dict):
        return dict(doc_metadata)
    if not isinstance(doc_metadata, list):
        return None
    values: dict[str, Any] = {}
    for entry in doc_metadata:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            return None
        if entry.get("id") != "built-in":
            values[entry["name"]] = entry.get("value")
    return values


# --- Audit and fix --------------------------------------------------------------------------------------


@dataclass
class Row:
    id: str
    name: str
    found: Assessment
    written: bool = False


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    writes: int = 0


def acl_field(api: KnowledgeApi, dataset: str, name: str) -> dict[str, Any]:
    try:
        listing = api.metadata_fields(dataset)
    except AclAdminError as error:
        if error.code == EXIT_NOT_FOUND:
            raise AclAdminError(EXIT_NOT_FOUND, f"no dataset {dataset!r} for this key ({error})") from None
        raise
    fields = [f for f in listing["doc_metadata"] if isinstance(f, dict)]
    match = [f for f in fields if f.get("name") == name]
    if not match:
        names = ", ".join(repr(f.get("name")) for f in fields) or "none"
        raise AclAdminError(
            EXIT_NOT_FOUND,
            f"the dataset has no metadata field {name!r} (its fields: {names}); "
            f"add it as a string field, or pass --acl-field",
        )
    if match[0].get("type") not in (None, "string"):
        raise AclAdminError(
            EXIT_USAGE,
            f"metadata field {name!r} is of type {match[0].get('type')!r}; the ACL field must be a string field",
        )
    if not isinstance(match[0].get("id"), str):
        raise AclAdminError(EXIT_API, f"metadata field {name!r} has no id in the API's answer")
    return match[0]


def run(
    api: KnowledgeApi,
    dataset: str,
    field_name: str,
    missing_acl: str,
    mode: str,
    on_row: Callable[[Row], None],
    report: Report,
    stages: Stages,
) -> Report:
    """mode: "audit", "dry-run" or "apply". Each row goes to `on_row` once decided (and written, with --apply)."""
    info = acl_field(api, dataset, field_name)
    for document in api.documents(dataset):
        values = field_values(document.get("doc_metadata"))
        value = UNREADABLE if values is None else values.get(field_name, MISSING)
        row = Row(document["id"], str(document.get("name", "")), assess(field_name, value, missing_acl, stages=stages))
        report.rows.append(row)
        if mode == "apply" and row.found.status == "fix":
            apply_write(api, dataset, info, row, values or {}, report)
        on_row(row)
    return report


def apply_write(
    api: KnowledgeApi, dataset: str, info: dict[str, Any], row: Row, before: dict[str, Any], report: Report
) -> None:
    """Writes the ACL field alone (partial_update), then reads the document back to prove nothing else changed."""
    name, target = info["name"], row.found.target
    assert target is not None
    api.write_field(dataset, row.id, info["id"], name, target)
    report.writes += 1
    after = field_values(api.document_metadata(dataset, row.id, row.name))
    if after is None:
        raise AclAdminError(
            EXIT_API, f"wrote {name} of document {row.id} but cannot read its metadata back: check the document by hand"
        )
    changed = {
        k: (before.get(k, MISSING), after.get(k, MISSING))
        for k in set(before) | set(after)
        if k != name and before.get(k, MISSING) != after.get(k, MISSING)
    }
    if changed:
        lost = "; ".join(f"{k}: was {show(b)}, now {show(a)}" for k, (b, a) in sorted(changed.items()))
        raise AclAdminError(
            EXIT_API,
            f"the write to document {row.id} changed other metadata ({lost}); this Dify "
            f"does not honour partial_update. Stopped: restore these values by hand",
        )
    if after.get(name, MISSING) != target:
        raise AclAdminError(
            EXIT_API,
            f"wrote {name} = {show(target)} to document {row.id} but it reads back as {show(after.get(name, MISSING))}",
        )
    row.written = True


def redirect_problem(redirect: RedirectRefused) -> str:
    """Why a redirect of the Knowledge API was not followed, and what to do."""
    fix = "set --base-url / DIFY_BASE_URL to the address that answers"
    if redirect.kind == "too-many":
        return f"redirected more than {MAX_REDIRECTS} times; {fix}"
    if redirect.kind == "method":
        return f"redirected the request (HTTP {redirect.status}), which would drop its body; {fix}"
    return (
        f"answered with a redirect to another host (HTTP {redirect.status}); gcite acl sends the key only to the "
        f"scheme, host and port of --base-url and did not follow it: {fix}"
    )


def attempts(n: int) -> str:
    return f"{n} attempt" + ("" if n == 1 else "s")
