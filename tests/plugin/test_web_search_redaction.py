"""A key a provider echoes in a changed form is still redacted (issue 34, point 8): with zero-width characters or
spaces inserted, full-width, percent-encoded character by character, base64, reversed — in a provider's error body
and in its results. Checked with a reading of our own here (unquote, NFKC, fillers removed), not the library's."""

import base64
import json
import re
import unicodedata
from urllib.parse import quote, unquote

import pytest

from websearch import errors, http_client, providers, redaction
from websearch.search import run_search

KEY = "sk-TEST-9f8e7d6c5b4a3210"
SEARX = "http://searx.internal.example:8888/private"
TAVILY_URL = "https://api.tavily.com/search"
CREDENTIALS = {"tavily_api_key": KEY, "searxng_base_url": SEARX}


def fullwidth(text):
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


TRANSFORMS = {
    "as-is": lambda k: k,
    "zero-width-spaces": lambda k: "\u200b".join(k),
    "word-joiners-and-bom": lambda k: "\u2060\ufeff".join(k),
    "spaces": lambda k: " ".join(k),
    "tabs-and-line-breaks": lambda k: "\t\n".join(k),
    "no-break-and-ideographic-spaces": lambda k: "\u00a0\u3000".join(k),
    "combining-marks": lambda k: "\u0301".join(k),
    "full-width": fullwidth,
    "percent-encoded-each": lambda k: "".join(f"%{ord(c):02X}" for c in k),
    "percent-encoded-lowercase-every-other": lambda k: "".join(
        f"%{ord(c):02x}" if i % 2 else c for i, c in enumerate(k)
    ),
    "percent-encoded-full-width": lambda k: quote(fullwidth(k)),
    "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "base64-inside-basic-auth": lambda k: base64.b64encode(b"user:" + k.encode()).decode(),
    "base64-url-safe-offset": lambda k: base64.urlsafe_b64encode(b"ab" + k.encode()).decode(),
    "reversed": lambda k: k[::-1],
    "reversed-with-spaces": lambda k: " ".join(k[::-1]),
}
FILLERS = re.compile(r"[\s\u200b-\u200f\u2060-\u2064\ufeff\u0300-\u036f]+")


def reads(text):
    """What a reader makes of `text`: percent-decoded, without spaces, zero-width and combining characters (taken
    apart first, NFKD), then NFKC."""
    return unicodedata.normalize("NFKC", FILLERS.sub("", unicodedata.normalize("NFKD", unquote(text))))


def pieces(secret, size=redaction.KEY_PIECE):
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def base64_of_key_in(text):
    """Runs of base64 characters that spell 8 characters of the key (three alignments, both alphabets)."""
    found = set()
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + KEY.encode()).decode()[3:-3]
        for alphabet in (encoded, encoded.replace("+", "-").replace("/", "_")):
            found |= {p for p in pieces(alphabet, 11) if p in text}
    return found


def assert_no_key(text):
    read = reads(text)
    shown = [p for p in pieces(KEY) | pieces(KEY[::-1]) if p in read] + sorted(base64_of_key_in(read))
    assert not shown, (shown, text)


def search(top_k=1):
    return run_search(
        providers.PROVIDERS["tavily"], "patrol", top_k, "any", CREDENTIALS, http_client.Budget(5), sleep=lambda s: None
    )


@pytest.mark.parametrize("transform", TRANSFORMS, ids=list(TRANSFORMS))
def test_a_changed_key_in_a_providers_error_body_is_redacted(mocked, transform):
    written = TRANSFORMS[transform](KEY)
    with pytest.raises(AssertionError):
        assert_no_key(written)  # the check below sees the key when it is left
    mocked.add("POST", TAVILY_URL, status=400, json={"detail": {"error": f"invalid key {written}; try again"}})
    with pytest.raises(errors.SearchError) as caught:
        search()
    message = str(caught.value)
    assert message.startswith("Tavily rejected the request (HTTP 400: invalid key ") and "; try again" in message
    assert_no_key(message)


@pytest.mark.parametrize("transform", TRANSFORMS, ids=list(TRANSFORMS))
def test_a_changed_key_in_a_providers_results_is_redacted(mocked, transform):
    written = TRANSFORMS[transform](KEY)
    item = {
        "title": f"Echo {written} end",
        "url": f"https://site.example/a?key={quote(written)}",
        "content": f"your key is {written}.",
        "score": 0.5,
        "published_date": written,
    }
    mocked.add("POST", TAVILY_URL, json={"results": [item]})
    results, notes, _ = search()
    everything = json.dumps([results, notes], ensure_ascii=False)
    assert_no_key(everything)
    assert results[0]["title"].startswith("Echo ") and "***" in results[0]["title"]
    assert results[0]["title"].endswith(" end")
    assert results[0]["content"].startswith("your key is ") and "***" in results[0]["content"]


def test_what_is_replaced_is_the_text_that_spelled_the_key_and_nothing_around_it():
    spaced = " ".join(KEY)
    assert redaction.redact(f"key: {spaced} (expired)", [KEY]) == "key: *** (expired)"
    encoded = "".join(f"%{ord(c):02X}" for c in KEY)
    assert redaction.redact(f"/v1?k={encoded}&x=1", [KEY]) == "/v1?k=***&x=1"
    assert redaction.redact(f"«{fullwidth(KEY)}»", [KEY]) == "«***»"


def test_text_that_only_resembles_a_key_is_kept():
    text = "The sk-TEST plan, 9f8e7 and 3210: 字符 ｆｕｌｌ-ｗｉｄｔｈ %41%42 c2stVEVTVA== tset"
    assert redaction.redact(text, [KEY]) == text
    assert redaction.redact("", [KEY]) == "" and redaction.redact(text, []) == text


def test_a_base_url_is_redacted_in_its_changed_forms_too():
    host = "searx.internal.example:8888"
    for written in (SEARX, quote(SEARX, safe=""), "\u200b".join(SEARX), fullwidth(host)):
        out = redaction.redact(f"see {written}/search", [SEARX])
        assert "searx" not in reads(out) and "internal.example" not in reads(out), out
