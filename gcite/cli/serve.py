"""`python -m gcite serve`: its options and checks; the server itself is `gcite.local.serve`."""

import errno
import os
import re
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gcite.local.serve import DEFAULT_PACE, DEFAULT_PORT, LocalDify

# An origin as the endpoint's `allowed_origins` setting takes it: scheme://host[:port], a DNS name, an IPv4 address or
# a bracketed IPv6 address. The same pattern as endpoints/settings.py's ORIGIN (a test keeps them equal): importing
# that module would import dify_plugin, whose gevent patching this process must not take.
ORIGIN = re.compile(
    r"(https?)://((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
    r"|\[[0-9a-f:.]{2,45}\])(?::([0-9]{1,5}))?"
)
DEFAULT_PORTS = {"http": 80, "https": 443}
MIN_SECRET_BYTES = 32  # the endpoint's token_secret minimum (endpoints/settings.py MIN_SECRET_BYTES)
MAX_SECRET_FILE_BYTES = 4096  # one secret, with room to spare; a larger file is not a secret file


def add_serve_arguments(parser: Any) -> None:
    from gcite.cli.common import add_knowledge_base_argument

    parser.add_argument(
        "--port",
        type=int,
        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}, or a free port when that one is taken; 0: any free port)",
    )
    parser.add_argument(
        "--llm-base-url",
        help="an OpenAI-compatible endpoint for the chatflow's LLM "
        "(key in GCITE_LLM_API_KEY); default: the built-in extractive stand-in",
    )
    parser.add_argument("--llm-model", help="model name for --llm-base-url (needs --llm-base-url)")
    parser.add_argument(
        "--pace",
        type=float,
        metavar="SECONDS",
        help=f"seconds between the stand-in model's streamed deltas, 0 or more (default {DEFAULT_PACE}; "
        "not with --llm-base-url, which streams at the model's pace)",
    )
    parser.add_argument(
        "--dsl",
        metavar="plugin|code|PATH",
        help="the chatflow the app runs: plugin (dsl/gcite_chatflow.yml, default), code "
        "(dsl/gcite_chatflow_code.yml) or a DSL file",
    )
    add_knowledge_base_argument(parser)
    parser.add_argument(
        "--fail-on",
        metavar="TEXT",
        help="for trying the error state: a question containing TEXT makes the chatflow's model fail",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="an app's origin whose pages may call the endpoint and read /local/users, exactly "
        "scheme://host[:port] (e.g. http://localhost:3000); repeat for more (default: only the "
        "page's own origin)",
    )
    parser.add_argument(
        "--secret-file",
        metavar="FILE",
        help="sign tokens with the secret in FILE (one line, at least 32 bytes; readable by you alone, "
        "chmod 600) instead of one made at start, so your own tokens and the endpoint's URL stay "
        "valid across restarts",
    )


def usage_problem(args: Any) -> str | None:
    """What is wrong with `gcite serve`'s options, in one line; None when nothing is. Reads --dsl, --knowledge-base
    and --secret-file once, to check them; sets args.dsl to the chatflow's path, args.dsl_text to its text and
    args.knowledge_base_data to the knowledge base read (None: the shipped chatflow, the built-in sample),
    args.allow_origin to the origins as browsers send them, and args.secret to the secret of --secret-file (None
    without it)."""
    import math

    from gcite.cli.common import CliError, llm_options_problem, load_knowledge_base, read_chatflow_file
    from gcite.cli.demo import DSL_CHOICES

    if args.port is not None and not 0 <= args.port <= 65535:
        return f"--port must be from 0 to 65535, got {args.port}"
    if problem := llm_options_problem(args):
        return problem
    if args.pace is not None:
        if args.llm_base_url:
            return "--pace applies to the built-in stand-in model only, not with --llm-base-url"
        if not math.isfinite(args.pace) or args.pace < 0:
            return f"--pace must be 0 or more seconds, got {args.pace:g}"
    if args.fail_on is not None and not args.fail_on.strip():
        return "--fail-on: the text is empty (it would fail every question)"
    # each file is read here once, no further than its cap; the server takes the text and the data read
    args.dsl_text = args.knowledge_base_data = None
    try:
        if args.dsl is not None:
            path = DSL_CHOICES.get(args.dsl) or Path(args.dsl)
            args.dsl, args.dsl_text = str(path), read_chatflow_file(path)
        args.knowledge_base_data = load_knowledge_base(Path(args.knowledge_base) if args.knowledge_base else None)
    except CliError as error:
        return str(error)
    origins = []
    for value in getattr(args, "allow_origin", None) or ():
        origin, problem = origin_of(value)
        if problem:
            return problem
        origins.append(origin)
    args.allow_origin = list(dict.fromkeys(origins))
    args.secret = None
    if getattr(args, "secret_file", None) is not None:
        args.secret, problem = read_secret_file(Path(args.secret_file))
        return problem
    return None


def shown(value: str) -> str:
    """A value the user gave, for an error line: as typed when short, printable and without spaces, else quoted (and
    cut at 60 characters)."""
    plain = value and len(value) <= 60 and value.isprintable() and not any(c.isspace() for c in value)
    return value if plain else repr(value[:60])


