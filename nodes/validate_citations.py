"""G-Cite citation validator: [C:N] markers -> display numbers 1..K in order of first appearance.

A Dify Code node (standard library only, Python 3.10 syntax, self-contained). `main` validates a whole answer;
`CitationStream` does the same incrementally, delta by delta, and never emits part of a marker. Both run the
same scanner, so for any split of an answer the streamed text equals `main(answer)["answer"]`. Removed markers
leave no stray space before punctuation and never let the text around them form a marker (`Joiner`). After the
stream, a support check scores each citation against the chunk it cites (`check_support`); `main` caps every list
it returns for Dify's Code node (30 items).

The marker grammar (here and nowhere else in this file):
  - brackets [ ], 【 】 or ［ ］; `C` in either case; `:` or `：`; spaces allowed between the parts;
  - one or more ids separated by , ， 、 ; ；  each optionally repeating `C:`;
  - a range a-b or a–b (a < b, at most 20 ids) expands;
  - a marker is at most 64 characters long, bracket included;
  - nothing inside inline code (a backtick up to the next backtick or the end of the line) or a fenced code
    block (from a line starting with three backticks to the next such line) is a marker.
"""

import json
import re
import unicodedata
from bisect import bisect_left
from urllib.parse import quote, urlsplit

# --- The marker grammar ----------------------------------------------------------------------------------
BRACKETS = {"[": "]", "【": "】", "［": "］"}
SPACE = "[ \t\u00a0\u3000]*"
COLON = "[:：]"
PREFIX = f"[Cc]{SPACE}{COLON}{SPACE}"
ID_ITEM = f"(?:{PREFIX})?(\\d+)(?:{SPACE}[-–]{SPACE}(\\d+))?"
SEPARATOR = "[,，、;；]"
MARKER_INNER = re.compile(f"{SPACE}{PREFIX}{ID_ITEM}(?:{SPACE}{SEPARATOR}{SPACE}{ID_ITEM})*{SPACE}")
ID_ITEMS = re.compile(ID_ITEM)
MARKER_HEAD = re.compile(f"{SPACE}(?:[Cc]{SPACE}(?:{COLON}[ \t\u00a0\u3000\\d,，、;；\\-–Cc:：]*)?)?")
MAX_MARKER_LENGTH = 64
MAX_RANGE_IDS = 20
FENCE = "```"
# The refusals the chatflows' prompts ask for (Chinese, English); matched case-insensitively, whitespace-tolerant,
# and a phrase's own trailing punctuation is not required.
INSUFFICIENT_DEFAULT = "根据现有资料无法确定|The available sources do not answer this question"
PHRASE_END = " \t.。!！?？,，;；:：…\"'”’"

# Joining the text around a removed marker (see `Joiner`)
HSPACE = " \t\u00a0\u3000"
CLOSING = frozenset(",.;:!?)]}»”’，。；：！？、）】』」》〉…")
MAX_HELD_SPACE = 16
BREAKER = "…"  # stands where a removed marker would otherwise let the text around it form a marker

TEXT_STOPS = re.compile("[`\n" + re.escape("".join(BRACKETS)) + "]")
CODE_STOPS = re.compile("[`\n]")

LINK_SCHEMES = ("http", "https")
HIDDEN_SCHEMES = ("javascript", "vbscript", "data", "file")
MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]()!|~])")  # inline markup
BLOCK_START = re.compile(r"[#+=-]|\d{1,9}(?=[.)])")  # what would start a heading, list or rule at a line's start
CITATION_FIELDS = ("document_title", "source_type", "url", "display_subtitle", "site_name", "published_date")


def marker_ids(candidate):
    """The ids of `candidate` (a bracketed string) when it is a marker, else None."""
    inner = candidate[1:-1]
    if BRACKETS.get(candidate[0]) != candidate[-1] or not MARKER_INNER.fullmatch(inner):
        return None
    ids = []
    for match in ID_ITEMS.finditer(inner):
        first, last = int(match.group(1)), match.group(2)
        if last is None:
            ids.append(first)
            continue
        last = int(last)
        if not first < last or last - first + 1 > MAX_RANGE_IDS:
            return None
        ids.extend(range(first, last + 1))
    return list(dict.fromkeys(ids))


def could_become_marker(candidate):
    """True while `candidate` (opening bracket and what follows) may still grow into a marker."""
    return len(candidate) < MAX_MARKER_LENGTH and MARKER_HEAD.fullmatch(candidate, 1) is not None


# --- Inputs ----------------------------------------------------------------------------------------------

