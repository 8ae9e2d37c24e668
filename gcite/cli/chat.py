"""`python -m gcite chat`: ask an endpoint, the Service API, a recorded stream or the local runner, and show the
cited answer as it streams (`gcite.client` reads the streams; this module only chooses and prints)."""

import json
from collections.abc import Iterable, Iterator
from typing import Any

from citations.answer_layout import machine_inputs
from gcite.client import (
    Cite,
    Done,
    Error,
    Event,
    LocalRunError,
    Replace,
    Text,
    chat,
    collect,
    dify_events,
    service_api,
    sse_events,
)

SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def render(events: Iterable[Event], out: Any, err: Any, show_conversation: bool = True) -> int:
    """Write a cited answer to a terminal as it streams (citations as superscript numbers), then its sources (and the
    conversation to continue, unless `show_conversation` is false). Returns 0, or 1 after an error (the error goes to
    `err`)."""
    wrote = False
    for event in events:
        if isinstance(event, Text):
            out.write(event.text)
            wrote = True
        elif isinstance(event, Cite):
            out.write("˒".join(str(n).translate(SUPERSCRIPT) for n in event.numbers))
            wrote = True
        elif isinstance(event, Replace):
            out.write(("\n" if wrote else "") + "── the answer was replaced ──\n" + event.text)
            wrote = True
        elif isinstance(event, Error):
            if wrote:
                out.write("\n")
            out.flush()
            err.write(f"error ({event.code}): {event.message}\n")
            return 1
        elif isinstance(event, Done):
            out.write("\n")
            if event.status == "insufficient_evidence":
                out.write("(the sources do not answer this question)\n")
            for c in event.citations:
                kind = "web" if c.get("source_type") == "web" else "knowledge base"
                subtitle = f" · {c['display_subtitle']}" if c.get("display_subtitle") else ""
                url = f"  {c['url']}" if c.get("url") else ""
                weak = "  (weak support)" if c.get("weak") is True else ""
                out.write(f"[{c.get('number')}] {c.get('document_title', '')}{subtitle} ({kind}){url}{weak}\n")
            if event.conversation and show_conversation:
                out.write(f"conversation: {event.conversation}\n")
        out.flush()
    return 0


def add_chat_arguments(parser: Any) -> None:
    parser.add_argument("query", nargs="?", help="the question (not with --stdin, which reads a recorded answer)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--url", help="a G-Cite chat endpoint: https://<dify>/e/<hook>/gcite/chat, or gcite serve's")
    source.add_argument("--service-api", metavar="URL", help="a Dify Service API base URL (…/v1): the raw stream")
    source.add_argument("--stdin", action="store_true", help="read a recorded stream (either kind) from standard input")
    parser.add_argument("--token", help="with --url: the caller's token (JWT); the roles come from it")
    parser.add_argument(
        "--user", help="with --url of gcite serve, instead of --token: one of its sample users (see its /local/users)"
    )
    parser.add_argument("--api-key", help="with --service-api: the app's API key (default: $GCITE_DIFY_API_KEY)")
    parser.add_argument("--roles", help="the user_roles input, for --service-api and the local run (default: none)")
    parser.add_argument(
        "--conversation",
        help="with --url or --service-api: continue a conversation (the handle, or Dify's conversation_id)",
    )
    parser.add_argument(
        "--dsl",
        metavar="plugin|code|PATH",
        help="the local run's chatflow: plugin (dsl/gcite_chatflow.yml, default), code "
        "(dsl/gcite_chatflow_code.yml) or a DSL file",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the live answer")
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="local run: also print the workflow engine's log records (graphon, dify_plugin) on stderr",
    )


# which options each way of asking takes (the others are refused, never ignored)
MODE_OPTIONS = {
    "--url": ("--token", "--user", "--conversation"),
    "--service-api": ("--api-key", "--roles", "--conversation"),
    "--stdin": (),
    "local": ("--roles", "--dsl", "--verbose"),
}


MODE_HINTS = {
    "--url": {
        "--roles": "the roles come from the token",
        "--api-key": "the endpoint takes a token (--token)",
        "--dsl": "the endpoint's app runs its own chatflow",
    },
    "--stdin": {"--conversation": "a recorded stream is only read"},
    "local": {
        "--token": "a local run has no endpoint to send it to (use --roles)",
        "--user": "sample users belong to gcite serve (--url … --user)",
        "--api-key": "a local run calls no Service API",
        "--conversation": "local conversations do not persist across invocations (gcite demo --query … "
        "--query … runs several turns of one conversation)",
    },
}


OPTION_ATTRS = {
    "--token": "token",
    "--user": "user",
    "--api-key": "api_key",
    "--roles": "roles",
    "--conversation": "conversation",
    "--dsl": "dsl",
    "--verbose": "verbose",
}


def usage_problem(args: Any) -> str | None:
    """What is wrong with this combination of options, in one line; None when nothing is."""
    mode = "--url" if args.url else "--service-api" if args.service_api else "--stdin" if args.stdin else "local"
    where = "a local run (no --url, --service-api or --stdin)" if mode == "local" else mode
    for option, attr in OPTION_ATTRS.items():
        value = getattr(args, attr, None)
        if value not in (None, False) and option not in MODE_OPTIONS[mode]:
            hint = MODE_HINTS.get(mode, {}).get(option)
            return f"{option} does not apply to {where}" + (f": {hint}" if hint else "")
    if mode == "--url" and args.token is not None and args.user is not None:
        return "--user and --token both give the caller: use one"
    if mode == "--stdin":
        if args.query is not None:
            return "--stdin reads a recorded answer: give no question"
        return None
    if args.query is None:
        return 'the question is missing (python -m gcite chat "your question" …)'
    if not args.query.strip():
        return "the question is empty"
    return None


