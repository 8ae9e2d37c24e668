"""`cited_answer`'s stream: the model's deltas in, the text Dify's chat shows out, citations clean at every moment.

Every delta goes through `CitationStream` (a marker split across deltas is never shown half; citations numbered
1..K by first appearance; an unknown id dropped and reported), except a reasoning model's `<think>…</think>`, which
passes through untouched. Each citation is rendered whole in one piece of text (`html`: a superscript link with the
source's title; `plain`: `[n]`). Deltas are sent in batches: the first at once, then at most one event per `window`
seconds, and no delta waits longer than that; a batch is cleaned in one go (the citation stream gives the same text
for any split, and one call per batch costs less than one per delta). Time is never read here: every step is given
`now`.

The state of one answer is a plain dict (`new_answer`); the functions below each do one step of it:
`feed_delta` / `due_events` / `next_due` while the model streams, then `finish_answer` or `fail_answer`, then
`final_outputs`. `tool_request` reads the tool's parameters.
"""

import html
import re

from citations.chunk_list import field_text, parse_chunk_metadata
from citations.phrases import INSUFFICIENT_DEFAULT
from citations.prompt import PROMPT_LANGS, language_of, optional_text
from citations.references import HIDDEN_SCHEMES, reference_line, url_scheme
from citations.stream import CitationStream
from citations.validate import cap_texts

STYLES = ("html", "plain", "markers")  # markers: for machines (the endpoint), see citations/answer_layout.py
BATCH_WINDOW = 0.08  # seconds: at most one event per window; no delta waits longer
THINK_TAGS = ("<think>", "</think>")
MAX_TITLE_CHARS = 200
MAX_LIST_OUTPUT = 1000  # a tool's lists are not bound by the Code node's 30 items; still capped
MAX_ERROR_CHARS = 300
LANGUAGE_SAMPLE = 2000  # characters of the answer its language is judged on
MODEL_TIME_LIMIT = 240  # seconds: the plugin daemon cuts a backwards model call this long after it started
TIME_LIMIT_MARGIN = 5  # a failure this close to the limit is the daemon's cut
TIMEOUT_WORDS = re.compile(r"deadline|timed? ?out", re.IGNORECASE)
SOURCES_HEADING = {"zh": "来源", "en": "Sources"}
NOTICES = {
    "zh": {
        "error": "⚠️ 回答到此中断：模型在生成过程中出错。",
        "timeout": f"⚠️ 回答到此中断：模型生成用时超过了 Dify 允许的 {MODEL_TIME_LIMIT} 秒。",
    },
    "en": {
        "error": "⚠️ The answer stops here: the model failed while writing it.",
        "timeout": f"⚠️ The answer stops here: the model took longer than the {MODEL_TIME_LIMIT} s Dify allows.",
    },
}
MODEL_FIELDS = ("provider", "model")
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


# --- the tool's parameters ------------------------------------------------------------------------------------------


def model_config_of(value):
    """The `model` parameter (Dify's model selector: {provider, model, model_type, mode, completion_params}) as the
    SDK's model config. A selector still wrapped as a constant input ({type: constant, value: selector}: what Dify 1.16
    passes when the tool node has no `tool_node_version`) is unwrapped."""
    if isinstance(value, dict) and value.get("type") == "constant" and isinstance(value.get("value"), dict):
        value = value["value"]
    if not isinstance(value, dict) or not all(isinstance(value.get(k), str) and value[k].strip() for k in MODEL_FIELDS):
        shown = type(value).__name__ if not isinstance(value, dict) else f"an object with {sorted(value)[:8]}"
        raise ValueError(f"model: choose the model to answer with (expected {{provider, model, …}}, got {shown})")
    model_type = value.get("model_type") or "llm"
    if model_type != "llm":
        raise ValueError(f"model: expected a model of type llm, got {str(model_type)[:40]!r}")
    params = value.get("completion_params")
    if params is not None and not isinstance(params, dict):
        raise ValueError(f"model.completion_params: expected an object, got {type(params).__name__}")
    mode = value.get("mode") or "chat"
    if not isinstance(mode, str):
        raise ValueError(f"model.mode: expected text, got {type(mode).__name__}")
    return {
        "provider": value["provider"],
        "model": value["model"],
        "model_type": "llm",
        "mode": mode,
        "completion_params": dict(params or {}),
    }


