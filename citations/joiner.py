"""Joining the text on both sides of a removed marker (`Joiner`)."""

from citations.markers import could_become_marker

HSPACE = " \t\u00a0\u3000"
CLOSING = frozenset(",.;:!?)]}»”’，。；：！？、）】』」》〉…")
MAX_HELD_SPACE = 16
BREAKER = "…"  # stands where a removed marker would otherwise let the text around it form a marker


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
            head = text[max(text.rfind("["), text.rfind("【"), text.rfind("［")) :]
            self.head = head if could_become_marker(head) else ""
        elif self.head:
            head = self.head + text
            self.head = head if could_become_marker(head) else ""
        if "\n" in text:
            self.ticks_only = not text[text.rfind("\n") + 1 :].strip("`")
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
            self.held = text[len(body) :]
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
