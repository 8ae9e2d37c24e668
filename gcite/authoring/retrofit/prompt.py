"""Rewriting an LLM's prompt: G-Cite's citation rules (taken from our own chatflows' prompt), in the prompt's
language, appended to its system prompt; the numbered chunks and the earlier conversation where they are missing.

The pass is `rewrite_prompt`; the rest is the text it adds (`citation_rules`, `history_section`, `chunks_section`,
also what docs/retrofit.md tells a builder to paste by hand) and how the language is told (`lang_of`).
"""

import re
from collections.abc import Iterable
from typing import Any

from gcite.authoring.retrofit import rules as text_rules
from gcite.authoring.retrofit.plan import Plan, new_id
from gcite.authoring.retrofit.rules import REFUSALS, RULE_HEADINGS, builder_refusal, contradictions, prompt_parts

WEB_SEARCH = re.compile(r"(?i)search|tavily|bocha|serp|bing|google|duckduckgo|brave|exa|jina|perplexity|firecrawl")

CONTEXT = "{{#context#}}"


def prompt_messages(data: dict[str, Any]) -> list[dict[str, Any]]:
    template = data.get("prompt_template")
    if isinstance(template, list):
        return [m for m in template if isinstance(m, dict)]
    if isinstance(template, dict):
        return [template]
    return []


def detect_lang(texts: Iterable[str]) -> str:
    """The prompt's language among the rules' (zh, en, ja, es); any other: English."""
    return text_rules.detect_lang("".join(texts))[0]


def citation_rules(lang: str, web: bool = False, refusal: str | None = None) -> str:
    """The citation rules retrofit adds (rules.citation_rules): those of our own chatflows' prompt, one heading
    level down under G-Cite's heading, with no word on where the chunks stand (POSITION_FREE); the web named only
    when the app searches the web (`web`); the builder's refusal sentence in place of ours (`refusal`)."""
    return text_rules.citation_rules(lang, web, refusal)


def searches_web(plan: Plan) -> bool:
    """The app searches the web: `--web gcite`, or a tool or HTTP node of its own that searches."""
    if plan.options.web == "gcite":
        return True
    if "searches_web" not in plan.cache:
        plan.cache["searches_web"] = own_search(plan)
    return plan.cache["searches_web"]


def own_search(plan: Plan) -> bool:
    for node in plan.graph.nodes:
        data = node["data"]
        if (
            data.get("type") == "tool"
            and not str(data.get("provider_id", "")).startswith("gcite/")
            and WEB_SEARCH.search(
                " ".join(str(data.get(k) or "") for k in ("provider_id", "provider_name", "tool_name"))
            )
        ):
            return True
        if data.get("type") == "http-request" and WEB_SEARCH.search(str(data.get("url") or "")):
            return True
    return False


def history_section(lang: str) -> str:
    return text_rules.SECTIONS[lang]["history"] if lang in text_rules.SECTIONS else prompt_parts(lang)["history"]


def chunks_section(lang: str) -> str:
    return text_rules.SECTIONS[lang]["chunks"] if lang in text_rules.SECTIONS else prompt_parts(lang)["chunks"]


def own_line_context(text: str) -> str:
    """`{{#context#}}` on a line of its own, so the merge node's `[C:N]` header lines stay header lines."""
    text = re.sub(r"(?<=[^\n])\{\{#context#\}\}", "\n" + CONTEXT, text)
    return re.sub(r"\{\{#context#\}\}(?=[^\n])", CONTEXT + "\n", text)


def lang_of(plan: Plan, llm_id: str) -> str:
    """The language of the rules for this LLM: `--lang`, else its system prompt's (else its whole prompt's)."""
    if plan.options.lang != "auto":
        return plan.options.lang
    return text_rules.detect_lang(builder_text(plan, llm_id))[0]


def builder_text(plan: Plan, llm_id: str, system_only: bool = False) -> str:
    """The builder's own prompt text: the system prompt (else every message; with `system_only`, else nothing), up
    to any rules G-Cite added."""
    messages = prompt_messages(plan.graph.by_id[llm_id]["data"])
    system = [m.get("text") or "" for m in messages if m.get("role") == "system"]
    if not system and not system_only:
        system = [m.get("text") or "" for m in messages]
    text = "\n".join(str(t) for t in system)
    cut = min((text.find(h) for h in RULE_HEADINGS.values() if h in text), default=len(text))
    return text[:cut]


def refusal_of(plan: Plan, llm_id: str, lang: str) -> str:
    """The refusal the LLM is told to give: the builder's own sentence, else ours in `lang`."""
    return builder_refusal(builder_text(plan, llm_id)) or REFUSALS[lang]