def chunk_list_of(value):
    """Dify casts an unset array parameter to "" or [""]: both mean "no list given" (None)."""
    if value in (None, "", [""]):
        return None
    return value


def tool_request(parameters):
    """The tool's parameters, read and checked; a bad one raises ValueError naming it."""
    style = parameters.get("style") or STYLES[0]
    if style not in STYLES:
        raise ValueError(f"style: expected one of {', '.join(STYLES)}, got {str(style)[:40]!r}")
    phrases = parameters.get("insufficient_phrases")
    return {
        "model": model_config_of(parameters.get("model")),
        "query": parameters.get("query"),
        "context": optional_text(parameters.get("context"), "context"),
        "chunk_metadata": chunk_list_of(parameters.get("chunk_metadata")),
        "history": optional_text(parameters.get("history"), "history"),
        "instructions": optional_text(parameters.get("instructions"), "instructions"),
        "style": style,
        "insufficient_phrases": INSUFFICIENT_DEFAULT if phrases in (None, "") else phrases,
    }


def usage_of(usage):
    """The model's token counts ({prompt_tokens, completion_tokens, total_tokens}, 0 when not reported)."""
    usage = usage if isinstance(usage, dict) else {}
    counts = {}
    for field in USAGE_FIELDS:
        value = usage.get(field)
        counts[field] = value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
    if not counts["total_tokens"]:
        counts["total_tokens"] = counts["prompt_tokens"] + counts["completion_tokens"]
    return counts


# --- one answer's state ---------------------------------------------------------------------------------------------


def new_answer(
    chunk_metadata=None, style=STYLES[0], insufficient_phrases=INSUFFICIENT_DEFAULT, question="", window=BATCH_WINDOW
):
    if style not in STYLES:
        raise ValueError(f"style: expected one of {', '.join(STYLES)}, got {str(style)[:40]!r}")
    if isinstance(window, bool) or not isinstance(window, (int, float)) or not window >= 0:
        raise ValueError(f"window: expected seconds (a number from 0), got {window!r}")
    return {
        "stream": CitationStream(chunk_metadata, insufficient_phrases, question),
        "chunks": parse_chunk_metadata(chunk_metadata) or {},
        "style": style,
        "window": window,
        "question": question or "",
        "raw": [],  # the model's deltas received since the last event
        "queued_at": None,  # when the oldest of them was received
        "sent_at": None,  # when the last event was sent
        "events": 0,
        "longest_wait": 0.0,  # the longest any delta waited to be sent
        "think": {"inside": False, "held": ""},
        "group": [],  # numbers of the citation group being written (citations with no text between)
        "markup": {},  # (number, after another of its group) -> its markup
        "said": [],  # the start of the answer's text, for its language
        "said_chars": 0,
        "failed": None,  # "error" or "timeout" once the model failed after text
    }


def feed_delta(state, delta, now):
    """One model delta; returns the events (texts) to send now."""
    if delta:
        if not state["raw"]:
            state["queued_at"] = now
        state["raw"].append(delta)
    return due_events(state, now)


def due_events(state, now):
    """The deltas received since the last event, made safe to show, as one event when the last event was sent at
    least `window` ago (or none was): a batch is cleaned once, not delta by delta (the citation stream gives the
    same text for any split)."""
    if not state["raw"] or (state["sent_at"] is not None and now - state["sent_at"] < state["window"]):
        return []
    return send(state, shown_text(state), now)


def next_due(state, now):
    """Seconds until received text must be sent (0: now), or None when none is waiting."""
    if not state["raw"]:
        return None
    if state["sent_at"] is None:
        return 0.0
    return max(0.0, state["sent_at"] + state["window"] - now)


def finish_answer(state, now):
    """The model ended: whatever was held back, except an unfinished marker (a model cut by its token limit may end
    on `[C:3`), then an open `<think>` closed; returns the last events."""
    return send(state, shown_text(state) + closing_text(state), now)


def fail_answer(state, reason, now):
    """The model failed after text was shown (`reason`: "error" or "timeout"): the text safe to show, without an
    unfinished marker, then one notice in the answer's language; returns the last events."""
    text = shown_text(state) + closing_text(state)
    state["failed"] = reason
    notice = NOTICES[answer_language(state)][reason]
    return send(state, text + ("\n\n" if state["events"] or text else "") + notice, now)


