"""The two errors of a search, and each provider's own error text as a message may quote it."""

from __future__ import annotations

import re
from typing import Any

from websearch.providers import Provider
from websearch.redaction import redact

MESSAGE_LIMIT = 200  # characters of a provider's own error text kept in a message
MESSAGE_SOURCE_LIMIT = 20 * MESSAGE_LIMIT  # characters of it read at all (redacted, then cut to MESSAGE_LIMIT)


class SearchError(Exception):
    """A search failed; the message names the provider and is safe to show (no key, no URL)."""


class SearchInputError(ValueError):
    """A tool parameter or credential is wrong; the message names it."""


LINK = re.compile(r"(?:https?|ftp)://\S+", re.IGNORECASE)


def clip(text: Any, secrets: list[str]) -> str:
    """A provider's error text on one line, without links (they may carry a key), at most MESSAGE_LIMIT long.
    Every secret (and every identifying piece of a key) is redacted first, so a cut never leaves part of one."""
    text = re.sub(r"\s+", " ", LINK.sub("[link]", redact(str(text)[:MESSAGE_SOURCE_LIMIT], secrets))).strip()
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


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
    """ "key" when the provider refused the key, "balance" when the account is out of money, else None.
    Brave answers an invalid key with 422 SUBSCRIPTION_TOKEN_INVALID, Baidu with an authentication error code,
    Bocha with 401 (and 403 means its balance is used up)."""
    status = str(status)
    if provider.name == "bocha" and (status == "403" or "enough money" in detail):
        return "balance"
    if status in ("401", "403") or "SUBSCRIPTION_TOKEN" in detail or "Authentication error" in detail:
        return "key"
    return None


def refusal_message(provider: Provider, kind: str, how: str, detail: str) -> str:
    label = provider.label
    said = f": {detail}" if detail else ""
    if kind == "balance":
        return f"{label} account balance is used up ({how}{said}); top it up on the {label} website"
    return f"{label} refused the API key ({how}{said}); check the {label} API key in the G-Cite plugin's credentials"
