"""Web search over the provider the operator has: one request builder and one result mapping per provider.

Everything provider-specific lives in this file: endpoints, auth headers, request parameters, paging, freshness
values, caps, error bodies and the mapping of each result to one flat item
`{title, url, content, site_name, published_date, score, provider}` that the merge node reads without loss.

No key and no URL is ever put into an exception message, a note or a log line: messages name the provider, the
HTTP status and the provider's own error text, with every configured secret and base URL redacted from it.
"""

from __future__ import annotations

import datetime
import email.utils
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
import urllib3

from citations import merge as merge_chunks

# --- Parameters -------------------------------------------------------------------------------------------

FRESHNESS = ("any", "day", "week", "month", "year")
TOP_K_MIN, TOP_K_MAX = 1, 50
DEFAULT_TOP_K = 5
DEFAULT_TIMEOUT_SECONDS = 20.0
# The plugin runtime gives a request at most MAX_REQUEST_TIMEOUT (120 s, main.py); the whole search, retries
# included, must finish well inside it.
TIMEOUT_MIN, TIMEOUT_MAX = 1.0, 100.0

MAX_ATTEMPTS = 3  # one request plus two retries, on 429, 5xx and dropped connections
BACKOFF_BASE = 0.5  # seconds: 0.5, 1, 2, … when the provider sends no Retry-After
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MESSAGE_LIMIT = 200  # characters of a provider's own error text kept in a message
MAX_REDIRECTS = 3  # followed only to the same scheme, host and port
MAX_BODY_BYTES = 16 * 2**20  # a provider's answer larger than this is an error, not a memory hog
BODY_PIECE = 64 * 1024


class SearchError(Exception):
    """A search failed; the message names the provider and is safe to show (no key, no URL)."""


class SearchInputError(ValueError):
    """A tool parameter or credential is wrong; the message names it."""


# --- Providers ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Provider:
    name: str  # the `provider` parameter's value
    label: str  # how messages name it
    key_field: str | None  # credential holding the API key (None: SearXNG needs none)
    url_field: str  # credential holding the base URL (an override for keyed providers)
    default_base: str | None
    max_per_request: int  # most results one request can return
    max_total: int  # most results the tool can collect, paging included
    validation: str  # README/help text: what credential validation costs
    freshness: dict[str, str | None] = field(default_factory=dict)


PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    Provider("bocha", "Bocha", "bocha_api_key", "bocha_base_url", "https://api.bochaai.com", 50, 50,
             "account balance, free",
             {"any": "noLimit", "day": "oneDay", "week": "oneWeek", "month": "oneMonth", "year": "oneYear"}),
    Provider("tavily", "Tavily", "tavily_api_key", "tavily_base_url", "https://api.tavily.com", 20, 20,
             "usage endpoint, free",
             {"any": None, "day": "day", "week": "week", "month": "month", "year": "year"}),
    Provider("baidu", "Baidu AI Search", "baidu_api_key", "baidu_base_url", "https://qianfan.baidubce.com", 50, 50,
             "one search with top_k 1",
             {"any": None, "day": "week", "week": "week", "month": "month", "year": "year"}),
    Provider("serpapi", "SerpAPI", "serpapi_api_key", "serpapi_base_url", "https://serpapi.com", 10, 50,
             "account endpoint, free",
             {"any": None, "day": "qdr:d", "week": "qdr:w", "month": "qdr:m", "year": "qdr:y"}),
    Provider("brave", "Brave Search", "brave_api_key", "brave_base_url", "https://api.search.brave.com", 20, 50,
             "one search with count 1",
             {"any": None, "day": "pd", "week": "pw", "month": "pm", "year": "py"}),
    Provider("searxng", "SearXNG", None, "searxng_base_url", None, 50, 50,
             "one search on your own instance",
             {"any": None, "day": "day", "week": "week", "month": "month", "year": "year"}),
)}
# `provider: auto` takes the first configured one in this order (the README states it).
AUTO_ORDER = ("bocha", "tavily", "baidu", "serpapi", "brave", "searxng")
SERPAPI_PAGE = 10  # Google answers 10 organic results per page; `start` pages through them
SEARXNG_MAX_PAGES = 10


# --- Credentials ----------------------------------------------------------------------------------------------

def credential(credentials: dict[str, Any] | None, name: str) -> str:
    value = (credentials or {}).get(name)
    return value.strip() if isinstance(value, str) else ""


def configured(credentials: dict[str, Any] | None) -> list[str]:
    """Providers with what they need (an API key; SearXNG: a base URL), in `auto` order."""
    out = []
    for name in AUTO_ORDER:
        provider = PROVIDERS[name]
        needed = provider.key_field or provider.url_field
        if credential(credentials, needed):
            out.append(name)
    return out


