"""Every configured secret out of a text, also when it is written so that a reader still recognises it.

What is redacted (replaced by ***):
- a URL secret (a base URL) whole, and its host;
- an API key whole, every run of KEY_PIECE or more of its characters (a provider's own cut or masking leaves
  those), the same of its reversed form, and every run of BASE64_PIECE or more characters of its base64 forms
  (the characters that spell KEY_PIECE of the key; standard and URL-safe, at each of the three alignments it can
  have inside a longer base64 text).

Before comparing, the text is read the ways that keep a key readable: percent-encoded bytes decoded (`%73%6B` is
`sk`), each character NFKC-normalised (full-width `ｓｋ` is `sk`), and whitespace, zero-width, format, control and
combining characters removed (`s k`, `s\u200bk`). What is replaced is the original text that spelled the secret,
from its first character to its last.

The common case costs a few passes at C speed: a loose copy of the text (decoded, NFKD, every character no secret
holds removed) is searched for short anchors of each secret; only a text holding one is read character by character.
"""

from __future__ import annotations

import base64
import codecs
import functools
import re
import unicodedata
from array import array
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

KEY_PIECE = 8  # this many characters of a key in a row identify it: a provider's "sk-TEST-9f8e…" is redacted too
ANCHOR = 6  # anchors of this length, every ANCHOR_STEP characters: any run of KEY_PIECE holds one whole
ANCHOR_STEP = KEY_PIECE - ANCHOR + 1
FILLER_CATEGORIES = frozenset({"Cc", "Cf", "Mn", "Me", "Zs", "Zl", "Zp"})
TOKEN = re.compile(r"(?P<plain>[!-$&-~]+)|(?P<pct>(?:%[0-9A-Fa-f]{2})+)|(?P<one>[\s\S])")


def is_url(secret: str) -> bool:
    return secret.lower().startswith(("http://", "https://"))


def is_filler(ch: str) -> bool:
    """Characters a reader skips: whitespace, zero-width and format characters, controls, combining marks."""
    return ch.isspace() or unicodedata.category(ch) in FILLER_CATEGORIES


@functools.lru_cache(maxsize=4096)
def fold(ch: str) -> str:
    """One character as it reads: "" for a filler, else its NFKC form without fillers."""
    if is_filler(ch):
        return ""
    return "".join(c for c in unicodedata.normalize("NFKC", ch) if not is_filler(c))


def readable(text: str) -> str:
    """`text` as compared: percent-decoded, each character folded."""
    return View(text).text


