"""Dify's input shapes, read once for every node: JSON text (long integers, deep nesting, a BOM), Dify's
Python-repr text of an array, and the lone-surrogate rule (text that cannot be encoded as UTF-8, nor stored by
Dify, has U+FFFD in its place)."""

import ast
import json
import re
from functools import cache

MAX_NUMBER_DIGITS = 100  # a JSON integer longer than this is read as a float (inf when out of range)


@cache
def lone_surrogate():
    """A lone surrogate's pattern, compiled on first use: only text that does not encode as UTF-8 needs it, and a
    Code node would pay 0.25 ms to compile it in a fresh process at every run."""
    return re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text):
    return not text.isascii() and lone_surrogate().search(text) is not None


def no_surrogate(text):
    """`text` with each lone surrogate as U+FFFD; text that encodes as UTF-8 holds none and is returned as it is."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return lone_surrogate().sub("\ufffd", text)
    return text


def read_int(digits):
    return int(digits) if len(digits) <= MAX_NUMBER_DIGITS else float(digits)


class TooDeep(ValueError):
    """JSON nested deeper than the parser's recursion allows."""


DECODER = json.JSONDecoder(parse_int=read_int)  # built once: json.loads(text, parse_int=…) builds one per call


def load_json(text):
    """json.loads, with integers past MAX_NUMBER_DIGITS read as floats; nesting too deep is TooDeep."""
    if text.startswith("\ufeff"):  # what json.loads refuses before decoding
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        return DECODER.decode(text)
    except RecursionError:
        raise TooDeep("nested too deeply") from None


def python_data(text):
    """Dify's Python-repr text of a list (what str() makes of an array[object]); only JSON data is accepted (a
    set, bytes or a complex number raise TypeError)."""
    value = ast.literal_eval(text)
    json.dumps(value)
    return value


def shown(value, limit=60):
    """A short printable form of a bad value for an error message: at most `limit` characters, valid UTF-8."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        text = f"a {type(value).__name__} too large to show"
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return no_surrogate(text)


def shown_json(value, limit=60):
    """Like `shown`, with a list or an object shown as JSON (as the user wrote it in a condition)."""
    if not isinstance(value, (list, dict)):
        return shown(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        text = f"a {type(value).__name__} that cannot be shown"
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return no_surrogate(text)