def secrets_of(credentials: dict[str, Any] | None) -> list[str]:
    """Every credential value (keys and URLs), longest first, to redact from any text we pass on."""
    values = {v.strip() for v in (credentials or {}).values() if isinstance(v, str) and len(v.strip()) >= 4}
    return sorted(values, key=len, reverse=True)


def keys_of(credentials: dict[str, Any] | None) -> list[str]:
    """The configured API keys (the secret-input credentials), longest first: scrubbed from every output."""
    fields = {p.key_field for p in PROVIDERS.values() if p.key_field}
    values = {credential(credentials, name) for name in fields}
    return sorted((v for v in values if len(v) >= 4), key=len, reverse=True)


KEY_PIECE = 8  # this many characters of a key in a row identify it: a provider's "sk-TEST-9f8e…" is redacted too


def is_url(secret: str) -> bool:
    return secret.lower().startswith(("http://", "https://"))


def redact(text: str, secrets: list[str]) -> str:
    """`text` with every secret replaced by ***: a URL (a base URL) whole and its host; a key whole and every run of
    KEY_PIECE or more of its characters (its prefixes, as a provider's own cut or masking leaves them, and more)."""
    for secret in secrets:
        text = text.replace(secret, "***")
        if is_url(secret):
            host = urlsplit(secret).netloc
            if len(host) >= 4:
                text = text.replace(host, "***")
        elif len(secret) > KEY_PIECE and secret[:KEY_PIECE] != "***":
            text = _redact_pieces(text, secret)
    return text


def _redact_pieces(text: str, secret: str) -> str:
    """Replace every run of at least KEY_PIECE characters that also occurs in `secret` (found by its KEY_PIECE-grams,
    then extended as far as it goes on)."""
    grams = {secret[i:i + KEY_PIECE] for i in range(len(secret) - KEY_PIECE + 1)}
    pattern = re.compile("|".join(map(re.escape, sorted(grams))))
    out, pos = [], 0
    while True:
        match = pattern.search(text, pos)
        if match is None:
            break
        start, end = match.start(), match.end()
        piece = text[start:end]
        while end < len(text) and piece + text[end] in secret:
            piece += text[end]
            end += 1
        out += [text[pos:start], "***"]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def scrub(value: Any, keys: list[str]) -> Any:
    """`value` (results, notes) with every configured key redacted from every string in it."""
    if not keys:
        return value
    if isinstance(value, str):
        return redact(value, keys)
    if isinstance(value, dict):
        return {k: scrub(v, keys) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, keys) for v in value]
    return value


def base_url(provider: Provider, credentials: dict[str, Any] | None) -> str:
    override = credential(credentials, provider.url_field)
    url = override or provider.default_base or ""
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok = False
    if not ok:
        raise SearchInputError(f"{provider.url_field}: expected an http(s) URL such as https://host[:port][/path]")
    return url.rstrip("/")


# --- Parameters ------------------------------------------------------------------------------------------------

def parse_top_k(value: Any) -> int:
    if value is None or value == "":
        return DEFAULT_TOP_K
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not TOP_K_MIN <= value <= TOP_K_MAX:
        raise SearchInputError(f"top_k: expected a whole number from {TOP_K_MIN} to {TOP_K_MAX}, got {value!r}")
    return value


def parse_timeout(value: Any) -> float:
    if value is None or value == "":
        return DEFAULT_TIMEOUT_SECONDS
    try:
        seconds = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        seconds = math.nan
    if not TIMEOUT_MIN <= seconds <= TIMEOUT_MAX:  # also false for NaN
        raise SearchInputError(
            f"timeout_seconds: expected a number of seconds from {TIMEOUT_MIN:g} to {TIMEOUT_MAX:g}, got {value!r}")
    return seconds


def parse_freshness(value: Any) -> str:
    if value is None or value == "":
        return "any"
    if not isinstance(value, str) or value.strip().lower() not in FRESHNESS:
        raise SearchInputError(f"freshness: expected one of {', '.join(FRESHNESS)}, got {value!r}")
    return value.strip().lower()


