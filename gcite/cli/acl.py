"""`python -m gcite acl audit|fix`: the command line over `gcite.acl` (the Knowledge API client and the ACL
verdicts): its options, one line per document, the summary and the exit codes."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import unicodedata
from collections.abc import Callable
from typing import Any

from citations.filter import MISSING_ACL_CHOICES
from gcite.acl import (
    DEFAULT_MAX_MINUTES,
    DEFAULT_MAX_REQUESTS,
    DEFAULT_RETRIES,
    EXIT_ATTENTION,
    EXIT_OK,
    EXIT_USAGE,
    MAX_SHOWN_ROLES,
    MISSING,
    UNREADABLE,
    AclAdminError,
    KnowledgeApi,
    Report,
    Row,
    Stages,
    Verdict,
    role_label,
    run,
    safe,
    show,
)

LABELS = {"ok": "ok", "unset": "unset", "fix": "FIX", "unreadable": "CANNOT-READ"}


def dify_stages() -> Stages:
    """The pre-filter as a chatflow runs it: the conditions retrofit and the chatflows write for a user's roles
    (`gcite.authoring.prefilter`), judged with Dify's SQL semantics (`gcite.local.dify_metadata`)."""
    from gcite.authoring.prefilter import conditions_for_roles
    from gcite.local.dify_metadata import admits, field_text

    def prefilter_admits(acl_field: str, doc_metadata: dict[str, Any], roles: list[str], missing_acl: str) -> bool:
        return admits(conditions_for_roles(acl_field, roles, missing_acl), doc_metadata)

    return Stages(prefilter_admits, field_text)


def line(row: Row, mode: str) -> str:
    found = row.found
    label = "FIXED" if row.written else LABELS[found.status]
    text = f"{label:<11} {row.id}  {safe(row.name)}  {show(found.value)}"
    if found.prefilter is not None and found.node is not None:
        text += f"  | pre-filter: {prefilter_text(found.prefilter, found.node)} | filter node: {found.node.text()}"
    if found.status == "fix":
        text += f"  → {show(found.target)}" + (" (dry run: not written)" if mode == "dry-run" else "")
        if row.written:
            text += "\n  wrote it (read back: the ACL field changed, every other field as it was)"
    if found.status == "unreadable":
        text += "  — left alone"
    if found.note:
        text += f"  ({found.note})"
    return text


def prefilter_text(pre: Verdict, node: Verdict) -> str:
    """The pre-filter's verdict, with the roles it admits only through a substring match set apart."""
    extra = [r for r in pre.roles if r not in node.roles]
    if node.everyone or not extra or len(extra) == len(pre.roles):
        return pre.text()
    kept = Verdict(False, tuple(r for r in pre.roles if r in node.roles)).text()
    shown = ", ".join(map(role_label, extra[:MAX_SHOWN_ROLES])) + (", …" if len(extra) > MAX_SHOWN_ROLES else "")
    return f"{kept} (also {shown}: a substring match, which the filter node then drops)"


def summary(report: Report, mode: str) -> tuple[str, int]:
    counts = {s: sum(r.found.status == s for r in report.rows) for s in LABELS}
    rewrites = "rewritten" if mode == "apply" else "that fix rewrites"
    text = (
        f"{len(report.rows)} document{'' if len(report.rows) == 1 else 's'}: "
        f"{counts['ok']} {'follows' if counts['ok'] == 1 else 'follow'} the convention, "
        f"{counts['unset']} without the field, "
        f"{counts['fix']} outside the convention {rewrites}, {counts['unreadable']} it cannot read (left alone)"
    )
    if mode == "dry-run":
        text += f"; dry run: {counts['fix']} write(s) listed, nothing written (add --apply)"
    elif mode == "apply":
        text += f"; {report.writes} write(s) made and read back"
    pending = counts["fix"] if mode != "apply" else 0
    return text, EXIT_ATTENTION if pending or counts["unreadable"] else EXIT_OK