def failure_reason(message, elapsed):
    """ "timeout" when the failure is the plugin daemon's cut (near its time limit, or saying so), else "error"."""
    if elapsed >= MODEL_TIME_LIMIT - TIME_LIMIT_MARGIN or TIMEOUT_WORDS.search(message or ""):
        return "timeout"
    return "error"


def failure_message(message):
    """The tool's error when the model fails before any text (the node then fails, or takes its error branch)."""
    detail = " ".join(str(message or "no detail").split())[:MAX_ERROR_CHARS]
    return f"cited_answer: the model failed before writing any text: {detail}"


def final_outputs(state, usage=None):
    """After the last event: `sources` (streamed after the answer) and the plain outputs."""
    result = state["stream"].result()
    status = "model_error" if state["failed"] else result["status"]
    citations = result["citations"]
    listed = status != "insufficient_evidence"
    lang = (
        language_of(result["answer_without_markers"][:LANGUAGE_SAMPLE])
        or language_of(state["question"])
        or PROMPT_LANGS[1]
    )
    return {
        "sources": sources_text(citations, state["style"], lang) if listed else "",
        "answer_without_markers": result["answer_without_markers"],
        "citations": citations,
        "invalid_ids": cap_texts(result["invalid_ids"], MAX_LIST_OUTPUT),
        "status": status,
        "uncited_sentences": cap_texts(result["uncited_sentences"], MAX_LIST_OUTPUT),
        "citation_recall_proxy": result["citation_recall_proxy"],
        "citation_precision_proxy": result["citation_precision_proxy"],
        "usage": usage_of(usage),
    }


# --- steps ----------------------------------------------------------------------------------------------------------


def shown_text(state):
    """The deltas received since the last event, rendered: think text as it is, answer text through the citation
    stream, its pieces rendered (what the stream holds back stays in it)."""
    text = "".join(state["raw"])
    state["raw"] = []
    out = []
    for kind, part in split_think(state["think"], text):
        if kind == "think":
            out.append(part)
            continue
        for piece in state["stream"].feed_pieces(part):
            out.append(render_piece(state, piece))
    return "".join(out)


def closing_text(state):
    """Everything still held back by the `<think>` splitter and the citation stream, rendered, except an unfinished
    marker; an open `<think>` is closed so that what follows is not folded into it."""
    out = []
    for kind, part in split_think(state["think"], "", final=True):
        out.append(
            part
            if kind == "think"
            else "".join(render_piece(state, piece) for piece in state["stream"].feed_pieces(part))
        )
    drop = state["stream"].pending
    pieces = state["stream"].finish_pieces()
    if drop and pieces and pieces[-1]["type"] == "text" and pieces[-1]["text"].rstrip().endswith(drop.rstrip()):
        pieces[-1]["text"] = pieces[-1]["text"].rstrip()[: -len(drop.rstrip())].rstrip()
    out += [render_piece(state, piece) for piece in pieces]
    if state["think"]["inside"]:
        state["think"]["inside"] = False
        out.append("\n" + THINK_TAGS[1])
    return "".join(out)


def send(state, text, now):
    """`text` as one event (none when it is empty)."""
    waited = now - state["queued_at"] if state["queued_at"] is not None else 0.0
    state["queued_at"] = None
    if not text:
        return []
    state["longest_wait"] = max(state["longest_wait"], waited)
    state["sent_at"] = now
    state["events"] += 1
    return [text]


def split_think(think, delta, final=False):
    """`delta` cut into ("think", text) and ("answer", text) parts: `<think>`, what follows it and `</think>` are
    think text. The end of `delta` that may be the start of a tag is held back (`think["held"]`) until the next
    delta shows what it is, or released when `final`."""
    if not think["held"] and "<" not in delta:  # the usual delta: no tag can start in it
        return [("think" if think["inside"] else "answer", delta)] if delta else []
    text = think["held"] + delta
    think["held"] = ""
    parts = []
    while text:
        tag = THINK_TAGS[1] if think["inside"] else THINK_TAGS[0]
        kind = "think" if think["inside"] else "answer"
        at = text.find(tag)
        if at >= 0:
            if think["inside"]:
                parts.append(("think", text[: at + len(tag)]))
            else:
                parts += [("answer", text[:at]), ("think", tag)]
            think["inside"] = not think["inside"]
            text = text[at + len(tag) :]
            continue
        held = 0 if final else tag_start(text, tag)
        parts.append((kind, text[: len(text) - held]))
        think["held"] = text[len(text) - held :]
        break
    return [(kind, part) for kind, part in parts if part]


