"""`python -m gcite serve`: its options and checks; the server itself is `gcite.local.serve`."""

import errno
import json
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from gcite.local.serve import DEFAULT_PACE, DEFAULT_PORT, LocalDify


def add_serve_arguments(parser: Any) -> None:
    parser.add_argument("--port", type=int, help=f"port on 127.0.0.1 (default {DEFAULT_PORT}, or a free port when that "
                                                 "one is taken; 0: any free port)")
    parser.add_argument("--llm-base-url", help="an OpenAI-compatible endpoint for the chatflow's LLM "
                                               "(key in GCITE_LLM_API_KEY); default: the built-in extractive stand-in")
    parser.add_argument("--llm-model", help="model name for --llm-base-url (needs --llm-base-url)")
    parser.add_argument("--pace", type=float, metavar="SECONDS",
                        help=f"seconds between the stand-in model's streamed deltas, 0 or more (default {DEFAULT_PACE}; "
                             "not with --llm-base-url, which streams at the model's pace)")
    parser.add_argument("--dsl", metavar="plugin|code|PATH",
                        help="the chatflow the app runs: plugin (dsl/gcite_chatflow.yml, default), code "
                             "(dsl/gcite_chatflow_code.yml) or a DSL file")
    parser.add_argument("--knowledge-base", help="a knowledge base JSON file in the format of "
                                                 "gcite/local/samples/knowledge_base.json (default: that file)")
    parser.add_argument("--fail-on", metavar="TEXT", help="for trying the error state: a question containing TEXT "
                                                          "makes the chatflow's model fail")


def usage_problem(args: Any) -> str | None:
    """What is wrong with `gcite serve`'s options, in one line; None when nothing is. Reads --dsl and
    --knowledge-base to check them (and sets args.dsl to the chatflow's path)."""
    import math

    from gcite.cli.common import CliError, llm_options_problem, read_chatflow_file
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
    if args.dsl is not None:
        path = DSL_CHOICES.get(args.dsl) or Path(args.dsl)
        try:
            read_chatflow_file(path)
        except CliError as error:
            return str(error)
        args.dsl = str(path)
    if args.knowledge_base is not None:
        return knowledge_base_problem(Path(args.knowledge_base))
    return None


def knowledge_base_problem(path: Path) -> str | None:
    """Why `path` is not a knowledge base file like gcite/local/samples/knowledge_base.json, in one line; None if it is."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        return f"--knowledge-base {path}: not a JSON file (not UTF-8 text)"
    except OSError as error:
        return f"--knowledge-base {path}: cannot read it ({error.strerror or type(error).__name__})"
    except ValueError as error:
        return f"--knowledge-base {path}: not a JSON file ({getattr(error, 'msg', error)} at line " \
               f"{getattr(error, 'lineno', '?')}, column {getattr(error, 'colno', '?')})"
    if not isinstance(data, dict) or not isinstance(data.get("documents"), list):
        return (f"--knowledge-base {path}: not a knowledge base (expected a JSON object with a \"documents\" list, "
                f"as in gcite/local/samples/knowledge_base.json)")
    return None


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
            print(f"error: port {port} on 127.0.0.1 is already in use (another gcite serve or make demo?): choose "
                  f"another with --port PORT, or --port 0 for any free port", file=sys.stderr)
            return None
    local = make(0)
    print(f"port {DEFAULT_PORT} is in use (another gcite serve or make demo?); serving on port {local.port} instead "
          f"(--port PORT chooses one)", flush=True)
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
    local = serve_on_port(args, lambda port: LocalDify(port, llm=llm, pace=args.pace if llm is None else 0,
                                                        dsl=args.dsl, knowledge_base=args.knowledge_base,
                                                        fail_on=args.fail_on))
    if local is None:
        return 2
    local.start()
    print(f"G-Cite page:   {local.page_url}", flush=True)
    print(f"chat endpoint: {local.base}/gcite/chat", flush=True)
    print("sample users:  " + "; ".join(f"{u['id']} ({', '.join(u['roles']) or 'no role'})" for u in local.users))
    print("Ctrl-C stops.", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        local.close()
    return 0