def origin_of(value: str) -> tuple[str, str | None]:
    """(the origin as browsers send it in `Origin`: lower case, no trailing slash, no default port; None) or
    ("", why `value` is not an exact origin, naming --allow-origin)."""
    if value.strip() == "*":
        return "", (
            "--allow-origin *: gcite serve takes exact origins only (scheme://host[:port], e.g. "
            "http://localhost:3000); repeat --allow-origin for each"
        )
    origin = value.strip().rstrip("/").lower()
    match = ORIGIN.fullmatch(origin)
    if not match or (match.group(3) is not None and not 1 <= int(match.group(3)) <= 65535):
        return "", (
            f"--allow-origin {shown(value)}: not an origin; write it as scheme://host[:port] with no path, "
            "e.g. http://localhost:3000"
        )
    if match.group(3) and int(match.group(3)) == DEFAULT_PORTS[match.group(1)]:
        origin = f"{match.group(1)}://{match.group(2)}"
    return origin, None


def read_secret_file(path: Path) -> tuple[str | None, str | None]:
    """(the secret: the file's text without the whitespace around it; None) or (None, why the file cannot be used,
    naming --secret-file). Refused: a file other users may read or write (it signs every user's token), one that is
    not one line of UTF-8 text, or a secret under MIN_SECRET_BYTES. The secret itself is never in a message."""
    where = f"--secret-file {path}"
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):  # a folder, or a pipe that would keep the server from starting
            return None, f"{where}: not a file"
        if os.name == "posix" and info.st_mode & 0o077:
            return None, (
                f"{where}: other users may read or change it (mode {stat.S_IMODE(info.st_mode):o}); the "
                f"secret signs every user's token: make it yours alone with chmod 600 {path}"
            )
        with open(path, "rb") as file:
            data = file.read(MAX_SECRET_FILE_BYTES + 1)
    except OSError as error:
        return None, f"{where}: cannot read it ({error.strerror or type(error).__name__})"
    if len(data) > MAX_SECRET_FILE_BYTES:
        return None, f"{where}: over {MAX_SECRET_FILE_BYTES} bytes; it should hold one secret (gcite secret prints one)"
    try:
        secret = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None, f"{where}: not UTF-8 text"
    if not secret:
        return None, f"{where}: the file is empty (.venv/bin/python -m gcite secret > {path} writes a secret)"
    if "\n" in secret or "\r" in secret:
        return None, f"{where}: more than one line; the file should hold the secret alone"
    if len(secret.encode("utf-8")) < MIN_SECRET_BYTES:
        return None, (
            f"{where}: the secret is {len(secret.encode('utf-8'))} bytes; the endpoint takes at least "
            f"{MIN_SECRET_BYTES} (.venv/bin/python -m gcite secret prints one)"
        )
    return secret, None


def serve_on_port(args: Any, make: Callable[[int], Any]) -> Any:
    """`make(port)` on the port asked for; without --port, on DEFAULT_PORT or, when that one is taken, on a free port
    (said on stdout). None after printing why it cannot serve: a --port that is taken names --port."""
    port = DEFAULT_PORT if args.port is None else args.port
    try:
        return make(port)
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            print(f"error: cannot serve on 127.0.0.1:{port}: {error.strerror or error}", file=sys.stderr)
            return None
        if args.port is not None:
            print(
                f"error: port {port} on 127.0.0.1 is already in use (another gcite serve or make demo?): choose "
                f"another with --port PORT, or --port 0 for any free port",
                file=sys.stderr,
            )
            return None
    local = make(0)
    print(
        f"port {DEFAULT_PORT} is in use (another gcite serve or make demo?); serving on port {local.port} instead "
        f"(--port PORT chooses one)",
        flush=True,
    )
    return local


def serve_command(args: Any) -> int:
    problem = usage_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.pace is None:
        args.pace = DEFAULT_PACE
    from gcite.local.services import make_llm

    llm = make_llm(args.llm_base_url, args.llm_model) if args.llm_base_url else None  # usage_problem checked the pair
    local = serve_on_port(
        args,
        lambda port: LocalDify(
            port,
            llm=llm,
            pace=args.pace if llm is None else 0,
            dsl_text=args.dsl_text,
            knowledge_base=args.knowledge_base_data,
            fail_on=args.fail_on,
            allow_origins=args.allow_origin,
            secret=args.secret,
        ),
    )
    if local is None:
        return 2
    local.start()
    print(f"G-Cite page:   {local.page_url}", flush=True)
    print(f"chat endpoint: {local.base}/gcite/chat", flush=True)
    print(
        f"sample users:  http://127.0.0.1:{local.port}/local/users (tokens); "
        + "; ".join(f"{u['id']} ({', '.join(u['roles']) or 'no role'})" for u in local.users)
    )
    if args.allow_origin:
        print(f"other origins: {' '.join(args.allow_origin)} may call the endpoint and read /local/users")
    if args.secret:
        print(f"token secret:  from {args.secret_file} (the same URL on every start; tokens outlive a restart)")
    else:
        print("token secret:  made at start (--secret-file FILE for a fixed one)")
    print("Ctrl-C stops.", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        local.close()
    return 0
