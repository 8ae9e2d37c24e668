"""`make demo`: the G-Cite chatflow on the built-in building-assistant data, run on graphon, shown as a client sees it."""

import sys
from pathlib import Path
from typing import TextIO

from gcite.authoring.chatflows import CODE_DSL, PLUGIN_DSL
from gcite.local.llm import EXTRACTIVE_LABEL
from gcite.cli.pretty import PrettyPrinter
from gcite.local.runner import Conversation, run_chatflow
from gcite.local.services import SAMPLE_SEARCH_KEY, local_services

DEMO_TURNS = ("巡更时发现异常怎么上报？", "会议室怎么预约？")
DEMO_ROLES = "物业经理"
DSL_CHOICES = {"plugin": PLUGIN_DSL, "code": CODE_DSL}
__all__ = ["DEMO_TURNS", "DEMO_ROLES", "DSL_CHOICES", "SAMPLE_SEARCH_KEY", "run"]


def shown_roles(roles: str) -> str:
    """The roles as given, or "(none)" when they name no role ('', ',' or blanks: a user with no role)."""
    from citations.acl_prefilter import ROLE_DELIMITERS

    return roles if any(r.strip() for r in ROLE_DELIMITERS.split(roles)) else "(none)"


def run(out: TextIO = sys.stdout, queries: tuple[str, ...] = DEMO_TURNS, roles: str = DEMO_ROLES,
        dsl: Path = PLUGIN_DSL, llm_base_url: str | None = None, llm_model: str | None = None) -> bool:
    """One conversation: each query is a turn; the built-in stand-in model, or the OpenAI-compatible one at
    `llm_base_url`. Returns False when a turn reported an error."""
    out.write(f"Chatflow: {dsl.name} on graphon (Dify's workflow engine); user_roles = {shown_roles(roles)}\n")
    out.write(f"LLM: {llm_model} at {llm_base_url}\n" if llm_base_url else f"LLM: {EXTRACTIVE_LABEL}\n")
    text = dsl.read_text(encoding="utf-8")
    ok = True
    with local_services(llm_base_url=llm_base_url, llm_model=llm_model) as services:
        conversation = Conversation()
        for turn, query in enumerate(queries, start=1):
            out.write(f"\n===== turn {turn}: {query}\n")
            printer = PrettyPrinter(out)
            for event in run_chatflow(text, query, {"user_roles": roles}, services, conversation):
                printer.feed(event)
            ok &= not printer.finish()["errors"]
    return ok
