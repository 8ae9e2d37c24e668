"""`make demo`: the G-Cite chatflow on the built-in building-assistant data, run on graphon, shown as a client
sees it."""

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from citations.answer_layout import machine_inputs
from gcite.authoring.chatflows import CODE_DSL, PLUGIN_DSL
from gcite.cli.pretty import PrettyPrinter
from gcite.local.llm import EXTRACTIVE_LABEL
from gcite.local.runner import run_chatflow
from gcite.local.service_api import Conversation
from gcite.local.services import SAMPLE_SEARCH_KEY, local_services

DEMO_TURNS = ("巡更时发现异常怎么上报？", "会议室怎么预约？")
SAMPLE_TURNS = {"zh": DEMO_TURNS, "en": ("How do I report an anomaly on patrol?", "How do I book a meeting room?")}
LANG_NAMES = {"en": "English", "zh": "Chinese"}
LOCALE_VARIABLES = ("LC_ALL", "LC_MESSAGES", "LANG")  # the first one set decides, as for any program's messages
DEMO_ROLES = "物业经理"
DSL_CHOICES = {"plugin": PLUGIN_DSL, "code": CODE_DSL}
__all__ = [
    "DEMO_TURNS",
    "DEMO_ROLES",
    "DSL_CHOICES",
    "SAMPLE_SEARCH_KEY",
    "SAMPLE_TURNS",
    "demo_language",
    "language_note",
    "run",
]


class LanguageError(ValueError):
    """DEMO_LANG names no language of the sample questions."""


def demo_language(environ: Mapping[str, str], asked: str | None = None) -> tuple[str, str]:
    """(the language of the sample questions, what chose it): `--lang` when given, else DEMO_LANG (make demo's
    variable), else the locale: the first of LC_ALL, LC_MESSAGES and LANG that is set, Chinese when it starts with
    `zh` (zh_CN.UTF-8, zh_TW), else English; English when none is set. A DEMO_LANG other than en or zh raises
    LanguageError."""
    if asked:
        return asked, f"--lang {asked}"
    chosen = environ.get("DEMO_LANG", "").strip()
    if chosen:
        if chosen.lower() not in SAMPLE_TURNS:
            raise LanguageError(f"DEMO_LANG={chosen}: expected en or zh")
        return chosen.lower(), f"DEMO_LANG={chosen}"
    for name in LOCALE_VARIABLES:
        value = environ.get(name, "").strip()
        if value:
            return ("zh" if value.lower().startswith("zh") else "en"), f"{name}={value}"
    return "en", "no LANG set"


def language_note(lang: str, why: str) -> str:
    """The line that says which language the sample questions are in, why, and how to have the other."""
    other = "zh" if lang == "en" else "en"
    return (
        f"Sample questions in {LANG_NAMES[lang]} ({why}); for {LANG_NAMES[other]}: make demo DEMO_LANG={other}, "
        f"or gcite demo --lang {other}"
    )


def shown_roles(roles: str) -> str:
    """The roles as given, or "(none)" when they name no role ('', ',' or blanks: a user with no role)."""
    from citations.acl_prefilter import ROLE_DELIMITERS

    return roles if any(r.strip() for r in ROLE_DELIMITERS.split(roles)) else "(none)"


def run(
    out: TextIO = sys.stdout,
    queries: tuple[str, ...] = DEMO_TURNS,
    roles: str = DEMO_ROLES,
    dsl: Path = PLUGIN_DSL,
    llm_base_url: str | None = None,
    llm_model: str | None = None,
    knowledge_base: dict[str, Any] | None = None,
    knowledge_base_path: str | None = None,
    dsl_text: str | None = None,
) -> bool:
    """One conversation: each query is a turn; the built-in stand-in model, or the OpenAI-compatible one at
    `llm_base_url`; the built-in knowledge base, or `knowledge_base` (read from `knowledge_base_path`); the chatflow
    `dsl` (its text `dsl_text` when read already). Returns False when a turn reported an error."""
    out.write(f"Chatflow: {dsl.name} on graphon (Dify's workflow engine); user_roles = {shown_roles(roles)}\n")
    out.write(f"LLM: {llm_model} at {llm_base_url}\n" if llm_base_url else f"LLM: {EXTRACTIVE_LABEL}\n")
    overrides: dict[str, Any] = {}
    if knowledge_base is not None:
        overrides["knowledge_base"] = knowledge_base
        out.write(f"Knowledge base: {knowledge_base_path or 'given'} ({len(knowledge_base['documents'])} documents)\n")
    text = dsl_text if dsl_text is not None else dsl.read_text(encoding="utf-8")
    ok = True
    with local_services(llm_base_url=llm_base_url, llm_model=llm_model, **overrides) as services:
        conversation = Conversation()
        for turn, query in enumerate(queries, start=1):
            out.write(f"\n===== turn {turn}: {query}\n")
            printer = PrettyPrinter(out)
            for event in run_chatflow(text, query, machine_inputs({"user_roles": roles}), services, conversation):
                printer.feed(event)
            ok &= not printer.finish()["errors"]
    return ok
