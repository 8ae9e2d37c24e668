"""Every configured secret out of a text: a URL (a base URL) whole and its host; a key whole and every run of
KEY_PIECE or more of its characters."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

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