def parse_query(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SearchInputError("query: expected the text to search for, got " + ("nothing" if not value else repr(value)[:40]))
    return value.strip()


def choose_provider(value: Any, credentials: dict[str, Any] | None) -> Provider:
    name = "auto" if value in (None, "") else value
    if not isinstance(name, str) or (name.strip().lower() not in PROVIDERS and name.strip().lower() != "auto"):
        raise SearchInputError(f"provider: expected auto or one of {', '.join(AUTO_ORDER)}, got {value!r}")
    name = name.strip().lower()
    ready = configured(credentials)
    if name == "auto":
        if not ready:
            raise SearchInputError(
                "provider: no search provider is configured; add an API key (Bocha, Tavily, Baidu AI Search, "
                "SerpAPI, Brave Search) or a SearXNG base URL in the G-Cite plugin's credentials")
        return PROVIDERS[ready[0]]
    provider = PROVIDERS[name]
    if name not in ready:
        what = "API key" if provider.key_field else "base URL"
        raise SearchInputError(f"provider: {provider.label} is not configured; add its {what} in the G-Cite "
                               f"plugin's credentials")
    return provider


# --- HTTP -------------------------------------------------------------------------------------------------------

class Budget:
    """The time left for the whole search, retries and back-off included."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.seconds, self._clock = seconds, clock
        self._deadline = clock() + seconds

    def remaining(self) -> float:
        return self._deadline - self._clock()


def parse_retry_after(value: str | None) -> float | None:
    """Seconds a `Retry-After` header asks us to wait: whole or decimal seconds, or an HTTP date (one without a zone,
    or with `-0000`, is UTC, as RFC 9110 says); None when it is neither. The one parser: `gcite.acl` uses it too."""
    if not value:
        return None
    value = value.strip()
    if re.fullmatch(r"\d{1,12}(\.\d{1,9})?", value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())


def origin_of(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, the port made explicit: where a request with the key may go."""
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    except ValueError:
        return ("", "", None)
    return (parts.scheme.lower(), (parts.hostname or "").lower(), port)


def set_read_timeout(response: requests.Response, seconds: float) -> None:
    """Make the next read of the response's socket wait at most `seconds` (no socket, e.g. a mocked response:
    nothing to do)."""
    # urllib3's response → http.client's response → its buffered reader → the SocketIO over the socket it reads
    fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
    sock = getattr(getattr(fp, "raw", None), "_sock", None)
    if sock is None:
        sock = getattr(getattr(response.raw, "connection", None), "sock", None)
    if sock is not None and hasattr(sock, "settimeout"):
        try:
            sock.settimeout(max(seconds, 0.001))
        except OSError:
            pass  # already closed: the read that follows says so


class BodyTooLarge(ValueError):
    """An answer's body is over the limit the caller set."""


def read_body(response: requests.Response, remaining: Callable[[], float], limit: int) -> None:
    """Read the body of a `stream=True` response into it (`response.content`, `.json()` then work), each socket read
    limited to the time `remaining()` says is left: a body that trickles in cannot outlast the deadline (requests'
    timeout counts each read, not the whole answer). Raises requests' ReadTimeout at the deadline, ConnectionError
    when the connection breaks, BodyTooLarge past `limit` bytes. The one reader: `gcite.acl` uses it too."""
    chunks, size = [], 0
    while True:
        left = remaining()
        if left <= 0:
            raise requests.exceptions.ReadTimeout("the answer did not end before the deadline")
        set_read_timeout(response, left)
        try:
            chunk = response.raw.read1(BODY_PIECE, decode_content=True)  # what one socket read gives
        except (urllib3.exceptions.ReadTimeoutError, TimeoutError):
            raise requests.exceptions.ReadTimeout("the answer did not end before the deadline") from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise requests.exceptions.ConnectionError(type(error).__name__) from None
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"over {limit} bytes")
    response._content = b"".join(chunks)  # noqa: SLF001 - what requests itself sets when it reads a body


def retry_after(response: requests.Response) -> float | None:
    """Seconds the provider asks us to wait (`Retry-After` as seconds or an HTTP date), else None."""
    return parse_retry_after(response.headers.get("Retry-After"))


