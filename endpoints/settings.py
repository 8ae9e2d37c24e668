"""The endpoint group's settings (group/gcite_endpoint.yaml), read in one place for the chat endpoint and the page.

`read_settings` checks all of them for `POST /gcite/chat`; the page needs only `allowed_origins`, read by the
same rule. A problem raises SettingError naming the setting; the endpoints answer
it as `not_configured` and log the message (it never names a secret's value) to `logger`, the endpoints' log.
"""

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dify_plugin.config.logger_format import plugin_logger_handler

from endpoints.chat_protocol import DEFAULT_SNIPPET_LENGTH, MAX_SNIPPET_LENGTH

MIN_SECRET_BYTES = 32  # RFC 7518 §3.2: an HS256 key at least as long as the hash


logger = logging.getLogger("gcite.endpoint")  # the endpoints' log: the plugin's log in Dify
logger.setLevel(logging.INFO)
logger.propagate = False
if plugin_logger_handler not in logger.handlers:
    logger.addHandler(plugin_logger_handler)


class SettingError(ValueError):
    """A setting is missing or malformed: the message names it."""


# scheme://host[:port]: a DNS name (letters, digits, hyphens; punycode for other scripts), an IPv4 address or a
# bracketed IPv6 address, and a port 1-65535. Nothing else: no path, no wildcard, no `;` that would end the CSP
# directive the page builds from this setting.
ORIGIN = re.compile(
    r"(https?)://((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
    r"|\[[0-9a-f:.]{2,45}\])(?::([0-9]{1,5}))?"
)
DEFAULT_PORTS = {"http": 80, "https": 443}


def normal_origin(origin: str) -> str:
    """An origin as browsers send it in `Origin`: lower case, no trailing slash, no default port."""
    origin = origin.strip().rstrip("/").lower()
    match = ORIGIN.fullmatch(origin)
    if match and match.group(3) and int(match.group(3)) == DEFAULT_PORTS[match.group(1)]:
        return f"{match.group(1)}://{match.group(2)}"
    return origin


def is_origin(origin: str) -> bool:
    """A well-formed http(s) origin, scheme://host[:port] (port 1-65535)."""
    match = ORIGIN.fullmatch(origin)
    return bool(match) and (match.group(3) is None or 1 <= int(match.group(3)) <= 65535)


KEY_SHAPED = re.compile(r"[A-Za-z0-9_\-+/=]{16,}")  # what `gcite secret` and most API keys look like; no site does


def allowed_origins(settings: Mapping[str, Any]) -> list[str]:
    """The `allowed_origins` setting as normalised origins, in order, without repeats ("*" kept as written). An
    entry that is neither "*" nor a well-formed origin raises SettingError naming the setting and the entry."""
    origins = settings.get("allowed_origins") or ""
    if not isinstance(origins, str):
        raise SettingError("setting allowed_origins: expected text")
    out = []
    for entry in re.split(r"[\s,]+", origins):
        if not entry.strip():
            continue
        origin = normal_origin(entry)
        if origin != "*" and not is_origin(origin):
            # a key pasted into the wrong field (the token secret, say) is never echoed into the plugin's log
            shown = (
                f"an entry of {len(entry)} letters and digits (not shown: it looks like a key, not a site)"
                if KEY_SHAPED.fullmatch(entry)
                else entry
                if len(entry) <= 60 and entry.isprintable()
                else repr(entry[:60])
            )
            raise SettingError(
                f"setting allowed_origins: {shown} is not an origin; write each site as "
                "scheme://host[:port], e.g. https://chat.example.com, or * for every site"
            )
        out.append(origin)
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Config:
    app_id: str
    secret: bytes
    origins: frozenset[str]  # normalised origins; "*" admits every origin
    source_node: str | None
    snippet_length: int
    audience: str | None

    def origin_allowed(self, origin: str) -> bool:
        return "*" in self.origins or normal_origin(origin) in self.origins


def read_settings(settings: Mapping[str, Any]) -> Config:
    """The endpoint group's settings, checked; a problem raises SettingError naming the setting."""

    def problem(name: str, what: str) -> SettingError:
        return SettingError(f"setting {name}: {what}")

    app = settings.get("app")
    app_id = app.get("app_id") if isinstance(app, Mapping) else app
    if not isinstance(app_id, str) or not app_id.strip():
        raise problem("app", "choose the chatflow app")
    secret = settings.get("token_secret")
    if not isinstance(secret, str) or len(secret.encode("utf-8")) < MIN_SECRET_BYTES:
        raise problem("token_secret", f"must be at least {MIN_SECRET_BYTES} bytes")
    allowed = frozenset(allowed_origins(settings))
    source_node = settings.get("source_node_id") or None
    if source_node is not None and (not isinstance(source_node, str) or len(source_node.strip()) > 128):
        raise problem("source_node_id", "expected a node id")
    length = settings.get("snippet_length")
    if length in (None, ""):
        length = DEFAULT_SNIPPET_LENGTH
    try:
        length = int(str(length).strip())
    except ValueError:
        raise problem("snippet_length", "expected a whole number") from None
    if not 0 <= length <= MAX_SNIPPET_LENGTH:
        raise problem("snippet_length", f"expected 0..{MAX_SNIPPET_LENGTH}")
    audience = settings.get("jwt_audience") or None
    if audience is not None and not isinstance(audience, str):
        raise problem("jwt_audience", "expected text")
    return Config(
        app_id=app_id.strip(),
        secret=secret.encode("utf-8"),
        origins=allowed,
        source_node=source_node.strip() if source_node else None,
        snippet_length=length,
        audience=(audience.strip() or None) if audience else None,
    )  # blank: no `aud`, as documented
