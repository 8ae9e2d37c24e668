"""Insufficient-evidence phrases: the refusals an answer may give instead of citing."""

import re

# The refusals the chatflows' prompts ask for (Chinese, English); matched case-insensitively, whitespace-tolerant,
# and a phrase's own trailing punctuation is not required.
INSUFFICIENT_DEFAULT = "根据现有资料无法确定|The available sources do not answer this question"
PHRASE_END = " \t.。!！?？,，;；:：…\"'”’"


def parse_phrases(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, str):
        items = re.split(r"[\n|]", value)
    else:
        raise ValueError(f"insufficient_phrases: expected text, got {type(value).__name__}")
    phrases = []
    for item in items:
        phrase = normal_text(str(item).rstrip(PHRASE_END))
        if phrase and phrase not in phrases:
            phrases.append(phrase)
    return phrases


def normal_text(text):
    """Text for phrase matching: case folded, every run of whitespace one space."""
    return " ".join(text.split()).casefold()


def holds_phrase(text, phrases):
    """Does normal_text(text) hold one of `phrases`? Only if each word of one is in text.casefold(), a cheaper test."""
    caseless = text.casefold() if phrases else ""
    if any(all(word in caseless for word in phrase.split()) for phrase in phrases):
        said = normal_text(text)
        return any(phrase in said for phrase in phrases)
    return False
