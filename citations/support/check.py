"""The support check: does the cited chunk back the sentence that cites it? One function, `check_support`, over
the answer without markers and its citations (docs/support-check.md). A lexical proxy that needs no model and no
tokenizer: the share of the sentence's content found in the chunk, and contradiction cues."""

from citations.phrases import normal_text
from citations.support.chunk import ChunkView, OverBudgetError, Work
from citations.support.reasons import missing_items, reason_text
from citations.support.score import coverage, judge, plain_share, support_score
from citations.support.sentences import sentence_of, sentence_spans
from citations.support.text import normal_form
from citations.support.units import content_units, unit_set
from citations.support.weights import DEFAULT_WEIGHTS

MAX_BACKING_WORK = 2_000_000  # unit look-ups for "does some chunk back this uncited sentence?" in one answer
# The work budget (citations.support.chunk.Work, in units of about a nanosecond): an answer may spend WORK_BASE and
# WORK_PER_CHARACTER per character of the answer and of the chunks it cites; one sentence SENTENCE_WORK_BASE and
# that much per character of itself and of the chunks it cites. A citation whose check would spend more is left
# unchecked (UNCHECKED), never given a verdict from half its rules. Ordinary answers spend a fraction of it.
WORK_BASE = 5_000_000
WORK_PER_CHARACTER = 700
SENTENCE_WORK_BASE = 2_000_000
UNCHECKED = {"kind": "unchecked", "why": "work budget"}
MAX_SENTENCE_SHOWN = 300
# Two scores closer than this are the same score: a sum of weights can differ in its last bits with the order of a
# set, which changes from process to process; the first sentence with the lowest score gives the reasons.
SAME_SCORE = 1e-12
# Where the check runs: None = in the caller's thread. The plugin sets a function `(function, *args) -> its result`
# that runs it in a real OS thread (endpoints/chat.py, `check_off_loop`): one answer's check never holds the event loop
# every other stream shares.
run_elsewhere = None


def check_support(pieces, chunks, question="", phrases=(), weights=DEFAULT_WEIGHTS):
    """`checked_support`, in the thread `run_elsewhere` chooses (when set)."""
    if run_elsewhere is not None:
        return run_elsewhere(checked_support, pieces, chunks, question, phrases, weights)
    return checked_support(pieces, chunks, question, phrases, weights)


