"""One HTTP exchange as G-Cite makes it: a total deadline, a size-capped streaming read, and redirects followed by
hand, only to the origin the request went to. The web search's providers and `gcite acl` both call it.

Only public APIs of requests and urllib3 are used:
- connect and the answer's head: `timeout=urllib3.Timeout(connect=…, read=…, total=…)` (requests' adapter takes a
  urllib3 Timeout object), so both end within the time left;
- the body: read with `Response.iter_content` while a watchdog timer calls urllib3's `HTTPResponse.shutdown()`
  (urllib3 2.3 and later) at the deadline, which ends a read that is waiting on the socket; a body that trickles
  in therefore cannot outlast the deadline (requests' own timeout counts each read, not the whole answer);
- where a request goes: the connection pool requests' own adapter picks for the prepared request
  (`HTTPAdapter.build_connection_pool_key_attributes`, then urllib3's `PoolManager.connection_from_host`), so a
  redirect is judged by what will be connected to, never by a second parse of ours that could read a backslash,
  an `@`, a tab, a percent-encoded or Unicode host or a port otherwise than the library does.
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
from urllib.parse import urljoin

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
    """A redirect that is not followed. `kind`: "other-host" (to another scheme, host or port than the request's,
    or to an address the library cannot read), "method" (a 301/302/303 that would turn a POST into a GET without
    its body) or "too-many"."""

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


Origin = tuple[str, str, int]  # (scheme, host, port) of a connection


def destination(
    adapter: requests.adapters.BaseAdapter, prepared: requests.PreparedRequest, verify: Any = True, cert: Any = None
) -> Origin:
    """Where `adapter.send(prepared)` will connect: the scheme, host and port of the urllib3 connection pool the
    adapter picks for it (what `HTTPAdapter.send` does), not a parse of the URL of ours. Raises ValueError
    (requests' InvalidURL, urllib3's LocationValueError) when the library cannot read the address."""
    if not isinstance(adapter, requests.adapters.HTTPAdapter):
        raise ValueError("no HTTP adapter for this address")
    host_params, pool_kwargs = adapter.build_connection_pool_key_attributes(prepared, verify, cert)
    pool = adapter.poolmanager.connection_from_host(**host_params, pool_kwargs=pool_kwargs)
    return (str(pool.scheme), str(pool.host), int(pool.port))


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


def exchange(
    session: requests.Session,
    method: str,
    url: str,
    *,
    remaining: Callable[[], float],
    limit: int,
    connect: float | None = None,
    max_redirects: int = MAX_REDIRECTS,
    on_request: Callable[[], None] = lambda: None,
    **request: Any,
) -> Reply:
    """One request (`request`: headers, params, json, data), its whole answer read before `remaining()` reaches 0.
    Redirects are followed by hand, and only when the library will connect the redirected request to the same
    scheme, host and port as the first one (`destination`): requests would send the key headers (Brave's
    X-Subscription-Token, Baidu's X-Appbuilder-Authorization; it strips only Authorization) to whatever host a
    redirect names, and would read a redirect's body without a limit. Raises requests' exceptions, BodyTooLarge
    and RedirectRefused (before anything is sent to another origin). `on_request` is called once per request."""
    origin: Origin | None = None
    status = 0  # of the redirect being followed (0: the first request)
    for hop in range(max_redirects + 2):
        try:
            prepared = session.prepare_request(requests.Request(method.upper(), url, **request))
            settings = session.merge_environment_settings(prepared.url, {}, True, None, None)
            adapter = session.get_adapter(prepared.url)
            where = destination(adapter, prepared, settings["verify"], settings["cert"])
        except (ValueError, requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema):
            if origin is None:
                raise  # the first address: the caller's own
            raise RedirectRefused("other-host", status) from None
        if origin is None:
            origin = where
        elif where != origin:
            raise RedirectRefused("other-host", status)
        if status in (301, 302, 303) and method.upper() != "GET":  # would turn into a GET without its body
            raise RedirectRefused("method", status)
        if hop > max_redirects:
            raise RedirectRefused("too-many", status)
        on_request()
        # the adapter itself, not Session.send: with allow_redirects=False the session still prepares the next
        # request of a redirect, and first reads the redirect's whole body, without a limit or a deadline
        response = adapter.send(
            prepared,
            stream=True,
            timeout=timeout_for(remaining(), connect),
            verify=settings["verify"],
            cert=settings["cert"],
            proxies=settings["proxies"],
        )
        try:
            content = read_body(response, remaining, limit)
        finally:
            response.close()
        if not response.is_redirect:
            return Reply(response.status_code, response.headers, content, prepared.url or url)
        status = response.status_code
        url = urljoin(prepared.url or url, session.get_redirect_target(response) or "")
    raise AssertionError("unreachable")  # pragma: no cover
