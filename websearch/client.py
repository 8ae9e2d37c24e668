"""A provider's calls within a search's time budget: bounded retries with back-off, and every failure as a
SearchError naming the provider (no key, no URL)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import requests

from websearch.errors import SearchError, error_detail, refusal, refusal_message
from websearch.http_client import (
    MAX_REDIRECTS,
    BodyTooLarge,
    Budget,
    RedirectRefused,
    Reply,
    exchange,
    parse_retry_after,
)
from websearch.providers import Provider, secrets_of
from websearch.redaction import redact

MAX_ATTEMPTS = 3  # one request plus two retries, on 429, 5xx and dropped connections
BACKOFF_BASE = 0.5  # seconds: 0.5, 1, 2, … when the provider sends no Retry-After
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_BODY_BYTES = 4 * 2**20  # a provider's page larger than this is an error, not a memory hog (pages are < 1 MiB)
MAX_JSON_VALUES = 100_000  # … and so is one holding more JSON values than this (a page of 50 results has < 5,000)


def retry_after(response: Reply | requests.Response) -> float | None:
    """Seconds the provider asks us to wait (`Retry-After` as seconds or an HTTP date), else None."""
    return parse_retry_after(response.headers.get("Retry-After"))


def json_values(content: bytes | bytearray) -> int:
    """At least the number of values (and keys) a JSON text holds, counted in its bytes without parsing it: each
    but the first of a container's items follows a comma, each first one its bracket (commas, brackets and colons
    inside strings count too, so this errs high). It bounds what parsing the page would build in memory."""
    return content.count(b",") + content.count(b"[") + content.count(b"{") + content.count(b":")


def body_of(response: Reply) -> Any:
    if json_values(response.content) > MAX_JSON_VALUES:
        return None
    try:
        return response.json()
    except (ValueError, RecursionError):
        return None


class ProviderClient:
    """One provider's requests for one search: a requests.Session, the search's budget, bounded retries."""

    def __init__(
        self,
        provider: Provider,
        credentials: dict[str, Any] | None,
        budget: Budget,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.provider, self.budget, self.sleep = provider, budget, sleep
        self.secrets = secrets_of(credentials)
        self.session, self._own_session = session or requests.Session(), session is None
        self.requests_made = 0

    def close(self) -> None:
        """Closes the session's connections if this client opened it."""
        if self._own_session:
            self.session.close()

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
                raise self.error(
                    f"could not connect to {label} (after {attempt} attempt{'s' * (attempt > 1)}); "
                    "check the network and the base URL in the G-Cite credentials"
                ) from None
            except requests.exceptions.RequestException as exc:
                raise self.error(f"the request to {label} failed ({type(exc).__name__})") from None
            status = response.status_code
            if status in RETRY_STATUSES and attempt < MAX_ATTEMPTS and self._wait(attempt, retry_after(response)):
                continue
            if status >= 300:
                raise self.status_error(response, attempt)
            if json_values(response.content) > MAX_JSON_VALUES:
                raise self.error(f"{label} answered with more than {MAX_JSON_VALUES:,} JSON values in one page")
            try:
                return response.json()
            except RecursionError:
                raise self.error(f"{label} answered with JSON nested too deeply to read") from None
            except ValueError:
                raise self.error(
                    f"{label} answered HTTP {status} with a body that is not JSON "
                    f"({response.headers.get('Content-Type') or 'no content type'})"
                ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def timed_out(self) -> SearchError:
        return self.error(f"{self.provider.label} did not answer within {self.budget.seconds:g} s (timeout_seconds)")

    def send(self, method: str, url: str, **kwargs: Any) -> Reply:
        """One request and its redirects (websearch.http_client.exchange), as SearchErrors naming the provider."""
        label = self.provider.label
        try:
            return exchange(
                self.session,
                method,
                url,
                remaining=self.budget.remaining,
                limit=MAX_BODY_BYTES,
                on_request=self._count,
                **kwargs,
            )
        except BodyTooLarge:
            raise self.error(f"{label} answered with a body over {MAX_BODY_BYTES // 2**20} MiB") from None
        except RedirectRefused as refused:
            status = refused.status
            if refused.kind == "other-host":
                raise self.error(
                    f"{label} answered with a redirect to another host (HTTP {status}); G-Cite sends "
                    "the API key only to the configured host and did not follow it: set the base URL "
                    "in the G-Cite credentials to the address that answers"
                ) from None
            if refused.kind == "method":
                raise self.error(
                    f"{label} redirected a {method} request (HTTP {status}); set the base URL in the "
                    "G-Cite credentials to the address that answers"
                ) from None
            raise self.error(f"{label} redirected more than {MAX_REDIRECTS} times") from None

    def _count(self) -> None:
        self.requests_made += 1

    def _wait(self, attempt: int, asked: float | None) -> bool:
        """Sleep before the next attempt; False when the wait would not fit in the budget."""
        delay = asked if asked is not None else BACKOFF_BASE * 2 ** (attempt - 1)
        if delay >= self.budget.remaining():
            return False
        self.sleep(delay)
        return True

    def status_error(self, response: Reply, attempts: int) -> SearchError:
        label, status = self.provider.label, response.status_code
        detail = error_detail(self.provider, body_of(response), status, self.secrets)
        said = f": {detail}" if detail else ""
        kind = refusal(self.provider, status, detail)
        if kind:
            return self.error(refusal_message(self.provider, kind, f"HTTP {status}", detail))
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        if status == 429:
            return self.error(f"{label} is rate-limiting or out of quota (HTTP 429{said}){tries}")
        if status >= 500:
            return self.error(f"{label} failed with HTTP {status}{said}{tries}")
        if status in (432, 433):
            return self.error(f"{label} plan or pay-as-you-go limit reached (HTTP {status}{said})")
        return self.error(f"{label} rejected the request (HTTP {status}{said})")