def parse_chunk_metadata(value):
    """{int id: chunk} from a list or JSON text; None means the list is unknown (every id is accepted)."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except ValueError:
            raise ValueError(f"chunk_metadata: not valid JSON: {value[:80]!r}") from None
        except RecursionError:
            raise ValueError("chunk_metadata: JSON nested too deeply") from None
    if isinstance(value, dict) and isinstance(value.get("chunk_metadata"), list):
        value = value["chunk_metadata"]
    if not isinstance(value, list):
        raise ValueError(f"chunk_metadata: expected a list of chunks, got {type(value).__name__}")
    chunks = {}
    for position, chunk in enumerate(value):
        if not isinstance(chunk, dict):
            raise ValueError(f"chunk_metadata[{position}]: expected an object, got {type(chunk).__name__}")
        chunks[chunk_id_of(chunk.get("id"), position)] = chunk
    return chunks


def chunk_id_of(value, position):
    """A chunk's id as an int: digits as text or a number; a float counts when it is a whole number (1.0 is 1)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit() and value.strip().isascii():
        digits = value.strip()
        if len(digits) <= 1000:
            return int(digits)
    shown = repr(value) if isinstance(value, (str, int, float)) else type(value).__name__
    raise ValueError(f"chunk_metadata[{position}].id: {shown[:80]} is not a whole number")


def field_text(value, field):
    """A chunk field as text: text as is, a number as its digits; any other value (object, list, true/false,
    null, a url that is not text) is left out as ""."""
    if isinstance(value, str):
        return value
    if field != "url" and isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                return ""
            if value.is_integer() and abs(value) < 1e16:
                return str(int(value))
        return str(value)
    return ""


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


# --- Rendering the references ----------------------------------------------------------------------------