class Client:
    """requests.Session with a per-search time budget and bounded retries; raises SearchError."""

    def __init__(self, provider: Provider, credentials: dict[str, Any] | None, budget: Budget,
                 session: requests.Session | None = None, sleep: Callable[[float], None] = time.sleep):
        self.provider, self.budget, self.sleep = provider, budget, sleep
        self.secrets = secrets_of(credentials)
        self.session = session or requests.Session()
        self.requests_made = 0

    def error(self, text: str) -> SearchError:
        return SearchError(redact(text, self.secrets))

    def call(self, method: str, url: str, **kwargs: Any) -> Any:
        """The parsed JSON body of a 2xx answer. Retries 429/5xx/dropped connections with back-off. The whole
        attempt, body included, must end within the budget; a redirect is followed only on the same host."""
        label = self.provider.label
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if self.budget.remaining() <= 0:
                raise self.timed_out()
            try:
                response = self.send(method, url, **kwargs)
            except requests.exceptions.Timeout:
                raise self.timed_out() from None
            except requests.exceptions.ConnectionError:
                if attempt < MAX_ATTEMPTS and self._wait(attempt, None):
                    continue
                raise self.error(f"could not connect to {label} (after {attempt} attempt{'s' * (attempt > 1)}); "
                                 "check the network and the base URL in the G-Cite credentials") from None
            except requests.exceptions.RequestException as exc:
                raise self.error(f"the request to {label} failed ({type(exc).__name__})") from None
            status = response.status_code
            if status in RETRY_STATUSES and attempt < MAX_ATTEMPTS and self._wait(attempt, retry_after(response)):
                continue
            if status >= 300:
                raise self.status_error(response, attempt)
            try:
                return response.json()
            except RecursionError:
                raise self.error(f"{label} answered with JSON nested too deeply to read") from None
            except ValueError:
                raise self.error(f"{label} answered HTTP {status} with a body that is not JSON "
                                 f"({response.headers.get('Content-Type') or 'no content type'})") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def timed_out(self) -> SearchError:
        return self.error(f"{self.provider.label} did not answer within {self.budget.seconds:g} s (timeout_seconds)")

    def send(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        """One request, its body read within the budget. Redirects are followed by hand, and only to the same
        scheme, host and port: requests would send the key headers (Brave's X-Subscription-Token, Baidu's
        X-Appbuilder-Authorization; it strips only Authorization) to whatever host a redirect names."""
        label = self.provider.label
        for _ in range(MAX_REDIRECTS + 1):
            self.requests_made += 1
            response = self.session.request(method, url, timeout=self.budget.remaining(), allow_redirects=False,
                                            stream=True, **kwargs)
            try:
                self.read_body(response)
            finally:
                response.close()
            if not response.is_redirect:
                return response
            target = urljoin(url, response.headers.get("Location", ""))
            if origin_of(target) != origin_of(url):
                raise self.error(f"{label} answered with a redirect to another host (HTTP {response.status_code}); "
                                 "G-Cite sends the API key only to the configured host and did not follow it: set "
                                 "the base URL in the G-Cite credentials to the address that answers")
            if response.status_code in (301, 302, 303) and method != "GET":  # would turn into a GET without body
                raise self.error(f"{label} redirected a {method} request (HTTP {response.status_code}); set "
                                 "the base URL in the G-Cite credentials to the address that answers")
            url = target
        raise self.error(f"{label} redirected more than {MAX_REDIRECTS} times")

    def read_body(self, response: requests.Response) -> None:
        try:
            read_body(response, self.budget.remaining, MAX_BODY_BYTES)
        except requests.exceptions.Timeout:
            raise self.timed_out() from None
        except BodyTooLarge:
            raise self.error(f"{self.provider.label} answered with a body over {MAX_BODY_BYTES // 2**20} MiB") from None

    def _wait(self, attempt: int, asked: float | None) -> bool:
        """Sleep before the next attempt; False when the wait would not fit in the budget."""
        delay = asked if asked is not None else BACKOFF_BASE * 2 ** (attempt - 1)
        if delay >= self.budget.remaining():
            return False
        self.sleep(delay)
        return True

    def status_error(self, response: requests.Response, attempts: int) -> SearchError:
        label, status = self.provider.label, response.status_code
        detail = error_detail(self.provider, body_of(response), status, self.secrets)
        said = f": {detail}" if detail else ""
        kind = refusal(self.provider, status, detail)
        if kind:
            return refusal_error(self, kind, f"HTTP {status}", detail)
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        if status == 429:
            return self.error(f"{label} is rate-limiting or out of quota (HTTP 429{said}){tries}")
        if status >= 500:
            return self.error(f"{label} failed with HTTP {status}{said}{tries}")
        if status in (432, 433):
            return self.error(f"{label} plan or pay-as-you-go limit reached (HTTP {status}{said})")
        return self.error(f"{label} rejected the request (HTTP {status}{said})")


def body_of(response: requests.Response) -> Any:
    try:
        return response.json()
    except (ValueError, RecursionError):
        return None


LINK = re.compile(r"(?:https?|ftp)://\S+", re.IGNORECASE)


def clip(text: Any, secrets: list[str]) -> str:
    """A provider's error text on one line, without links (they may carry a key), at most MESSAGE_LIMIT long.
    Every secret (and every identifying piece of a key) is redacted first, so a cut never leaves part of one."""
    text = re.sub(r"\s+", " ", LINK.sub("[link]", redact(str(text), secrets))).strip()
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT - 1] + "…"