def tag_start(text, tag):
    """The length of the longest end of `text` that is the start of `tag` (0: none)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


# --- rendering ------------------------------------------------------------------------------------------------------


def render_piece(state, piece):
    """A `CitationStream` piece as the chat shows it: text as it is; a citation rendered whole."""
    if piece["type"] == "text":
        if state["group"]:
            state["group"] = []
        if state["said_chars"] < LANGUAGE_SAMPLE:
            remember_said(state, piece["text"])
        return piece["text"]
    out = []
    for number, chunk_id in zip(piece["numbers"], piece["ids"]):
        if number in state["group"]:
            continue  # `[C:1][C:1]`: one citation
        key = (number, bool(state["group"]))
        state["group"].append(number)
        markup = state["markup"].get(key)
        if markup is None:  # each number's markup is made once: a long answer cites the same sources again and again
            markup = state["markup"][key] = citation_markup(
                number, state["chunks"].get(int(chunk_id)), state["style"], key[1], chunk_id
            )
        out.append(markup)
    return "".join(out)


def remember_said(state, text):
    state["said"].append(text)
    state["said_chars"] += len(text)


def answer_language(state):
    return language_of("".join(state["said"])) or language_of(state["question"]) or PROMPT_LANGS[1]


def citation_markup(number, chunk, style, separator=False, chunk_id=""):
    """One citation: `<sup title="Title · site">[n](#gcite-n)</sup>` (html) or `[n]` (plain). `separator`: it
    follows another citation of the same group (`[C:1][C:3]`), so a comma keeps the numbers apart. `markers` (for
    machines: the G-Cite endpoint reads it) is the canonical `[C:id]` of a known chunk, sent whole."""
    if style == "plain":
        return f"[{number}]"
    if style == "markers":
        return f"[C:{chunk_id}]"
    title = source_title(chunk)
    attribute = f' title="{html.escape(title, quote=True)}"' if title else ""
    comma = "<sup>,</sup>" if separator else ""
    return f"{comma}<sup{attribute}>[{number}](#gcite-{number})</sup>"


def source_title(chunk):
    """ "Title · site" of a chunk, one line, at most MAX_TITLE_CHARS ("" when the chunk is unknown)."""
    if not isinstance(chunk, dict):
        return ""
    title = field_text(chunk.get("document_title"), "document_title")
    site = (
        field_text(chunk.get("site_name"), "site_name")
        or field_text(chunk.get("site_host"), "site_host")
        or field_text(chunk.get("dataset_name"), "dataset_name")
    )
    text = " · ".join(" ".join(part.split()) for part in (title, site) if part.strip())
    return text if len(text) <= MAX_TITLE_CHARS else text[: MAX_TITLE_CHARS - 1] + "…"


def sources_text(citations, style, lang):
    """The cited sources after the answer, in display order ("" when nothing was cited): `html`, a markdown list
    whose items carry the `gcite-n` anchors the superscripts link to; `plain`, `[n] Title — site · date — URL`."""
    if not citations or style == "markers":  # markers: the reader lists the sources from `citations`
        return ""
    heading = SOURCES_HEADING[lang]
    if style == "plain":
        colon = "：" if lang == "zh" else ":"
        return f"\n\n{heading}{colon}\n" + "\n".join(plain_source_line(c) for c in citations)
    lines = [f'{c["index"]}. <span id="gcite-{c["index"]}"></span>{reference_line(c)}' for c in citations]
    return f"\n\n**{heading}**\n\n" + "\n".join(lines)


def plain_source_line(citation):
    title = " ".join((citation["document_title"] or f"C:{citation['id']}").split())
    line = f"[{citation['index']}] {title}"
    if citation.get("display_subtitle"):
        line += " — " + " ".join(citation["display_subtitle"].split())
    url = citation.get("url") or ""
    url = " ".join(url.split()) if isinstance(url, str) else ""
    if url and url_scheme(url) not in HIDDEN_SCHEMES:
        line += " — " + url
    return line