def escape_markdown(text):
    """One line of text that renders as itself: HTML characters as entities, markdown ones backslashed."""
    text = " ".join(str(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return MARKDOWN_SPECIAL.sub(r"\\\1", text)


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def url_scheme(url):
    try:
        return urlsplit(url).scheme.lower()
    except ValueError:
        return ""


def escape_block_start(text):
    """Backslash what would make a line a heading, list item or rule (`# H`, `- x`, `---`, `1. x`)."""
    match = BLOCK_START.match(text)
    if not match:
        return text
    at = match.end() if match.group().isdigit() else 0
    return text[:at] + "\\" + text[at:]


def reference_line(citation):
    title = escape_markdown(citation["document_title"] or f"C:{citation['id']}")
    url = citation.get("url") or ""
    url = url.strip() if isinstance(url, str) else ""
    scheme = url_scheme(url)
    if scheme in LINK_SCHEMES and urlsplit(url).netloc:
        line = f"[{title}]({quote(LONE_SURROGATE.sub(chr(0xFFFD), url), safe=':/?#@!$&*+,;=%~-._')})"
    else:
        line = escape_block_start(title)
    if citation.get("display_subtitle"):
        line += " — " + escape_markdown(citation["display_subtitle"])
    if url and scheme not in LINK_SCHEMES and scheme not in HIDDEN_SCHEMES:
        line += " — " + escape_markdown(url)
    return line


def references_markdown(citations):
    return "\n".join(f"{c['index']}. {reference_line(c)}" for c in citations)


def references_by_marker_markdown(citations):
    return "\n".join(f"- [C:{c['id']}] {reference_line(c)}" for c in citations)


# --- The support check -----------------------------------------------------------------------------------
# Does the cited chunk back the sentence that cites it? A lexical proxy that needs no model and no tokenizer:
# the share of the sentence's content found in the chunk (README: "The support check").

SUPPORT_THRESHOLD = 0.45  # chosen from the labelled set tests/data/support_pairs.json (`make bench` prints why)
CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
STOP_CHARS = frozenset("的了是在和与及或等也都就而且这那个之其把被为对从到以于将并要会着过您你我他她它们吗呢吧啊请")
STOP_CHAR = re.compile("[" + "".join(sorted(STOP_CHARS)) + "]")
CJK_RUNS = re.compile(f"[{CJK}]+")
CODE_TOKENS = re.compile(r"\b(?:[A-Za-z]+\d[A-Za-z0-9]*|\d+[A-Za-z][A-Za-z0-9]*)")
NUMBER_TOKENS = re.compile(r"\d+(?:\.\d+)?")
DIGIT = re.compile(r"\d")
WORD_TOKENS = re.compile("[A-Za-z\u00c0-\u024f]+")
STOP_WORDS = frozenset(
    "a an the and or of to in on at for by with from is are was were be been being it its this that these those as if "
    "then than so do does did can could will would should may might must shall has have had there their they them "
    "you your we our he she his her which who whom what when where how also all any each such into about up out "
    "more most other some very just but i me my".split())
WEIGHT_EXACT = 3.0  # a number or a code (B2, GB50016): the facts a wrong citation most often gets wrong
WEIGHT_NAME = 2.0  # a capitalised word inside a sentence
WEIGHT_CHAR = 0.5  # one Chinese character (a bigram weighs 1, or 0.5 with a stop character)
WEIGHT_QUESTION = 0.3  # factor for what the question itself says (repeating it proves nothing)
MISSING_EXACT = 0.5  # factor per number or code of the sentence that the chunk does not contain
MIN_FACTUAL_WEIGHT = 3.0  # less content than this is never judged "factual" (greetings, "如下：")
MAX_BACKING_WORK = 2_000_000  # chunk look-ups for "does some chunk back this uncited sentence?" in one answer

SENTENCE_END = re.compile(rf"(?:[。！？!?；;]+|\.(?=\s|$|[{CJK}])|…+(?=\s|$))[”’\"'）)】」』]*")
LINE_MARK = re.compile(r"[ \t]*(?:(?:[-*+]|\d{1,9}[.)、]|#{1,6}|>)[ \t]+)*")
INLINE_CODE = re.compile(r"`[^`\n]*`?")
TABLE_RULE = re.compile(r"[ \t]*\|?[ \t:|-]*-[ \t:|-]*")
MAX_SENTENCE_SHOWN = 300


EN_NUMBERS = {word: n for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
EN_NUMBERS.update({word: 10 * n for n, word in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)})
ORDINAL = re.compile(r"(?<=\d)(?:st|nd|rd|th|d)$", re.IGNORECASE)
ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
ZH_NUMBER = re.compile("[零一二两三四五六七八九十百千]+(?=[个天次楼层人元分年月日点号周岁小倍位条])")


def zh_number(text):
    """A Chinese numeral (below 10,000, made of ZH_DIGITS and 十百千) as an int."""
    total = digit = 0
    for char in text:
        if char in ZH_DIGITS:
            digit = ZH_DIGITS[char]
        else:
            unit = {"十": 10, "百": 100, "千": 1000}[char]
            total += (digit or 1) * unit
            digit = 0
    return total + digit


def number_words(words, exact):
    """`words` without the number words, which go into `exact` as numbers ("twenty five" -> #25)."""
    kept = []
    skip = False
    for position, word in enumerate(words):
        if skip:
            skip = False
            continue
        value = EN_NUMBERS.get(word.casefold())
        if value is None:
            kept.append(word)
            continue
        if value >= 20 and position + 1 < len(words) and 0 < EN_NUMBERS.get(words[position + 1].casefold(), 10) < 10:
            value += EN_NUMBERS[words[position + 1].casefold()]
            skip = True
        exact.add(f"#{value}")
    return kept


WORD_UNITS = {}  # word -> its unit ("" for a stop word), a bounded cache


def word_unit(word):
    """A lower-case word's unit: its first five letters after a plural s; "" for a stop word."""
    unit = WORD_UNITS.get(word)
    if unit is None:
        stem = word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word
        unit = "" if word in STOP_WORDS else stem[:5]
        if len(WORD_UNITS) < 20_000:
            WORD_UNITS[word] = unit
    return unit


def number_unit(number):
    """`#` and the number without leading or trailing zeros (`08` -> `#8`, `3.50` -> `#3.5`)."""
    whole, _, fraction = number.partition(".")
    fraction = fraction.rstrip("0")
    return "#" + (whole.lstrip("0") or "0") + ("." + fraction if fraction else "")


def content_units(text, question=None, weights=True):
    """{unit: weight} of a text: the characters and character bigrams of Chinese runs, word stems, numbers and
    codes (`#…`; number words and Chinese numerals before a measure word count as numbers). With weights=False,
    just the set of units (a chunk's side)."""
    text = unicodedata.normalize("NFKC", text)
    if "," in text:
        text = THOUSANDS.sub("", text)
    text = ZH_NUMBER.sub(lambda m: str(zh_number(m.group())), text)
    exact = set()
    if DIGIT.search(text):  # numbers and codes (a code holds a digit)
        codes = CODE_TOKENS.findall(text)
        if codes:
            text = CODE_TOKENS.sub(" ", text)
            exact.update(number_unit(ORDINAL.sub("", code)) if ORDINAL.search(code) and ORDINAL.sub("", code).isdigit()
                         else "#" + code.casefold() for code in codes)
        exact.update("#" + number if number[0] != "0" and "." not in number else number_unit(number)
                     for number in NUMBER_TOKENS.findall(text))
    words = WORD_TOKENS.findall(text)
    if words and EN_NUMBERS.keys() & set(map(str.casefold, words)):
        words = number_words(words, exact)
    runs = CJK_RUNS.findall(text)
    grams = {run[i:i + 2] for run in runs for i in range(len(run) - 1)}
    if not weights:
        units = grams | exact
        units.update(*runs)
        units.update(WORD_UNITS.get(word) or word_unit(word) for word in map(str.casefold, words))
        units.discard("")
        return units
    units = dict.fromkeys(grams, 1.0)
    units.update(dict.fromkeys(set("".join(runs)) - STOP_CHARS, WEIGHT_CHAR))
    if STOP_CHAR.search(text):  # a bigram with one stop character weighs 0.5, with two nothing
        for gram in [gram for gram in grams if gram[0] in STOP_CHARS or gram[1] in STOP_CHARS]:
            if gram[0] in STOP_CHARS and gram[1] in STOP_CHARS:
                del units[gram]
            else:
                units[gram] = 0.5
    for position, word in enumerate(words):
        unit = WORD_UNITS.get(word.casefold()) or word_unit(word.casefold())
        if unit:
            weight = WEIGHT_NAME if position and word[0].isupper() else 1.0
            if units.get(unit, 0.0) < weight:
                units[unit] = weight
    units.update(dict.fromkeys(exact, WEIGHT_EXACT))
    if weights and question:
        for unit in units.keys() & question:
            units[unit] *= WEIGHT_QUESTION
    return units


def support_score(units, chunk, others=None):
    """The weighted share of a sentence's units found in `chunk` (a set of units), leaving out the units only
    another cited chunk contains (`others`: unit -> how many of the sentence's cited chunks contain it); times 0.5
    for each number or code the chunk lacks. 1.0 when the sentence has no content to back."""
    found = needed = 0.0
    missing = 0
    for unit, weight in units.items():
        if unit in chunk:
            found += weight
        elif others and others.get(unit):
            continue
        elif unit[0] == "#":
            missing += 1
        needed += weight
    return 1.0 if needed == 0 else found / needed * MISSING_EXACT ** missing


def sentence_spans(text):
    """[(start, end, kind)]: the sentences of `text` — split after 。！？；!?; and a full stop, one per list item,
    heading line or table row; fenced code blocks and table rules are not sentences and inline code is never split."""
    spans = []
    fence = False
    start = 0
    for line in text.split("\n"):
        at, start = start, start + len(line) + 1
        if line.startswith("```"):
            fence = not fence
            continue
        stripped = line.strip()
        if fence or not stripped:
            continue
        if stripped.startswith("|"):
            if not TABLE_RULE.fullmatch(line):
                spans.append((at, at + len(line), "row"))
            continue
        kind = "heading" if stripped.startswith("#") else "text"
        masked = INLINE_CODE.sub(lambda m: "x" * len(m.group()), line)
        begin = LINE_MARK.match(line).end()
        for end in SENTENCE_END.finditer(masked, begin):
            if end.end() > begin:
                spans.append((at + begin, at + end.end(), kind))
                begin = end.end()
        if line[begin:].strip():
            spans.append((at + begin, at + len(line), kind))
    return spans


def sentence_of(spans, starts, text, position):
    """The index of the sentence a citation at `position` belongs to: the one it ends or stands in; between two
    sentences, the one before when no line break comes between, else the one after."""
    index = bisect_left(starts, position) - 1  # the last sentence starting before `position`
    if index >= 0 and position <= spans[index][1]:
        return index
    after = index + 1 if index + 1 < len(spans) else None
    if index >= 0 and (after is None or "\n" not in text[spans[index][1]:position]):
        return index
    return after


def check_support(pieces, chunks, threshold=SUPPORT_THRESHOLD, question="", phrases=()):
    """The support check over the answer without markers and its citation pieces (see README)."""
    text_parts, cites, length = [], [], 0
    for piece in pieces:
        if isinstance(piece, str):
            text_parts.append(piece)
            length += len(piece)
        else:
            cites.append((length, piece["ids"]))
    text = "".join(text_parts)
    spans = sentence_spans(text)
    starts = [start for start, _, _ in spans]
    cited = [[] for _ in spans]
    for position, ids in cites:
        index = sentence_of(spans, starts, text, position)
        if index is not None:
            cited[index].extend(i for i in ids if i not in cited[index])
    question_units = set(content_units(question, weights=False)) if question else None
    chunk_units = {}

    def units_of(chunk_id):
        if chunk_id not in chunk_units:
            chunk = (chunks or {}).get(int(chunk_id))
            content = chunk.get("content") if isinstance(chunk, dict) else None
            usable = isinstance(content, str) and content.strip()
            chunk_units[chunk_id] = content_units(content, weights=False) if usable else None
        return chunk_units[chunk_id]

    backing = Backing(lambda: [units_of(str(i)) for i in (chunks or {})])
    support = {}  # chunk id -> lowest score over the sentences citing it
    pairs = good_pairs = claims = backed = 0
    uncited = []
    for (start, end, kind), ids in zip(spans, cited):
        sentence = text[start:end].strip()
        units = content_units(sentence, question_units)
        if ids:
            known = [i for i in ids if units_of(i) is not None]
            if not known:
                continue
            claims += 1
            holders = {unit: sum(unit in units_of(i) for i in known) for unit in units} if len(known) > 1 else None
            together = units_of(known[0]) if holders is None else {unit for unit, n in holders.items() if n}
            if support_score(units, together) >= threshold:
                backed += 1
            for chunk_id in known:
                score = support_score(units, units_of(chunk_id), holders)
                support[chunk_id] = min(support.get(chunk_id, 1.0), score)
                pairs += 1
                good_pairs += score >= threshold
            continue
        factual = is_factual(sentence, units, kind, phrases)
        if factual or (factual is False and backing.backs(units, threshold)):
            claims += 1
            uncited.append(sentence if len(sentence) <= MAX_SENTENCE_SHOWN else sentence[:MAX_SENTENCE_SHOWN - 1] + "…")
    return {
        "support": support,
        "uncited_sentences": uncited,
        "citation_recall_proxy": round(backed / claims, 3) if claims else None,
        "citation_precision_proxy": round(good_pairs / pairs, 3) if pairs else None,
    }


def is_factual(sentence, units, kind, phrases):
    """None when an uncited sentence cannot state a fact (a heading, a question, an introduction ending with a
    colon, a refusal, too little content), True when it holds a number or code, else False (then it states a fact
    when some chunk of this turn backs it: its content came from the sources, yet it cites nothing)."""
    if kind == "heading" or sentence.rstrip("*_ ").endswith(("?", "？", ":", "：")):
        return None
    if sum(units.values()) < MIN_FACTUAL_WEIGHT:
        return None
    said = normal_text(sentence)
    if any(phrase in said for phrase in phrases):
        return None
    return any(unit[0] == "#" for unit in units)


class Backing:
    """Does some chunk back a sentence? An index unit -> chunks, built on first use; the work it may do in one
    answer is bounded (MAX_BACKING_WORK chunk look-ups), after which it answers no."""

    def __init__(self, chunk_units):
        self._chunk_units = chunk_units  # a callable giving each chunk's units (None: no text): called on first use
        self._index = None
        self._work = MAX_BACKING_WORK

    def backs(self, units, threshold):
        if units is None:  # not a candidate
            return False
        if self._index is None:
            self._index = {}
            chunks = [chunk for chunk in self._chunk_units() if chunk is not None]
            for position, chunk in enumerate(chunks):
                for unit in chunk:
                    self._index.setdefault(unit, []).append(position)
        if not self._index:  # no chunk text to compare with
            return False
        needed = sum(units.values())
        found = {}
        for unit, weight in units.items():
            holders = self._index.get(unit, ())
            self._work -= len(holders)
            if self._work < 0:
                return False
            for position in holders:
                found[position] = found.get(position, 0.0) + weight
        return bool(found) and max(found.values()) / needed >= threshold


# --- Joining the text around removed markers ------------------------------------------------------------

class Joiner:
    """Joins the text on both sides of a removed marker, for one output (`answer` or `answer_without_markers`).

    - No stray space: the horizontal whitespace just before a removed marker (or a run of removed markers) is
      dropped when what follows the run is closing punctuation, whitespace, a line break or the end of the answer
      (`15 days [C:1], then` -> `15 days, then`; `see [C:1] more` -> `see more`); it is kept before a word.
      To decide, trailing whitespace is held back, at most 16 characters.
    - Never a new marker: where the text before a removed marker could still grow into a marker (`[C:3 ` in
      `[C:3 [C:1]]`), or where the line so far is only backticks and a backtick follows (the two would form a
      code fence), "…" stands in the marker's place.
    The decisions depend only on the characters, never on how the answer was split into deltas.
    """

    def __init__(self):
        self.held = ""  # trailing horizontal whitespace, not yet shown
        self.gap = False  # a marker was removed since the last text
        self.head = ""  # text shown since its last opening bracket, while that could still become a marker
        self.ticks_only = True  # the line shown so far holds only backticks (or nothing)

    def _emit(self, text, out):
        if not text:
            return
        out.append(text)
        if "[" in text or "【" in text or "［" in text:
            head = text[max(text.rfind("["), text.rfind("【"), text.rfind("［")):]
            self.head = head if could_become_marker(head) else ""
        elif self.head:
            head = self.head + text
            self.head = head if could_become_marker(head) else ""
        if "\n" in text:
            self.ticks_only = not text[text.rfind("\n") + 1:].strip("`")
        elif self.ticks_only:
            self.ticks_only = not text.strip("`")

    def text(self, text, out):
        if not text:
            return
        if self.gap:
            self.gap = False
            first = text[0]
            if first in HSPACE or first in "\r\n" or first in CLOSING:
                self.held = ""
            elif first == "`" and not self.held and self.ticks_only:
                self._emit(BREAKER, out)
        body = text.rstrip(HSPACE)
        if body:
            self._emit(self.held + body, out)
            self.held = text[len(body):]
        else:
            self.held += text
        if len(self.held) > MAX_HELD_SPACE:
            cut = len(self.held) - MAX_HELD_SPACE
            self._emit(self.held[:cut], out)
            self.held = self.held[cut:]

    def removed(self, out, cite=None):
        """A marker removed here; `cite` (a citation piece) goes into `out` at this place."""
        if self.head:
            self._emit(self.held + BREAKER, out)
            self.held = ""
        if cite is not None:
            out.append(cite)
        self.gap = True

    def rendered(self, text, out):
        """A marker shown as display numbers (`[1][2]`)."""
        self.gap = False
        self._emit(self.held + text, out)
        self.held = ""

    def finish(self, out):
        if not self.gap:
            self._emit(self.held, out)
        self.held = ""
        self.gap = False


# --- The scanner -----------------------------------------------------------------------------------------

class CitationStream:
    """Feed an answer delta by delta; each `feed` returns the text that is safe to show now.

    Holds back at most one unfinished marker (under 64 characters, `pending`) and at most 16 characters of
    trailing whitespace (to drop it if a removed marker and punctuation follow). Total cost is linear in the answer.
    """

    def __init__(self, chunk_metadata=None, insufficient_phrases=INSUFFICIENT_DEFAULT, question=None):
        self._chunks = parse_chunk_metadata(chunk_metadata)
        if question is not None and not isinstance(question, str):
            raise ValueError(f"question: expected text, got {type(question).__name__}")
        self._question = question or ""
        self._checked = None
        self._phrases = parse_phrases(insufficient_phrases)
        self._candidate = ""  # an opening bracket and what followed it, not yet decided
        self._inline = False
        self._fence = False
        self._line_ticks = 0  # backticks seen at the start of this line; -1 once anything else was
        self._index_of = {}  # id -> display number
        self._citations = []
        self._invalid = []
        self._fresh = []
        self._shown = []
        self._plain = []  # the answer with every marker removed (text) and citation pieces where markers stood
        self._answer_joiner = Joiner()
        self._plain_joiner = Joiner()
        self._finished = False

    # public API

    def feed(self, delta):
        return "".join(self._feed(delta)[0])

    def feed_pieces(self, delta):
        """Like `feed`, but returns what is safe to show as pieces, in order:
        `{"type": "text", "text": ...}` (never any part of a marker) and
        `{"type": "cite", "numbers": [...], "ids": [...], "new": [...]}` where a marker stood (`new`: the numbers
        shown for the first time). The text pieces of a whole stream join to `answer_without_markers`."""
        return pieces_of(self._feed(delta)[1])

    def finish(self):
        return "".join(self._finish()[0])

    def finish_pieces(self):
        """Like `finish`, as pieces (see `feed_pieces`)."""
        return pieces_of(self._finish()[1])

    def _feed(self, delta):
        if self._finished:
            raise ValueError("answer: the stream is finished; start a new CitationStream")
        if not isinstance(delta, str):
            raise ValueError(f"answer: each delta must be text, got {type(delta).__name__}")
        if self._fresh:
            self._fresh = []
        answer, plain = self._answer_joiner, self._plain_joiner
        if (not self._candidate and not answer.gap and not plain.gap and not answer.head and not plain.head
                and answer.held == plain.held and TEXT_STOPS.search(delta) is None):
            # The usual delta: plain text (no bracket, backtick or line break) and both joiners with nothing pending
            # but the same trailing whitespace. The scanner would pass it on whole and both joiners would do the
            # same with it (Joiner.text), so that is done here once.
            if not delta:
                return [], []
            self._line_ticks = -1
            body, held = delta.rstrip(HSPACE), answer.held
            if body:
                trailing = delta[len(body):]
                if len(trailing) <= MAX_HELD_SPACE:
                    text = held + body if held else body
                    answer.held = plain.held = trailing
                    answer.ticks_only = plain.ticks_only = False
                    self._shown.append(text)
                    self._plain.append(text)
                    return [text], [text]
            elif len(held) + len(delta) <= MAX_HELD_SPACE:
                answer.held = plain.held = held + delta
                return [], []
        out = []
        self._scan(delta, out)
        return self._show(out)

    def _finish(self):
        if self._finished:
            return [], []
        self._fresh = []
        out = [self._candidate]
        self._candidate = ""
        self._finished = True
        return self._show(out, final=True)

    @property
    def pending(self):
        """The unfinished marker candidate held back, never longer than 63 characters."""
        return self._candidate

    def new_citations(self):
        """Citations that appeared for the first time in the last `feed` (or `finish`)."""
        return [dict(c) for c in self._fresh]

    def result(self):
        if not self._finished:
            self.finish()
        plain = "".join(p for p in self._plain if isinstance(p, str))
        said = normal_text(plain) if self._phrases else ""
        if any(p in said for p in self._phrases):
            status = "insufficient_evidence"
        else:
            status = "cited" if self._citations else "uncited"
        if self._checked is None:  # the support check runs once, after the stream ended
            self._checked = check_support(self._plain, self._chunks, question=self._question, phrases=self._phrases)
        checked = self._checked
        citations = []
        for citation in self._citations:
            score = checked["support"].get(citation["id"])
            citations.append({**citation, "support": None if score is None else round(score, 3),
                              "weak": score is not None and score < SUPPORT_THRESHOLD})
        return {
            "answer": "".join(self._shown),
            "answer_without_markers": plain,
            "citations": citations,
            "id_map": {c["id"]: c["index"] for c in citations},
            "invalid_ids": list(self._invalid),
            "status": status,
            "references_markdown": references_markdown(citations),
            "references_by_marker_markdown": references_by_marker_markdown(citations),
            "uncited_sentences": list(checked["uncited_sentences"]),
            "citation_recall_proxy": checked["citation_recall_proxy"],
            "citation_precision_proxy": checked["citation_precision_proxy"],
        }

    # scanning

    def _show(self, out, final=False):
        """The scanner's output through both joiners: (answer text parts, plain text parts and citation pieces)."""
        shown, plain = [], []
        for piece in out:
            if isinstance(piece, str):
                self._answer_joiner.text(piece, shown)
                self._plain_joiner.text(piece, plain)
                continue
            text, numbers, ids, new = piece
            cite = {"type": "cite", "numbers": numbers, "ids": ids, "new": new} if numbers else None
            self._plain_joiner.removed(plain, cite)
            if text:
                self._answer_joiner.rendered(text, shown)
            else:
                self._answer_joiner.removed(shown)
        if final:
            self._answer_joiner.finish(shown)
            self._plain_joiner.finish(plain)
        self._shown.extend(shown)
        self._plain.extend(plain)
        return shown, plain

    def _scan(self, text, out):
        i, n = 0, len(text)
        while i < n:
            if self._candidate:
                self._grow_candidate(text[i], out)
                i += 1
                continue
            stops = CODE_STOPS if (self._inline or self._fence) else TEXT_STOPS
            match = stops.search(text, i)
            j = match.start() if match else n
            if j > i:
                out.append(text[i:j])
                self._line_ticks = -1
            if j < n:
                self._special(text[j], out)
            i = j + 1

    def _special(self, char, out):
        if char == "\n":
            self._inline = False
            self._line_ticks = 0
            out.append(char)
        elif char == "`":
            self._backtick()
            out.append(char)
        else:  # an opening bracket outside code
            self._line_ticks = -1
            self._candidate = char

    def _backtick(self):
        if self._line_ticks >= 0:
            self._line_ticks += 1
            if self._line_ticks == len(FENCE):
                self._fence = not self._fence
                self._inline = False
                return
            if self._line_ticks > len(FENCE):
                return
        if not self._fence:
            self._inline = not self._inline

    def _grow_candidate(self, char, out):
        candidate = self._candidate + char
        if char == BRACKETS[candidate[0]]:
            self._candidate = ""
            ids = marker_ids(candidate)
            out.append(candidate if ids is None else self._render(ids))  # a tuple marks a rendered marker
        elif could_become_marker(candidate):
            self._candidate = candidate
        else:
            out.append(self._candidate)
            self._candidate = ""
            self._scan(char, out)

    def _render(self, ids):
        """(shown text, display numbers, chunk ids, numbers new here) for a marker citing `ids`."""
        shown = []
        new = []
        for chunk_id in ids:
            key = str(chunk_id)
            if self._chunks is not None and chunk_id not in self._chunks:
                if key not in self._invalid:
                    self._invalid.append(key)
                continue
            if key not in self._index_of:
                self._index_of[key] = len(self._citations) + 1
                citation = {"index": self._index_of[key], "id": key, "count": 0}
                chunk = (self._chunks or {}).get(chunk_id, {})
                for field in CITATION_FIELDS:
                    citation[field] = field_text(chunk.get(field), field)
                self._citations.append(citation)
                self._fresh.append(citation)
                new.append(self._index_of[key])
            self._citations[self._index_of[key] - 1]["count"] += 1
            shown.append(self._index_of[key])
        numbers = sorted(set(shown))
        ids_shown = [self._citations[number - 1]["id"] for number in numbers]
        return "".join(f"[{number}]" for number in sorted(shown)), numbers, ids_shown, sorted(new)


def pieces_of(parts):
    """Text parts and citation pieces as pieces, adjacent text joined, empty text dropped."""
    pieces = []
    for part in parts:
        if isinstance(part, str):
            if not part:
                continue
            if pieces and pieces[-1]["type"] == "text":
                pieces[-1]["text"] += part
            else:
                pieces.append({"type": "text", "text": part})
        else:
            pieces.append({"type": "cite", "numbers": list(part["numbers"]), "ids": list(part["ids"]),
                           "new": list(part["new"])})
    return pieces


def cap_texts(items, limit):
    """At most `limit` strings: beyond that, the first limit-1 and a last entry that counts the rest."""
    if limit is None or len(items) <= limit:
        return items
    return items[:limit - 1] + [f"…and {len(items) - limit + 1} more"]


def cap_citations(citations, limit):
    """At most `limit` citations: beyond that, the first limit-1 and a summary entry for the rest, which has
    index 0 (no display number), id "", the rest's marker count as `count` and a title that says how many
    (every cited source stays in `id_map`, `references_markdown` and the answer's numbers)."""
    if limit is None or len(citations) <= limit:
        return citations
    rest = citations[limit - 1:]
    summary = {key: "" for key in citations[0]}
    summary.update({"index": 0, "id": "", "count": sum(c["count"] for c in rest),
                    "document_title": f"…and {len(rest)} more cited sources (see references_markdown)"})
    scores = [c["support"] for c in rest if c.get("support") is not None]
    summary.update({"support": min(scores) if scores else None, "weak": any(c.get("weak") for c in rest)})
    return citations[:limit - 1] + [summary]


def main(answer, chunk_metadata=None, insufficient_phrases=INSUFFICIENT_DEFAULT, max_list_items=30,
         question="") -> dict:
    """`max_list_items` caps every list in the result (Dify's Code node refuses longer arrays: 30 by default);
    `question` (optional, the user's question) makes the support check weigh the question's own words down."""
    if answer is None:
        answer = ""
    if not isinstance(answer, str):
        raise ValueError(f"answer: expected text, got {type(answer).__name__}")
    if max_list_items is not None and (isinstance(max_list_items, bool) or not isinstance(max_list_items, int)
                                       or max_list_items < 2):
        raise ValueError(f"max_list_items: expected a whole number of at least 2, got {max_list_items!r}")
    stream = CitationStream(chunk_metadata, insufficient_phrases, question)
    stream.feed(answer)
    result = stream.result()
    result["citations"] = cap_citations(result["citations"], max_list_items)
    result["invalid_ids"] = cap_texts(result["invalid_ids"], max_list_items)
    result["uncited_sentences"] = cap_texts(result["uncited_sentences"], max_list_items)
    return result