def error_detail(provider: Provider, body: Any, status: int = 200, secrets: list[str] | None = None) -> str:
    """The provider's own error text from an error body, in each provider's shape (its code unless it repeats
    the HTTP status)."""
    secrets = secrets or []
    if not isinstance(body, dict):
        return ""
    if provider.name == "tavily":
        detail = body.get("detail")
        if isinstance(detail, dict):
            return clip(detail.get("error") or "", secrets)
        if isinstance(body.get("error"), dict):
            return clip(body["error"].get("message") or body["error"].get("code") or "", secrets)
        return clip(detail or "", secrets)
    if provider.name == "brave":
        error = body.get("error")
        if isinstance(error, dict):
            return clip(" ".join(str(error[k]) for k in ("code", "detail") if error.get(k)), secrets)
        return ""
    if provider.name == "serpapi":
        return clip(body.get("error") or "", secrets)
    code = body.get("code")
    message = body.get("message") or body.get("msg") or body.get("error") or ""
    if isinstance(message, dict):
        message = message.get("message") or ""
    if code in (None, "") or str(code) == str(status):
        return clip(message or "", secrets)
    return clip(f"{code}: {message}" if message else code, secrets)


def refusal(provider: Provider, status: int | str, detail: str) -> str | None:
    """"key" when the provider refused the key, "balance" when the account is out of money, else None.
    Brave answers an invalid key with 422 SUBSCRIPTION_TOKEN_INVALID, Baidu with an authentication error code,
    Bocha with 401 (and 403 means its balance is used up)."""
    status = str(status)
    if provider.name == "bocha" and (status == "403" or "enough money" in detail):
        return "balance"
    if status in ("401", "403") or "SUBSCRIPTION_TOKEN" in detail or "Authentication error" in detail:
        return "key"
    return None


def refusal_error(client: "Client", kind: str, how: str, detail: str) -> SearchError:
    label = client.provider.label
    said = f": {detail}" if detail else ""
    if kind == "balance":
        return client.error(f"{label} account balance is used up ({how}{said}); top it up on the {label} website")
    return client.error(f"{label} refused the API key ({how}{said}); check the {label} API key in the G-Cite "
                        "plugin's credentials")


# --- Result mapping ----------------------------------------------------------------------------------------------

ISO_DATE = re.compile(r"^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:$|[T ]\d)")


def text(value: Any) -> str:
    if value is None or isinstance(value, (dict, list, bool)):
        return ""
    return str(value).strip()


def plain(value: Any) -> str:
    """Provider text without HTML tags and entities (Brave marks matches with <strong>): the merge node's rule."""
    return merge_chunks.plain_text(text(value))


def one_line(value: Any) -> str:
    return re.sub(r"\s+", " ", plain(value)).strip()


def first(item: dict[str, Any], *fields: str) -> Any:
    for name in fields:
        value = item.get(name)
        if value not in (None, ""):
            return value
    return None


def iso_date(value: Any) -> str:
    """YYYY-MM-DD for ISO dates, RFC 2822 dates (Tavily news) and 'Aug 12, 2025' (Google); else the text as given."""
    raw = text(value)
    match = ISO_DATE.match(raw)
    if match:
        try:
            return datetime.date(*(int(g) for g in match.groups())).isoformat()
        except ValueError:
            return raw
    for parse in (lambda s: email.utils.parsedate_to_datetime(s).date(),
                  lambda s: datetime.datetime.strptime(s, "%b %d, %Y").date(),
                  lambda s: datetime.datetime.strptime(s, "%B %d, %Y").date()):
        try:
            return parse(raw).isoformat()
        except (TypeError, ValueError, IndexError, OverflowError):  # year 99999999999: this field only
            continue
    return raw