class View:
    """`text` as it reads (`self.text`), and for each of its characters the span of `text` that wrote it."""

    def __init__(self, text: str):
        parts: list[str] = []
        self.starts = array("q")
        self._ends: dict[int, int] = {}  # where a character's span is longer than one character
        for match in TOKEN.finditer(text):
            start, end = match.span()
            kind = match.lastgroup
            if kind == "plain":  # printable ASCII but `%`: reads as written
                parts.append(match.group())
                self.starts.extend(range(start, end))
            elif kind == "pct":
                self._decoded(match.group(), start, parts)
            else:
                for c in fold(match.group()):
                    parts.append(c)
                    self.starts.append(start)
        self.text = "".join(parts)

    def _decoded(self, run: str, start: int, parts: list[str]) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        first = start  # where the bytes of the character being decoded began
        for n in range(0, len(run), 3):
            out = decoder.decode(bytes([int(run[n + 1 : n + 3], 16)]))
            if out:
                for c in "".join(map(fold, out)):
                    self._ends[len(self.starts)] = start + n + 3
                    parts.append(c)
                    self.starts.append(first)
                first = start + n + 3
        for c in "".join(map(fold, decoder.decode(b"", final=True))):
            self._ends[len(self.starts)] = start + len(run)
            parts.append(c)
            self.starts.append(first)

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that wrote self.text[start:end]."""
        last = end - 1
        return self.starts[start], self._ends.get(last, self.starts[last] + 1)


@dataclass(frozen=True)
class Form:
    """One way a secret can be written, as it reads; `least`: the shortest run of it that is redacted (its whole
    length: only the whole of it)."""

    text: str
    least: int

    @property
    def whole(self) -> bool:
        return self.least >= len(self.text)

    def anchors(self) -> list[tuple[str, int]]:
        if self.whole:
            return [(self.text, 0)]
        places = list(range(0, len(self.text) - ANCHOR + 1, ANCHOR_STEP))
        if places[-1] != len(self.text) - ANCHOR:
            places.append(len(self.text) - ANCHOR)
        return [(self.text[p : p + ANCHOR], p) for p in places]


def base64_forms(key: str) -> list[str]:
    """The characters of base64(key) that do not depend on what surrounds the key, at each of the three alignments
    it can have in a longer base64 text, in the standard and the URL-safe alphabet."""
    raw = key.encode("utf-8")
    out = []
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + raw).decode("ascii")
        core = encoded[(8 * offset + 5) // 6 : (8 * (offset + len(raw))) // 6]
        out += [core, core.replace("+", "-").replace("/", "_")]
    return out


BASE64_PIECE = -(-KEY_PIECE * 4 // 3)  # base64 characters that spell KEY_PIECE characters of a key


def forms_of(secret: str) -> list[Form]:
    if is_url(secret):
        url, host = readable(secret), readable(urlsplit(secret).netloc)
        return [Form(url, len(url))] + ([Form(host, len(host))] if len(host) >= 4 else [])
    key = readable(secret)
    if len(key) <= KEY_PIECE:
        return [Form(key, len(key))]
    forms = {key: KEY_PIECE, key[::-1]: KEY_PIECE}
    for encoded in map(readable, base64_forms(secret)):
        forms.setdefault(encoded, min(BASE64_PIECE, len(encoded)))
    return [Form(text, least) for text, least in forms.items() if text]


@dataclass(frozen=True)
class Needles:
    forms: tuple[Form, ...]
    anchors: tuple[str, ...]
    not_in_alphabet: re.Pattern[str]


@functools.lru_cache(maxsize=64)
def needles_of(secrets: tuple[str, ...]) -> Needles:
    forms = tuple(f for s in secrets for f in forms_of(s) if f.text.strip("*"))
    alphabet = "".join(sorted({c for f in forms for c in f.text}))
    anchors = tuple(dict.fromkeys(a for f in forms for a, _ in f.anchors()))
    return Needles(forms, anchors, re.compile(f"[^{re.escape(alphabet)}]+" if alphabet else "[\\s\\S]+"))


def might_hold(text: str, needles: Needles) -> bool:
    """False when no secret can be in `text` (cheap): no anchor in a loose copy of it, which holds every character
    a secret's reading can (decoded, NFKD: a superset of the NFKC reading) with all other characters removed."""
    loose = unquote(text) if "%" in text else text
    if not loose.isascii():
        loose = unicodedata.normalize("NFKD", loose)
    loose = needles.not_in_alphabet.sub("", loose)
    return any(anchor in loose for anchor in needles.anchors)


def found_spans(view: View, needles: Needles) -> list[tuple[int, int]]:
    """Spans of view.text that are a secret's form whole, or a run of KEY_PIECE or more characters of one."""
    text, spans = view.text, []
    for form in needles.forms:
        for anchor, at in form.anchors():
            place = text.find(anchor)
            while place != -1:
                start, end = place, place + len(anchor)
                if not form.whole:  # as far as the run goes on with the form, both ways
                    while (
                        start > 0
                        and at - (place - start) > 0
                        and text[start - 1] == form.text[at - (place - start) - 1]
                    ):
                        start -= 1
                    while (
                        end < len(text)
                        and at + (end - place) < len(form.text)
                        and text[end] == form.text[at + (end - place)]
                    ):
                        end += 1
                if end - start >= form.least:
                    spans.append((start, end))
                place = text.find(anchor, place + 1)
    return spans


def redact(text: str, secrets: list[str]) -> str:
    """`text` with every secret, and every identifying piece of a key, replaced by *** (see the module's text)."""
    if not text or not secrets:
        return text
    needles = needles_of(tuple(secrets))
    if not needles.forms or not might_hold(text, needles):
        return text
    view = View(text)
    merged: list[list[int]] = []  # overlapping or touching spans are one ***
    for start, end in sorted(view.span(a, b) for a, b in found_spans(view, needles)):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, pos = [], 0
    for start, end in merged:
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
