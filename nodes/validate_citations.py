"""G-Cite citation validator: [C:N] markers -> display numbers 1..K in order of first appearance.

A Dify Code node (standard library only, Python 3.10 syntax, self-contained). `main` validates a whole answer;
`CitationStream` does the same incrementally, delta by delta, and never emits part of a marker. Both run the
same scanner, so for any split of an answer the streamed text equals `main(answer)["answer"]`.

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
        line = f"[{title}]({quote(url, safe=':/?#@!$&*+,;=%~-._')})"
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
        at = max(text.rfind(bracket) for bracket in BRACKETS)
        if at >= 0:
            head = text[at:]
        elif self.head:
            head = self.head + text
        else:
            head = ""
        self.head = head if head and could_become_marker(head) else ""
        at = text.rfind("\n")
        if at >= 0:
            self.ticks_only = not text[at + 1:].strip("`")
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

    def __init__(self, chunk_metadata=None, insufficient_phrases=INSUFFICIENT_DEFAULT):
        self._chunks = parse_chunk_metadata(chunk_metadata)
        self._phrases = parse_phrases(insufficient_phrases)
        self._candidate = ""  # an opening bracket and what followed it, not yet decided
        self._inline = False
        self._fence = False
        self._line_ticks = 0  # backticks seen at the start of this line; -1 once anything else was
        self._index_of = {}  # id -> display number
        self._citations = []
        self._invalid = []
        self._fresh = []
        self._raw = []
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
        self._fresh = []
        self._raw.append(delta)
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
        citations = [dict(c) for c in self._citations]
        plain = "".join(p for p in self._plain if isinstance(p, str))
        said = normal_text(plain) if self._phrases else ""
        if any(p in said for p in self._phrases):
            status = "insufficient_evidence"
        else:
            status = "cited" if citations else "uncited"
        return {
            "answer": "".join(self._shown),
            "answer_without_markers": plain,
            "citations": citations,
            "id_map": {c["id"]: c["index"] for c in citations},
            "invalid_ids": list(self._invalid),
            "status": status,
            "references_markdown": references_markdown(citations),
            "references_by_marker_markdown": references_by_marker_markdown(citations),
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
    for key, value in citations[0].items():
        if isinstance(value, bool):
            summary[key] = any(c[key] for c in rest)
        elif isinstance(value, float):
            summary[key] = min(c[key] for c in rest)
    return citations[:limit - 1] + [summary]


def main(answer, chunk_metadata=None, insufficient_phrases=INSUFFICIENT_DEFAULT, max_list_items=30) -> dict:
    """`max_list_items` caps every list in the result (Dify's Code node refuses longer arrays: 30 by default)."""
    if answer is None:
        answer = ""
    if not isinstance(answer, str):
        raise ValueError(f"answer: expected text, got {type(answer).__name__}")
    if max_list_items is not None and (isinstance(max_list_items, bool) or not isinstance(max_list_items, int)
                                       or max_list_items < 2):
        raise ValueError(f"max_list_items: expected a whole number of at least 2, got {max_list_items!r}")
    stream = CitationStream(chunk_metadata, insufficient_phrases)
    stream.feed(answer)
    result = stream.result()
    result["citations"] = cap_citations(result["citations"], max_list_items)
    result["invalid_ids"] = cap_texts(result["invalid_ids"], max_list_items)
    return result