def insufficient_phrases(plan: Plan, llm_id: str, lang: str) -> str:
    """What the validate node recognises as a refusal: the LLM's own first, then the validator's defaults."""
    return "|".join(dict.fromkeys([refusal_of(plan, llm_id, lang), *REFUSALS.values()]))


def warn_contradictions(plan: Plan, llm_id: str) -> None:
    """Pass: a `warning:` for each sentence of the builder's prompt that contradicts citing (`check_prompt`, and
    with --answer cited for an LLM the tool replaces, whose system prompt it carries). Reads the builder's prompt;
    writes warnings only."""
    g = plan.graph
    for sentence in contradictions(builder_text(plan, llm_id)):
        shown = sentence if len(sentence) <= 160 else sentence[:157] + "…"
        plan.warn(
            f"LLM {g.title(llm_id)}: its prompt says {shown!r}, which contradicts the [C:N] markers the "
            f"citation rules ask for; remove or reword it in Dify if the answers should cite (left as it is)"
        )


def check_prompt(plan: Plan, llm_id: str, lang: str) -> None:
    """Pass (before the rules are added): a `warning:` for each sentence of the builder's prompt that contradicts
    citing, a note when the prompt's language has no rules of its own (English rules) and when the builder's own
    refusal sentence is used. Reads the builder's prompt; writes warnings and notes only."""
    g, text = plan.graph, builder_text(plan, llm_id)
    warn_contradictions(plan, llm_id)
    if any(h in text for h in RULE_HEADINGS.values()):
        return
    if plan.options.lang == "auto" and not text_rules.detect_lang(text)[1]:
        plan.notes.append(
            f"LLM {g.title(llm_id)}: its prompt's language has no rules of its own; the rules are "
            f"added in English (--lang zh|en|ja|es to choose)"
        )
    if (refusal := builder_refusal(text)) is not None:
        plan.notes.append(
            f"LLM {g.title(llm_id)}: its own refusal {refusal!r} is used in the rules and "
            f"recognised by the validate node as insufficient evidence"
        )


def rewrite_prompt(plan: Plan, llm_id: str, lang: str) -> None:
    """Pass: the LLM's prompt gains G-Cite's citation rules, never twice.

    Reads the LLM's `prompt_template` and `options.memory`. Writes its messages: a system message if it has none
    (chat mode), `{{#context#}}` put on a line of its own, and at the end of the system prompt the citation rules,
    the earlier conversation (with --memory, where no message has it) and the chunks (where no message has
    `{{#context#}}`); on a prompt that has the rules already, only the earlier conversation when --memory asks for
    it. One change line per edit."""
    g = plan.graph
    check_prompt(plan, llm_id, lang)
    data = g.by_id[llm_id]["data"]
    messages = prompt_messages(data)
    system = next((m for m in messages if m.get("role") == "system"), None)
    if system is None and isinstance(data.get("prompt_template"), list):
        system = {"id": new_id("system", llm_id), "role": "system", "text": ""}
        data["prompt_template"].insert(0, system)
        plan.change(f"prompt extended: LLM {g.title(llm_id)} gains a system prompt")
    elif system is None:
        system = messages[0]  # completion mode: one prompt
    text = system.get("text") or ""
    history = plan.options.memory and not any(
        "{{#conversation.history_text#}}" in (m.get("text") or "") for m in messages
    )
    if any(h in text for h in RULE_HEADINGS.values()):
        if history:
            system["text"] = text.rstrip() + "\n\n" + history_section(lang)
            plan.change(f"prompt extended: LLM {g.title(llm_id)} system prompt gains the earlier conversation")
        return
    for message in messages:
        spaced = own_line_context(message.get("text") or "")
        if spaced != (message.get("text") or ""):
            message["text"] = spaced
            plan.change(
                f"prompt: LLM {g.title(llm_id)} {{{{#context#}}}} put on a line of its own (each "
                f"numbered chunk starts with its [C:N] line)"
            )
    text = system.get("text") or ""
    chunks = not any(CONTEXT in (m.get("text") or "") for m in messages)
    rules = citation_rules(lang, searches_web(plan), builder_refusal(builder_text(plan, llm_id)))
    added = [rules] + ([history_section(lang)] if history else []) + ([chunks_section(lang)] if chunks else [])
    system["text"] = (text.rstrip() + "\n\n" if text.strip() else "") + "\n\n".join(added)
    extras = [name for name, wanted in (("the earlier conversation", history), ("the chunks", chunks)) if wanted]
    plan.change(
        f"prompt extended: LLM {g.title(llm_id)} system prompt gains G-Cite's citation rules ({lang})"
        + (f" and {' and '.join(extras)}" if extras else "")
    )