def local_events(query: str, roles: str, dsl: str | None) -> Iterator[Event]:
    """The chatflow run on the local runner (graphon), its raw Dify stream read like a Service API stream. `dsl` is
    the chatflow's text (default: dsl/gcite_chatflow.yml). Web search is answered by the local search server."""
    from gcite.authoring.chatflows import PLUGIN_DSL
    from gcite.local.dify_rules import DifyRefusal
    from gcite.local.runner import run_chatflow
    from gcite.local.services import local_services

    def run(text: str) -> Iterator[dict[str, Any]]:
        try:
            yield from run_chatflow(text, query, machine_inputs({"user_roles": roles}), services)
        except DifyRefusal as error:
            raise LocalRunError(str(error)) from None
        except Exception as error:  # noqa: BLE001 - a DSL the engine cannot run: its cause in one line
            message = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise LocalRunError(f"{type(error).__name__}: {message}") from None

    with local_services() as services:
        text = dsl if dsl is not None else PLUGIN_DSL.read_text(encoding="utf-8")
        yield from dify_events(run(text))


def explained(events: Iterable[Event], mode: str, url: str) -> Iterator[Event]:
    """The events, with the errors a wrong address gives said as what to do: a 404 (a wrong hook or path) and a
    server that cannot be reached, each once. Dify's plugin daemon answers an unknown or disabled hook with HTTP 404
    and its own JSON error, `{"code": -404 or -400, "message": "{\"message\":\"endpoint not found\", …}"}`
    (internal/server/endpoint.go, internal/service/endpoint.go); a wrong path under a right hook is the plugin's 404."""
    for event in events:
        not_found = isinstance(event, Error) and (event.code == "http_404" or "endpoint not found" in event.message)
        if not_found and mode == "--url":
            event = Error(
                event.code,
                f"no G-Cite endpoint at {url} (HTTP 404): the hook or the path is wrong; "
                f"copy the endpoint's URL from Dify: Plugins → G-Cite citations → Endpoints "
                f"(it ends in /e/<hook>/gcite/chat)",
            )
        elif not_found and mode == "--service-api":
            event = Error(
                event.code,
                f"no Dify Service API at {url} (HTTP 404): --service-api is your Dify's API "
                f"base, ending in /v1 (the app's API Access page shows it)",
            )
        elif isinstance(event, Error) and event.code == "connection":
            event = Error(event.code, f"cannot connect to {url}: is the server running, and is {mode} right?")
        yield event


def sample_user_token(url: str, user: str) -> str:
    """The token `gcite serve` minted for one of its sample users."""
    from urllib.parse import urljoin

    import requests

    address = urljoin(url, "/local/users")
    try:
        response = requests.get(address, timeout=30)
    except requests.RequestException:
        raise ValueError(
            f"--user: cannot connect to {address} for the sample users' tokens: is gcite serve running there?"
        ) from None
    try:
        users = response.json()
    except ValueError:
        raise ValueError(
            f"--user: {address} is not gcite serve's list of sample users (HTTP {response.status_code}); "
            f"--user works with gcite serve only, use --token otherwise"
        ) from None
    for entry in users:
        if user in (entry.get("id"), entry.get("name")):
            return entry["token"]
    raise ValueError(f"--user: no sample user {user!r}; known: {', '.join(u['id'] for u in users)}")


def local_chatflow(choice: str | None) -> str | None:
    """The text of the local run's chatflow (`plugin`, `code` or a path), checked as `gcite run` checks it; a
    CliError (`gcite.cli.errors`) when it is not a chatflow."""
    from pathlib import Path

    from gcite.cli.common import read_chatflow_file
    from gcite.cli.demo import DSL_CHOICES

    if choice is None:
        return None
    return read_chatflow_file(DSL_CHOICES.get(choice) or Path(choice))


def chat_command(args: Any, stdin: Any, stdout: Any, stderr: Any) -> int:
    import os

    from gcite.cli.common import CliError

    problem = usage_problem(args)
    if problem:
        stderr.write(f"error: {problem}\n")
        return 2
    if args.url:
        token = args.token
        if not token and args.user:
            try:
                token = sample_user_token(args.url, args.user)
            except Exception as error:  # noqa: BLE001 - any failure to get a token is a usage error
                stderr.write(f"error: {error}\n")
                return 2
        if not token:
            stderr.write("error: --url needs --token (or --user with gcite serve)\n")
            return 2
        events = chat(args.url, token, args.query, args.conversation)
    elif args.service_api:
        key = args.api_key or os.environ.get("GCITE_DIFY_API_KEY", "")
        if not key:
            stderr.write("error: --service-api needs --api-key (or $GCITE_DIFY_API_KEY)\n")
            return 2
        events = service_api(
            args.service_api, key, args.query, machine_inputs({"user_roles": args.roles or ""}), args.conversation
        )
    elif args.stdin:
        events = sse_events(stdin)
    else:
        try:
            dsl = local_chatflow(args.dsl)
        except CliError as error:
            stderr.write(f"error: {error}\n")
            return 2
        events = local_events(args.query, args.roles or "", dsl)
    if args.url or args.service_api:
        events = explained(events, "--url" if args.url else "--service-api", args.url or args.service_api)
    try:
        if args.json:
            result = collect(events)
            stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
            return 1 if result["status"] == "error" else 0
        return render(events, stdout, stderr, show_conversation=bool(args.url or args.service_api or args.stdin))
    except LocalRunError as error:
        stdout.flush()
        where = f"{args.dsl}: " if args.dsl and "Error: " in str(error) else ""
        stderr.write(f"error: {where}{error}\n")
        return 2