def add_parser(commands: Any) -> None:
    acl = commands.add_parser("acl", help="audit or fix a knowledge base's ACL metadata through Dify's Knowledge API")
    sub = acl.add_subparsers(dest="acl_command", required=True, metavar="{audit,fix}")
    for name, help_text in (
        ("audit", "list every document's ACL value and what the pre-filter and filter node do"),
        ("fix", "rewrite ACL values to the convention (a dry run unless --apply)"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--dataset", required=True, help="the knowledge base (dataset) id")
        p.add_argument(
            "--base-url", help="the Knowledge API base, e.g. https://api.dify.ai/v1 (default: $DIFY_BASE_URL)"
        )
        p.add_argument(
            "--api-key",
            help="a knowledge-base API key (default: $DIFY_DATASET_API_KEY; prefer the "
            "environment, a command line is visible to other users)",
        )
        p.add_argument(
            "--acl-field", default="access_roles", help="the metadata field holding roles (default: access_roles)"
        )
        p.add_argument(
            "--missing-acl",
            choices=MISSING_ACL_CHOICES,
            default="visible",
            help="as set in the chatflow's pre-filter and filter node (default: visible)",
        )
        p.add_argument(
            "--retries",
            type=int,
            default=DEFAULT_RETRIES,
            help=f"retries for 429, 5xx and network errors (default {DEFAULT_RETRIES})",
        )
        p.add_argument(
            "--max-requests",
            type=int,
            default=DEFAULT_MAX_REQUESTS,
            help=f"stop the run after this many requests (default {DEFAULT_MAX_REQUESTS:,})",
        )
        p.add_argument(
            "--max-minutes",
            type=float,
            default=DEFAULT_MAX_MINUTES,
            help=f"stop the run after this many minutes, waits included (default {DEFAULT_MAX_MINUTES:g})",
        )
        p.add_argument("--json", action="store_true", help="print one JSON object per document and a summary")
        if name == "fix":
            p.add_argument("--apply", action="store_true", help="write the changes (default: list them only)")


def as_json(row: Row) -> str:
    found = row.found
    return json.dumps(
        {
            "id": row.id,
            "name": row.name,
            "status": found.status,
            "value": None if found.value in (MISSING, UNREADABLE) else found.value,
            "value_set": found.value is not MISSING,
            "prefilter": found.prefilter and found.prefilter.text(),
            "filter_node": found.node and found.node.text(),
            "target": found.target,
            "written": row.written,
            "note": found.note,
        },
        ensure_ascii=False,
    )


def pause(seconds: float) -> None:
    time.sleep(seconds)


def has_space_or_control(text: str) -> bool:
    return any(c.isspace() or unicodedata.category(c)[0] == "C" for c in text)


def url_problem(url: str) -> str | None:
    """What makes an http(s) URL unusable before any request is sent (no host, a bad port, spaces), or None."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError for a port that is not a number from 0 to 65535
    except ValueError as error:
        return f"not a usable URL ({error})"
    if not parts.hostname:
        return "the URL names no host"
    if has_space_or_control(url):
        return "the URL contains whitespace or control characters"
    if port == 0:
        return "port 0 is not a port to connect to"
    return None


def command(
    args: argparse.Namespace, stdout: Any = None, stderr: Any = None, sleep: Callable[[float], None] | None = None
) -> int:
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    base_url = args.base_url or os.environ.get("DIFY_BASE_URL", "")
    key = args.api_key if args.api_key is not None else os.environ.get("DIFY_DATASET_API_KEY", "")
    problems = []
    if not base_url.startswith(("http://", "https://")):
        problems.append(
            "--base-url / DIFY_BASE_URL: expected the Knowledge API's http(s) base URL, e.g. "
            "https://api.dify.ai/v1" + ("" if base_url else " (not set)")
        )
    else:
        malformed = url_problem(base_url)
        if malformed:
            problems.append(f"--base-url / DIFY_BASE_URL: {malformed}, e.g. https://api.dify.ai/v1")
    if not key:
        problems.append("--api-key / DIFY_DATASET_API_KEY: not set")
    elif has_space_or_control(key):
        problems.append("--api-key / DIFY_DATASET_API_KEY: contains whitespace or control characters")
    if args.max_requests < 1:
        problems.append(f"--max-requests: expected 1 or more, got {args.max_requests}")
    if not math.isfinite(args.max_minutes) or args.max_minutes <= 0:
        problems.append(f"--max-minutes: expected a number of minutes above 0, got {args.max_minutes:g}")
    if args.retries < 0 or args.retries > 10:
        problems.append(f"--retries: expected 0 to 10, got {args.retries}")
    if not args.dataset.strip() or "/" in args.dataset or "?" in args.dataset:
        problems.append(f"--dataset: expected a dataset id, got {safe(args.dataset)!r}")
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=stderr)
        return EXIT_USAGE
    mode = "audit" if args.acl_command == "audit" else "apply" if args.apply else "dry-run"

    def on_row(row: Row) -> None:
        print(as_json(row) if args.json else line(row, mode), file=stdout, flush=True)

    report = Report()
    api = KnowledgeApi(
        base_url,
        key,
        args.retries,
        sleep or pause,
        log=lambda m: print(f"warning: {m}", file=stderr),
        max_requests=args.max_requests,
        max_minutes=args.max_minutes,
    )
    try:
        if not args.json:
            print(
                f"dataset {safe(args.dataset)}, ACL field {args.acl_field!r}, missing_acl={args.missing_acl}, "
                f"{'audit' if mode == 'audit' else 'fix (' + mode + ')'}",
                file=stdout,
            )
        run(api, args.dataset.strip(), args.acl_field, args.missing_acl, mode, on_row, report, dify_stages())
    except AclAdminError as error:
        if report.writes:
            print(f"{report.writes} write(s) were made before the error", file=stderr)
        print(f"error: {api.redact(str(error))}", file=stderr)
        return error.code
    finally:
        api.close()
    text, code = summary(report, mode)
    print(json.dumps({"summary": text, "exit_code": code}, ensure_ascii=False) if args.json else text, file=stdout)
    return code
