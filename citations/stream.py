"""The stream scanner: an answer delta by delta -> text safe to show now, markers as display numbers 1..K.

`CitationStream` never emits part of a marker; for any split of an answer the streamed text equals the whole
answer's. Removed markers leave no stray space before punctuation and never let the text around them form a
marker (`Joiner`). After the stream, the support check scores each citation against the chunk it cites.
"""

import re

from citations.answer_layout import SOURCE_LIST
from citations.chunk_list import CITATION_FIELDS, field_text, parse_chunk_metadata
from citations.joiner import HSPACE, MAX_HELD_SPACE, Joiner
from citations.markers import BRACKETS, FENCE, could_become_marker, marker_ids
from citations.phrases import INSUFFICIENT_DEFAULT, holds_phrase, parse_phrases
from citations.references import reference_line, references_by_marker_markdown, references_markdown
from citations.support.check import check_support
from citations.support.weights import DEFAULT_WEIGHTS

TEXT_STOPS = re.compile("[`\n" + re.escape("".join(BRACKETS)) + "]")
CODE_STOPS = re.compile("[`\n]")


class CitationStream:
    """Feed an answer delta by delta; each `feed` returns the text that is safe to show now.

    Holds back at most one unfinished marker (under 64 characters, `pending`) and at most 16 characters of
    trailing whitespace (to drop it if a removed marker and punctuation follow). Total cost is linear in the answer.
    """

    def __init__(
        self, chunk_metadata=None, insufficient_phrases=INSUFFICIENT_DEFAULT, question=None, weights=DEFAULT_WEIGHTS
    ):
        """`weights`: the support check's (citations.support.weights); the node ships DEFAULT_WEIGHTS."""
        self._chunks = parse_chunk_metadata(chunk_metadata)
        self._weights = weights
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
        if (
            not self._candidate
            and not answer.gap
            and not plain.gap
            and not answer.head
            and not plain.head
            and answer.held == plain.held
            and TEXT_STOPS.search(delta) is None
        ):
            # The usual delta: plain text (no bracket, backtick or line break) and both joiners with nothing pending
            # but the same trailing whitespace. The scanner would pass it on whole and both joiners would do the
            # same with it (Joiner.text), so that is done here once.
            if not delta:
                return [], []
            self._line_ticks = -1
            body, held = delta.rstrip(HSPACE), answer.held
            if body:
                trailing = delta[len(body) :]
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

    def result(self, support=True):
        """The whole answer's outputs (as the validate node's). `support=False` leaves the support check out, for a
        caller that has its results already (the endpoint takes them from the validate node): no citation has a
        score then, and `uncited_sentences` and the proxies are empty."""
        if not self._finished:
            self.finish()
        if support and self._checked is None:  # the support check runs once, after the stream ended
            self._checked = check_support(
                self._plain, self._chunks, question=self._question, phrases=self._phrases, weights=self._weights
            )
        checked = self._checked if support else unchecked(self._plain)
        plain = checked["text"]
        if holds_phrase(plain, self._phrases):
            status = "insufficient_evidence"
        else:
            status = "cited" if self._citations else "uncited"
        citations = []
        for citation in self._citations:
            score = checked["support"].get(citation["id"])
            citations.append(
                {
                    **citation,
                    "support": None if score is None else round(score, 3),
                    "weak": score is not None and score < self._weights.threshold,
                    "reasons": checked["reasons"].get(citation["id"], []),
                    "reason": checked["reason"].get(citation["id"], ""),
                }
            )
        lines = [reference_line(citation) for citation in citations]  # each made once, for both lists
        return {
            "answer": "".join(self._shown),
            "answer_without_markers": plain,
            "citations": citations,
            "id_map": {c["id"]: c["index"] for c in citations},
            "invalid_ids": list(self._invalid),
            "status": status,
            "references_markdown": references_markdown(citations, lines),
            SOURCE_LIST: references_by_marker_markdown(citations, lines),
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


def unchecked(plain):
    """What `check_support` returns, for an answer not checked: its text, and no scores, reasons or sentences."""
    return {
        "text": "".join(part for part in plain if isinstance(part, str)),
        "support": {},
        "reasons": {},
        "reason": {},
        "uncited_sentences": [],
        "citation_recall_proxy": None,
        "citation_precision_proxy": None,
    }


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
            pieces.append(
                {"type": "cite", "numbers": list(part["numbers"]), "ids": list(part["ids"]), "new": list(part["new"])}
            )
    return pieces