def checked_support(pieces, chunks, question="", phrases=(), weights=DEFAULT_WEIGHTS):
    """The support check over an answer as pieces: its text without markers (strings) and, where a marker stood,
    its citation ({"ids": [chunk id, …]}). `chunks`: {int id: chunk}, the content under "content"; `question`:
    the user's question (its own words weigh less); `phrases`: the refusal phrases (a sentence holding one states
    no fact). Returns the text, per cited chunk id its lowest score ("support"), the reasons for it as objects and
    as one line ("reasons", "reason"), the uncited sentences that state a fact and the two proxies."""
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
            for chunk_id in ids:
                if chunk_id not in cited[index]:
                    cited[index].append(chunk_id)
    question_units = unit_set(question) if question else None
    views = {}
    lengths = {}  # chunk id -> the length of its text (for the work budget)
    for ids in cited:
        for chunk_id in ids:
            if chunk_id not in lengths:
                chunk = (chunks or {}).get(int(chunk_id))
                content = chunk.get("content") if isinstance(chunk, dict) else None
                lengths[chunk_id] = len(content) if isinstance(content, str) else 0
    budget = Work(WORK_BASE + WORK_PER_CHARACTER * (len(text) + sum(lengths.values())))

    def view_of(chunk_id):
        if chunk_id not in views:
            chunk = (chunks or {}).get(int(chunk_id))
            content = chunk.get("content") if isinstance(chunk, dict) else None
            usable = isinstance(content, str) and content.strip()
            views[chunk_id] = ChunkView(content, budget) if usable else None
        return views[chunk_id]

    threshold = weights.threshold
    backing = Backing(lambda: [view.units for view in map(view_of, map(str, chunks or {})) if view is not None])
    support = {}  # chunk id -> lowest score over the sentences citing it
    lowest = {}  # chunk id -> (sentence, cues, holders) of that lowest score
    unchecked = set()  # chunk ids with a (sentence, chunk) pair past the work budget
    pairs = good_pairs = claims = backed = 0
    uncited = []
    for (start, end, kind), ids in zip(spans, cited):
        sentence = text[start:end].strip()
        if ids:
            known = [i for i in ids if view_of(i) is not None]
            if not known:
                continue
            normal = normal_form(sentence)
            units = content_units(normal, question_units, True, weights)
            said = normal.casefold()
            parts = None  # `judge` splits the sentence when it needs its parts
            claims += 1
            holders = {unit: sum(unit in views[i].units for i in known) for unit in units} if len(known) > 1 else None
            if holders is None:  # one chunk: its coverage is the plain share's and the start of `judge`'s score
                covered = coverage(units, views[known[0]].units, None, (), weights)
                plain = plain_share(covered, weights)
            else:
                covered = None
                plain = support_score(units, {unit for unit, n in holders.items() if n}, weights=weights)
            if plain >= threshold:
                backed += 1
            budget.sentence(SENTENCE_WORK_BASE + WORK_PER_CHARACTER * (end - start + sum(map(lengths.get, known))))
            for chunk_id in known:
                try:
                    budget.spend(len(said) * 20)  # the pair's own reading of the sentence (every view spends from it)
                    score, cues = judge(said, units, views[chunk_id], holders, parts, covered, weights)
                except OverBudgetError:
                    unchecked.add(chunk_id)
                    continue
                if chunk_id not in support or score < support[chunk_id] - SAME_SCORE:
                    support[chunk_id] = score
                    lowest[chunk_id] = (sentence, cues, holders)
                pairs += 1
                good_pairs += score >= threshold
            continue
        if kind == "heading" or is_open(sentence):
            continue  # states no fact (`is_factual`): its units are not needed
        units = content_units(normal_form(sentence), question_units, True, weights)
        factual = is_factual(sentence, units, kind, phrases, weights)
        if factual or (factual is False and backing.backs(units, threshold)):
            claims += 1
            uncited.append(
                sentence if len(sentence) <= MAX_SENTENCE_SHOWN else sentence[: MAX_SENTENCE_SHOWN - 1] + "…"
            )
    for chunk_id in unchecked:  # a weak verdict found stays (the lowest score can only be lower); else unchecked
        if chunk_id not in support or support[chunk_id] >= threshold:
            support.pop(chunk_id, None)
            lowest.pop(chunk_id, None)
    reasons = {chunk_id: [dict(UNCHECKED)] for chunk_id in unchecked if chunk_id not in support}
    for chunk_id, (sentence, cues, others) in lowest.items():
        found = list(cues)
        if support[chunk_id] < threshold:
            items = missing_items(sentence, view_of(chunk_id), others)
            if items:
                found.insert(0, {"kind": "missing", "items": items})
        reasons[chunk_id] = found
    return {
        "text": text,  # the answer without markers
        "support": support,
        "reasons": reasons,
        "reason": {chunk_id: reason_text(found) for chunk_id, found in reasons.items()},
        "uncited_sentences": uncited,
        "citation_recall_proxy": round(backed / claims, 3) if claims else None,
        "citation_precision_proxy": round(good_pairs / pairs, 3) if pairs else None,
    }


def is_factual(sentence, units, kind, phrases, weights=DEFAULT_WEIGHTS):
    """None when an uncited sentence cannot state a fact (a heading, a question, an introduction ending with a
    colon, a refusal, too little content), True when it holds a number or code, else False (then it states a fact
    when some chunk of this turn backs it: its content came from the sources, yet it cites nothing)."""
    if kind == "heading" or is_open(sentence):
        return None
    if sum(units.values()) < weights.min_factual_weight:
        return None
    said = normal_text(sentence)
    if any(phrase in said for phrase in phrases):
        return None
    return any(unit[0] == "#" for unit in units)


def is_open(sentence):
    """Does a sentence end with a question mark or a colon (a question, or an introduction to what follows)?"""
    return sentence.rstrip("*_ ").endswith(("?", "？", ":", "："))


class Backing:
    """Does some chunk back a sentence? The chunks are tried in turn and the first that holds `threshold` of the
    sentence's weight answers yes; the work in one answer is bounded (MAX_BACKING_WORK unit look-ups), after which
    it answers no."""

    def __init__(self, chunk_units):
        self._chunk_units = chunk_units  # a callable giving the chunks' unit sets: called on first use
        self._chunks = None
        self._work = MAX_BACKING_WORK

    def backs(self, units, threshold):
        if units is None:  # not a candidate
            return False
        if self._chunks is None:
            self._chunks = [chunk for chunk in self._chunk_units() if chunk]
        needed = sum(units.values())
        if needed <= 0:
            return False
        enough = threshold * needed
        items = list(units.items())
        for chunk in self._chunks:
            self._work -= len(items)
            if self._work < 0:
                return False
            if sum(weight for unit, weight in items if unit in chunk) >= enough:
                return True
        return False