def score_of(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def web_url(value: Any) -> str:
    """The URL when it is http(s) with a host, else "" (a `javascript:` link from a provider is never passed on):
    the merge node's rule (tabs and line breaks removed, an absurdly long URL refused)."""
    return merge_chunks.web_url(text(value))


def flat(provider: Provider, title: Any, url: Any, content: Any, site: Any, date: Any, score: Any) -> dict[str, Any]:
    return {"title": one_line(title), "url": web_url(url), "content": plain(content), "site_name": one_line(site),
            "published_date": iso_date(date), "score": score_of(score), "provider": provider.name}


def map_bocha(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    # `datePublished` is the publish time (UTC+8); `dateLastCrawled` is the same moment mislabelled `Z`.
    return flat(p, r.get("name"), r.get("url"), first(r, "summary", "snippet"), r.get("siteName"),
                first(r, "datePublished", "dateLastCrawled"), None)


def map_tavily(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    return flat(p, r.get("title"), r.get("url"), r.get("content"), "", r.get("published_date"), r.get("score"))


def map_baidu(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    return flat(p, first(r, "title", "web_anchor"), r.get("url"), r.get("content"), r.get("website"), r.get("date"),
                r.get("rerank_score"))


def map_serpapi(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    return flat(p, r.get("title"), r.get("link"), r.get("snippet"), r.get("source"), r.get("date"), None)


def map_brave(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    profile = r.get("profile") if isinstance(r.get("profile"), dict) else {}
    return flat(p, r.get("title"), r.get("url"), r.get("description"), profile.get("name"),
                first(r, "page_age", "age"), None)


def map_searxng(p: Provider, r: dict[str, Any]) -> dict[str, Any]:
    return flat(p, r.get("title"), r.get("url"), r.get("content"), "", first(r, "publishedDate", "pubdate"),
                r.get("score"))


MAPPERS: dict[str, Callable[[Provider, dict[str, Any]], dict[str, Any]]] = {
    "bocha": map_bocha, "tavily": map_tavily, "baidu": map_baidu, "serpapi": map_serpapi, "brave": map_brave,
    "searxng": map_searxng,
}


def url_key(url: str) -> str:
    """The same page under one key, as the merge node tells duplicates apart."""
    try:
        return merge_chunks.url_identity(url)
    except ValueError:
        return url


# --- Searching ---------------------------------------------------------------------------------------------------

@dataclass
class Search:
    provider: Provider
    query: str
    top_k: int
    freshness: str
    client: Client
    base: str
    key: str
    notes: list[str] = field(default_factory=list)

    def fail(self, what: str) -> SearchError:
        return self.client.error(f"{self.provider.label} {what}")

    def detail(self, body: Any) -> str:
        return error_detail(self.provider, body, secrets=self.client.secrets)

    def results_at(self, body: Any, path: tuple[str, ...], shape: str) -> list[Any]:
        node = body
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if not isinstance(node, list):
            raise self.fail(f"answered without a result list (expected {shape})")
        return node


def run_search(provider: Provider, query: str, top_k: int, freshness: str, credentials: dict[str, Any] | None,
               budget: Budget, session: requests.Session | None = None,
               sleep: Callable[[float], None] = time.sleep) -> tuple[list[dict[str, Any]], list[str], int]:
    """(results, notes, requests made). Results are at most top_k flat items in the provider's order."""
    client = Client(provider, credentials, budget, session=session, sleep=sleep)
    search = Search(provider, query, top_k, freshness, client, base_url(provider, credentials),
                    credential(credentials, provider.key_field) if provider.key_field else "")
    wanted = top_k
    if top_k > provider.max_total:
        search.notes.append(f"{provider.label} returns at most {provider.max_total} results per search; "
                            f"top_k {top_k} was capped at {provider.max_total}")
        wanted = provider.max_total
    if freshness != "any" and provider.freshness.get(freshness) is None:
        search.notes.append(f"{provider.label} has no {freshness} filter; freshness was ignored")
    if provider.name == "baidu" and freshness == "day":
        search.notes.append("Baidu AI Search has no one-day filter; searched the last 7 days (week) instead")
    raw_pages = FETCHERS[provider.name](search, wanted)
    results, seen, duplicates = [], set(), 0
    mapper = MAPPERS[provider.name]
    for raw in raw_pages:
        if not isinstance(raw, dict):
            continue
        item = mapper(provider, raw)
        key = url_key(item["url"]) if item["url"] else ""
        if key and key in seen:
            duplicates += 1
            continue
        if key:
            seen.add(key)
        results.append(item)
    if duplicates:
        search.notes.append(f"{duplicates} result(s) repeated across {provider.label}'s pages were removed")
    if len(results) < wanted:
        search.notes.append(f"{provider.label} returned {len(results)} result(s), fewer than top_k {top_k}")
    keys = keys_of(credentials)  # a provider may echo the key inside a result: none reaches an output
    return scrub(results[:wanted], keys), scrub(search.notes, keys), client.requests_made


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Accept": "application/json"}


def fetch_bocha(s: Search, wanted: int) -> list[Any]:
    body = s.client.call("POST", s.base + "/v1/web-search", headers=bearer(s.key), json={
        "query": s.query, "count": wanted, "freshness": s.provider.freshness[s.freshness], "summary": True})
    check_code_body(s, body)
    if isinstance(body, dict) and isinstance(body.get("data"), dict) and body["data"].get("webPages") is None:
        return []  # Bocha sends `webPages: null` when nothing matched
    return s.results_at(body, ("data", "webPages", "value"), "data.webPages.value")


def fetch_tavily(s: Search, wanted: int) -> list[Any]:
    payload: dict[str, Any] = {"query": s.query, "max_results": wanted, "search_depth": "basic", "topic": "general"}
    if s.provider.freshness[s.freshness]:
        payload["time_range"] = s.provider.freshness[s.freshness]
    body = s.client.call("POST", s.base + "/search", headers=bearer(s.key), json=payload)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        raise s.fail(f"returned an error with HTTP 200: {s.detail(body)}")
    if isinstance(body, dict) and isinstance(body.get("detail"), dict):
        raise s.fail(f"returned an error with HTTP 200: {s.detail(body)}")
    return s.results_at(body, ("results",), "results")


def fetch_baidu(s: Search, wanted: int) -> list[Any]:
    payload: dict[str, Any] = {"messages": [{"role": "user", "content": s.query}], "search_source": "baidu_search_v2",
                               "resource_type_filter": [{"type": "web", "top_k": wanted}]}
    if s.provider.freshness[s.freshness]:
        payload["search_recency_filter"] = s.provider.freshness[s.freshness]
    # Qianfan's reference names `Authorization`; its AppBuilder examples use `X-Appbuilder-Authorization`: send both.
    headers = {**bearer(s.key), "X-Appbuilder-Authorization": f"Bearer {s.key}"}
    body = s.client.call("POST", s.base + "/v2/ai_search/web_search", headers=headers, json=payload)
    check_code_body(s, body)
    return [r for r in s.results_at(body, ("references",), "references")
            if not isinstance(r, dict) or r.get("type") in (None, "web")]


def fetch_serpapi(s: Search, wanted: int) -> list[Any]:
    out: list[Any] = []
    for start in range(0, wanted, SERPAPI_PAGE):
        params = {"engine": "google", "q": s.query, "api_key": s.key, "start": start, "num": SERPAPI_PAGE,
                  "output": "json"}
        if s.provider.freshness[s.freshness]:
            params["tbs"] = s.provider.freshness[s.freshness]
        body = s.client.call("GET", s.base + "/search.json", params=params)
        if not isinstance(body, dict):
            raise s.fail("answered without a result list (expected organic_results)")
        if body.get("error"):
            metadata = body.get("search_metadata") if isinstance(body.get("search_metadata"), dict) else {}
            if "hasn't returned any results" in str(body["error"]) and metadata.get("status") in (None, "Success"):
                break  # Google found nothing (more): an answer, not a failure
            raise s.fail(f"returned an error with HTTP 200: {s.detail(body)}")
        if "organic_results" not in body and "search_metadata" not in body:
            raise s.fail("answered without a result list (expected organic_results)")
        page = s.results_at(body, ("organic_results",), "organic_results") if "organic_results" in body else []
        out += page
        pagination = body.get("serpapi_pagination") or body.get("pagination") or {}
        if len(page) < SERPAPI_PAGE or not isinstance(pagination, dict) or "next" not in pagination:
            break
    return out


def fetch_brave(s: Search, wanted: int) -> list[Any]:
    out: list[Any] = []
    count = min(wanted, s.provider.max_per_request)
    for offset in range(0, 10):
        params: dict[str, Any] = {"q": s.query, "count": count, "offset": offset}
        if s.provider.freshness[s.freshness]:
            params["freshness"] = s.provider.freshness[s.freshness]
        body = s.client.call("GET", s.base + "/res/v1/web/search", params=params,
                             headers={"X-Subscription-Token": s.key, "Accept": "application/json"})
        if isinstance(body, dict) and body.get("type") == "ErrorResponse":
            raise s.fail(f"returned an error with HTTP 200: {s.detail(body)}")
        if not isinstance(body, dict) or ("web" not in body and body.get("type") != "search"):
            raise s.fail("answered without a result list (expected web.results)")
        page = s.results_at(body, ("web", "results"), "web.results") if "web" in body else []  # no `web`: no hits
        out += page
        query = body.get("query") if isinstance(body.get("query"), dict) else {}
        distinct = {url_key(text(r.get("url"))) for r in out if isinstance(r, dict)}
        if len(distinct) >= wanted or not page or not query.get("more_results_available"):
            break
    return out


def fetch_searxng(s: Search, wanted: int) -> list[Any]:
    out: list[Any] = []
    seen: set[str] = set()
    for pageno in range(1, SEARXNG_MAX_PAGES + 1):
        params: dict[str, Any] = {"q": s.query, "format": "json", "pageno": pageno}
        if s.provider.freshness[s.freshness]:
            params["time_range"] = s.provider.freshness[s.freshness]
        body = s.client.call("GET", s.base + "/search", params=params, headers={"Accept": "application/json"})
        page = s.results_at(body, ("results",), "results")
        if not page and pageno == 1:
            failed = body.get("unresponsive_engines") if isinstance(body, dict) else None
            if failed:
                names = ", ".join(clip(" ".join(map(str, e)) if isinstance(e, list) else e, s.client.secrets)
                                  for e in failed[:5])
                raise s.fail(f"found nothing because its engines failed: {names}")
        new = [r for r in page if isinstance(r, dict) and url_key(text(r.get("url"))) not in seen]
        seen.update(url_key(text(r.get("url"))) for r in new)
        out += page
        if not new or len(seen) >= wanted:
            break
    return out


def check_code_body(s: Search, body: Any) -> None:
    """Bocha and Baidu put `code`/`message` in the body; a non-success code is an error even with HTTP 200."""
    if not isinstance(body, dict):
        return
    code = body.get("code")
    if code in (None, "", 0, 200, "0", "200"):
        return
    detail = s.detail(body)
    kind = refusal(s.provider, code, detail)
    if kind:
        raise refusal_error(s.client, kind, "HTTP 200 with an error body", detail)
    raise s.fail(f"returned an error with HTTP 200: {detail}")


FETCHERS: dict[str, Callable[[Search, int], list[Any]]] = {
    "bocha": fetch_bocha, "tavily": fetch_tavily, "baidu": fetch_baidu, "serpapi": fetch_serpapi,
    "brave": fetch_brave, "searxng": fetch_searxng,
}


# --- Credential checks -------------------------------------------------------------------------------------------

def check_provider(provider: Provider, credentials: dict[str, Any], budget: Budget,
                   session: requests.Session | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
    """The cheapest call that proves the credentials work; raises SearchError/SearchInputError when they do not."""
    client = Client(provider, credentials, budget, session=session, sleep=sleep)
    base = base_url(provider, credentials)
    key = credential(credentials, provider.key_field) if provider.key_field else ""
    search = Search(provider, "G-Cite", 1, "any", client, base, key)
    if provider.name == "bocha":
        body = client.call("GET", base + "/v1/fund/remaining", headers=bearer(key))
        check_code_body(search, body)
    elif provider.name == "tavily":
        body = client.call("GET", base + "/usage", headers=bearer(key))
        if not isinstance(body, dict) or "key" not in body and "account" not in body:
            raise search.fail("usage endpoint answered in an unexpected shape")
    elif provider.name == "serpapi":
        body = client.call("GET", base + "/account.json", params={"api_key": key})
        if isinstance(body, dict) and body.get("error"):
            raise search.fail(f"returned an error with HTTP 200: {search.detail(body)}")
    else:  # Baidu, Brave and SearXNG have no free endpoint that proves the key: one smallest search
        FETCHERS[provider.name](search, 1)


def check_all(credentials: dict[str, Any], seconds_each: float = 10.0, session: requests.Session | None = None,
              sleep: Callable[[float], None] = time.sleep) -> dict[str, str]:
    """{provider label: failure message} for every configured provider whose check failed."""
    failures: dict[str, str] = {}
    for name in AUTO_ORDER:
        provider = PROVIDERS[name]
        if name not in configured(credentials):
            override = credential(credentials, provider.url_field)
            if override and provider.key_field:
                failures[provider.label] = f"{provider.url_field} is set but {provider.key_field} is empty"
            continue
        try:
            check_provider(provider, credentials, Budget(seconds_each), session=session, sleep=sleep)
        except (SearchError, SearchInputError) as exc:
            failures[provider.label] = redact(str(exc), secrets_of(credentials))
    return failures


def summary(provider: Provider, query: str, results: list[dict[str, Any]], notes: list[str]) -> str:
    """The tool's short text output: how many results, from whom, and every note."""
    shown = query if len(query) <= 60 else query[:59] + "…"
    lines = [f"{provider.label}: {len(results)} result{'s' * (len(results) != 1)} for “{shown}”."]
    lines += [f"- {r['title'] or r['url']}" for r in results[:10]]
    if len(results) > 10:
        lines.append(f"- … and {len(results) - 10} more")
    lines += [f"Note: {note}." for note in notes]
    return "\n".join(lines)
