"""One HTTP exchange as G-Cite makes it: a total deadline, a size-capped streaming read, and redirects followed by
hand, only to the origin the request went to. The web search's providers and `gcite acl` both call it.

Only public APIs of requests and urllib3 are used:
- connect and the answer's head: `timeout=urllib3.Timeout(connect=…, read=…, total=…)` (requests' adapter takes a
  urllib3 Timeout object), so both end within the time left;
- the body: read with `Response.iter_content` while a watchdog timer calls urllib3's `HTTPResponse.shutdown()`
  (urllib3 2.3 and later) at the deadline, which ends a read that is waiting on the socket; a body that trickles
  in therefore cannot outlast the deadline (requests' own timeout counts each read, not the whole answer).
"""

from __future__ import annotations

import datetime
import email.utils
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
import urllib3
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers, guess_json_utf

BODY_PIECE = 64 * 1024  # bytes asked of the body per read
MAX_REDIRECTS = 3  # followed only to the same scheme, host and port


class Budget:
    """The time left for a whole piece of work (a search, one request), retries and back-off included."""

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


class BodyTooLarge(ValueError):
    """An answer's body is over the limit the caller set."""


class RedirectRefused(Exception):
    """A redirect that is not followed. `kind`: "other-host" (another scheme, host or port than the request's),
    "method" (a 301/302/303 that would turn a POST into a GET without its body) or "too-many"."""

    def __init__(self, kind: str, status: int):
        super().__init__(f"{kind} redirect (HTTP {status})")
        self.kind, self.status = kind, status


@dataclass
class Reply:
    """A whole answer: status, headers and the body as read (at most the caller's limit)."""
    status_code: int
    headers: CaseInsensitiveDict
    content: bytes | bytearray
    url: str

    def json(self) -> Any:
        """The body as JSON, decoded as requests' `Response.json()` decodes it (the charset the headers name, else
        the UTF encoding the first bytes show)."""
        encoding = get_encoding_from_headers(self.headers) or guess_json_utf(self.content[:4]) or "utf-8"
        try:
            text = str(self.content, encoding, errors="replace")
        except LookupError:  # a charset Python does not know
            text = str(self.content, "utf-8", errors="replace")
        return json.loads(text)


def origin_of(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, the port made explicit: where a request with the key may go."""
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
    except ValueError:
        return ("", "", None)
    return (parts.scheme.lower(), (parts.hostname or "").lower(), port)


class _Watchdog:
    """Ends the reads of `response` at the deadline: urllib3's `HTTPResponse.shutdown()` makes a read that waits on
    the socket return at once. `fired` says it did (the body read so far is then not the whole answer)."""

    def __init__(self, response: requests.Response, seconds: float):
        self.fired, self._done, self._response = False, False, response
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:  # held while shutting down: `stop` waits, so the connection is still this response's
            if self._done:
                return
            self.fired = True
            try:
                self._response.raw.shutdown()
            except (AttributeError, ValueError, RuntimeError, OSError):
                pass  # no socket (a mocked answer) or already released: nothing is waiting on it

    def stop(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()


def read_body(response: requests.Response, remaining: Callable[[], float], limit: int) -> bytearray:
    """The body of a `stream=True` response, read before `remaining()` reaches 0. Raises requests' ReadTimeout at
    the deadline, ConnectionError when the connection breaks, BodyTooLarge past `limit` bytes (decoded)."""
    body = bytearray()
    watchdog = _Watchdog(response, remaining())
    try:
        for piece in response.iter_content(BODY_PIECE):
            body += piece
            if len(body) > limit:
                raise BodyTooLarge(f"over {limit} bytes")
            if remaining() <= 0:
                raise requests.exceptions.ReadTimeout("the answer did not end before the deadline")
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
        if watchdog.fired or remaining() <= 0:
            raise requests.exceptions.ReadTimeout("the answer did not end before the deadline") from None
        raise requests.exceptions.ConnectionError(type(error).__name__) from None
    finally:
        watchdog.stop()
    if watchdog.fired:  # the shutdown may end a body without a length as if it were whole
        response.raw.close()
        raise requests.exceptions.ReadTimeout("the answer did not end before the deadline")
    return body


def timeout_for(left: float, connect: float | None = None) -> urllib3.Timeout:
    """Connect within `connect` (at most `left`), and the answer's head within what is left of `left`."""
    if left <= 0:
        raise requests.exceptions.ConnectTimeout("no time left for the request")
    return urllib3.Timeout(connect=min(left, connect or left), read=left, total=left)


def exchange(session: requests.Session, method: str, url: str, *, remaining: Callable[[], float], limit: int,
             connect: float | None = None, max_redirects: int = MAX_REDIRECTS,
             on_request: Callable[[], None] = lambda: None, **request: Any) -> Reply:
    """One request (`request`: headers, params, json, data), its whole answer read before `remaining()` reaches 0.
    Redirects are followed by hand, only to the same scheme, host and port: requests would send the key headers
    (Brave's X-Subscription-Token, Baidu's X-Appbuilder-Authorization; it strips only Authorization) to whatever
    host a redirect names, and would read a redirect's body without a limit. Raises requests' exceptions,
    BodyTooLarge and RedirectRefused. `on_request` is called once per request sent."""
    for _ in range(max_redirects + 1):
        prepared = session.prepare_request(requests.Request(method.upper(), url, **request))
        settings = session.merge_environment_settings(prepared.url, {}, True, None, None)
        on_request()
        response = session.send(prepared, timeout=timeout_for(remaining(), connect), allow_redirects=False,
                                **settings)
        try:
            content = read_body(response, remaining, limit)
        finally:
            response.close()
        if not response.is_redirect:
            return Reply(response.status_code, response.headers, content, prepared.url or url)
        target = urljoin(url, response.headers.get("Location", ""))
        if origin_of(target) != origin_of(url):
            raise RedirectRefused("other-host", response.status_code)
        if response.status_code in (301, 302, 303) and method.upper() != "GET":  # would turn into a GET without body
            raise RedirectRefused("method", response.status_code)
        url = target
    raise RedirectRefused("too-many", response.status_code)
