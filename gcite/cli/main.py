"""python -m gcite COMMAND …

One subparser per command in `build_parser()`, one `*_command(args) -> int` per command below it. A bad option or
input is a one-line `error: …` on stderr and exit status 2; a failed run is status 1; never a traceback.
"""

import argparse
import contextlib
import sys
from collections.abc import Iterator


class CliError(Exception):
    """A bad option or input: printed as one `error:` line, exit status 2."""


def version_text() -> str:
    import yaml

    from gcite import ROOT

    try:
        manifest = yaml.safe_load((ROOT / "manifest.yaml").read_text(encoding="utf-8"))
        return f"gcite {manifest['version']} (plugin {manifest['author']}/{manifest['name']})"
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return "gcite (version unknown: manifest.yaml unreadable)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gcite", description="G-Cite command line")
    parser.add_argument("--version", action="version", version=version_text(), help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser("demo", help="run the G-Cite chatflow on the built-in building-assistant data")
    demo.add_argument("--query", action="append", metavar="TEXT",
                      help="a question (repeat for more turns of one conversation; default: two sample questions)")
    demo.add_argument("--roles", metavar="ROLES",
                      help="the user's roles, comma-separated (default: 物业经理; '' for a user with no role)")
    demo.add_argument("--dsl", default="plugin", metavar="plugin|code|PATH",
                      help="the chatflow: plugin (dsl/gcite_chatflow.yml, default), code "
                           "(dsl/gcite_chatflow_code.yml) or a DSL file")
    demo.add_argument("--verbose", action="store_true",
                      help="also print the workflow engine's log records (graphon, dify_plugin) on stderr")

    run = commands.add_parser("run", help="run a chatflow DSL on graphon and print the Service API stream")
    run.add_argument("dsl", help="path of the chatflow DSL file (YAML)")
    run.add_argument("--query", required=True, help="the user's question (sys.query)")
    run.add_argument("--inputs", default="{}",
                     help="Start node inputs as a JSON object, e.g. '{\"user_roles\": \"物业经理\"}'")
    run.add_argument("--pretty", action="store_true",
                     help="show the chunk list, the answer as it streams and the cited sources instead of the raw "
                          "stream")
    run.add_argument("--llm-base-url", metavar="URL",
                     help="an OpenAI-compatible endpoint (key in GCITE_LLM_API_KEY); needs --llm-model; "
                          "default: the built-in extractive stand-in")
    run.add_argument("--llm-model", metavar="NAME", help="model name at --llm-base-url (needs --llm-base-url)")
    run.add_argument("--web-search-fails", action="store_true",
                     help="the local search server refuses the key (the web search node fails and the answer falls "
                          "back to the knowledge base)")
    run.add_argument("--verbose", action="store_true",
                     help="print on stderr what the local Knowledge Retrieval admitted (conditions, documents), and the "
                          "workflow engine's log records (graphon, dify_plugin)")

    from gcite.client import add_chat_arguments
    from gcite.local.serve import add_serve_arguments

    add_chat_arguments(commands.add_parser("chat", help="ask a question and show the cited answer as it streams"))
    add_serve_arguments(commands.add_parser("serve", help="serve the chat page and endpoint on 127.0.0.1 "
                                                             "through the real plugin process"))
    commands.add_parser("sync-schema", help="write the models' item schemas into the tools' output_schema")

    pack = commands.add_parser("package", help="validate the plugin and write dist/<name>-<version>.difypkg")
    pack.add_argument("--out", default="dist", help="output directory (default: dist)")
    pack.add_argument("--no-dsl-update", action="store_true", help="do not rewrite the dependency in dsl/*.yml")

    from gcite.build.chatflows import LANGS, MAX_ROLE_SLOTS, ROLE_SLOTS, SEARCHES

    dsl = commands.add_parser("build-dsl", help="generate the chatflow DSL files from gcite/build/chatflows.py and nodes/*.py")
    dsl.add_argument("--lang", choices=LANGS, action="append",
                     help="the language of the prompt, labels and refusal phrase (repeatable; default: all)")
    dsl.add_argument("--slots", type=int, default=ROLE_SLOTS, metavar="N",
                     help=f"role slots of the pre-filter, 1-{MAX_ROLE_SLOTS}: the most roles one user may have "
                          f"(default: {ROLE_SLOTS})")
    dsl.add_argument("--persona", metavar="TEXT",
                     help="the assistant's persona, the first line of the system prompt (default: a neutral one)")
    dsl.add_argument("--search", choices=SEARCHES, default=SEARCHES[0],
                     help="the plugin chatflow's web search: gcite (the plugin's web_search tool, default) or tavily "
                          "(the official Tavily plugin)")
    dsl.add_argument("--out", metavar="DIR",
                     help="output directory (default: dsl/; required with non-default --slots, --persona or --search)")

    pre = commands.add_parser("prefilter", help="print Knowledge Retrieval metadata_filtering_conditions for roles")
    pre.add_argument("--acl-field", default="access_roles", help="document metadata field holding the roles "
                                                                 "(default: access_roles)")
    pre.add_argument("--roles", help="literal conditions for these roles (comma-separated)")
    pre.add_argument("--slots", type=int, help="templated conditions with this many role slots (default: 3)")
    pre.add_argument("--slot-node", help="id of the Code node running nodes/acl_prefilter.py (default: acl_roles)")
    pre.add_argument("--missing-acl", choices=("visible", "hidden"), default="visible",
                     help="whether a document without the field is visible to everyone (default) or hidden")

    from gcite import acl as acl_admin

    acl_admin.add_parser(commands)
    return parser


ENGINE_LOGGERS = ("graphon", "dify_plugin")


@contextlib.contextmanager
def engine_logs(verbose: bool) -> Iterator[None]:
    """While a command runs, the workflow engine's log records (a failed node logs its traceback) go to stderr with
    --verbose, and nowhere without it: the CLI reports a failure as one `error:` line. Only these loggers, restored
    afterwards."""
    import logging

    if verbose:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[%(name)s] %(levelname)s: %(message)s"))
    else:
        handler = logging.NullHandler()  # a handler, so that logging's last resort (stderr) is not used
    saved = []
    for name in ENGINE_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate, list(logger.handlers)))
        logger.propagate = False
        logger.handlers = [handler]
    try:
        yield
    finally:
        for logger, propagate, handlers in saved:
            logger.propagate, logger.handlers = propagate, handlers


def os_error_text(error: OSError) -> str:
    """An OSError in one line: what failed and why, without a traceback."""
    reason = error.strerror or str(error) or type(error).__name__
    return f"{error.filename}: {reason}" if error.filename else reason


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.command not in ("demo", "run", "chat"):
        return dispatch(args)
    with engine_logs(args.verbose):
        return dispatch(args)


def dispatch(args: argparse.Namespace) -> int:
    try:
        if args.command == "demo":
            return demo_command(args)
        if args.command == "run":
            return run_command(args)
        if args.command == "build-dsl":
            return build_dsl_command(args)
        if args.command == "package":
            return package_command(args)
        if args.command == "prefilter":
            return prefilter_command(args)
        if args.command == "chat":
            from gcite.client import chat_command

            return chat_command(args, sys.stdin, sys.stdout, sys.stderr)
        if args.command == "serve":
            from gcite.local.serve import serve_command

            return serve_command(args)
        if args.command == "acl":
            from gcite import acl as acl_admin

            return acl_admin.command(args)
        if args.command == "sync-schema":
            from gcite.build import schema as schema_sync

            changed = schema_sync.sync()
            print("updated: " + ", ".join(changed) if changed else "schemas already in step")
    except CliError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`… | head`): stop quietly, as other command-line tools do
        import os

        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


# --- demo ------------------------------------------------------------------------------------------------

def demo_command(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gcite.cli import demo

    path = demo.DSL_CHOICES.get(args.dsl) or Path(args.dsl)
    load_chatflow(path)
    queries = tuple(q for q in args.query or () if q.strip())
    if args.query and not queries:
        raise CliError("--query: the question is empty")
    roles = demo.DEMO_ROLES if args.roles is None else args.roles
    return 0 if demo.run(sys.stdout, queries or demo.DEMO_TURNS, roles, path) else 1


# --- run -------------------------------------------------------------------------------------------------

def load_chatflow(path) -> str:
    """The text of a chatflow DSL file, or a CliError saying in one line why it is not one."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{path}: not a YAML file (not UTF-8 text)") from None
    except OSError as error:
        raise CliError(f"{path}: cannot read it ({type(error).__name__}: {error.strerror or error})") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or type(error).__name__
        raise CliError(f"{path}: not a YAML file ({problem}{where})") from None
    if not isinstance(document, dict):
        raise CliError(f"{path}: not a chatflow DSL (expected a mapping at the top, found "
                       f"{type(document).__name__ if document is not None else 'an empty file'})")
    mode = (document.get("app") or {}).get("mode") if isinstance(document.get("app"), dict) else None
    if mode is not None and mode != "advanced-chat":
        raise CliError(f"{path}: not a chatflow DSL (app.mode is {mode!r}; a chatflow has 'advanced-chat')")
    workflow = document.get("workflow")
    if not isinstance(workflow, dict) or not isinstance(workflow.get("graph"), dict):
        raise CliError(f"{path}: not a chatflow DSL (it has no workflow.graph)")
    return text


def run_command(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from gcite.local.runner import check_text, parse_inputs

    try:
        inputs = parse_inputs(args.inputs)
        query = check_text(args.query, "--query")
    except ValueError as error:
        raise CliError(str(error)) from None
    if args.llm_base_url and not args.llm_model:
        raise CliError("--llm-base-url needs --llm-model")
    if args.llm_model and not args.llm_base_url:
        raise CliError("--llm-model needs --llm-base-url (the built-in stand-in has no models to choose)")
    if not query.strip():
        raise CliError("--query: the question is empty")
    dsl = load_chatflow(Path(args.dsl))

    from gcite.local.dify_rules import DifyRefusal
    from gcite.cli.pretty import PrettyPrinter
    from gcite.local.runner import run_chatflow, sse
    from gcite.local.services import local_services

    def show_retrieval(record: dict) -> None:
        print(f"[verbose] {record['node_id']}: admitted {len(record['admitted'])} of {record['documents']} documents "
              f"{record['admitted']}; retrieved segments {record['result']}; metadata_filtering_conditions "
              f"{json.dumps(record['metadata_filtering_conditions'], ensure_ascii=False)}", file=sys.stderr)

    printer = PrettyPrinter(sys.stdout) if args.pretty else None
    failed = False
    with local_services(llm_base_url=args.llm_base_url, llm_model=args.llm_model,
                        web_search_fails=args.web_search_fails,
                        retrieval_log=show_retrieval if args.verbose else None) as services:
        try:
            for event in run_chatflow(dsl, query, inputs, services):
                failed |= event["event"] == "error"
                if printer:
                    printer.feed(event)
                else:
                    sys.stdout.write(sse(event))
                    sys.stdout.flush()
        except DifyRefusal as error:
            raise CliError(str(error)) from None
        except Exception as error:  # noqa: BLE001 - a DSL the engine cannot run: one line, never a traceback
            message = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise CliError(f"{args.dsl}: {type(error).__name__}: {message}") from None
    if printer:
        failed |= bool(printer.finish()["errors"])
    return 1 if failed else 0


# --- build-dsl -------------------------------------------------------------------------------------------

def build_dsl_command(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gcite import ROOT
    from gcite.build import chatflows

    langs = tuple(dict.fromkeys(args.lang)) if args.lang else chatflows.LANGS
    defaults = args.slots == chatflows.ROLE_SLOTS and args.persona is None
    if args.out is None and args.search != chatflows.SEARCHES[0]:
        raise CliError("--search needs --out DIR: dsl/ holds the default chatflows (the tests compare them with "
                       "the generator)")
    if args.out is None and not defaults:
        raise CliError("--slots and --persona need --out DIR: dsl/ holds the default chatflows "
                       "(the tests compare them with the generator)")
    out = Path(args.out) if args.out else chatflows.DSL_DIR
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out}: not a directory")
    try:
        changed = chatflows.write(out_dir=out, langs=langs, slots=args.slots, persona=args.persona,
                                  search=args.search)
    except ValueError as error:
        raise CliError(f"--{error}") from None
    except OSError as error:
        raise CliError(f"--out {out}: cannot write the chatflows ({os_error_text(error)})") from None

    def shown(path: Path) -> str:
        return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)

    print("\n".join(f"wrote {shown(p)}" for p in changed) or f"{shown(out)} already in step")
    if not defaults:
        print(f"pre-filter: {args.slots} role slot(s), {chatflows.condition_count(args.slots)} conditions")
    return 0


# --- prefilter -------------------------------------------------------------------------------------------

def prefilter_command(args: argparse.Namespace) -> int:
    import yaml

    from gcite.build import prefilter
    from gcite.build.chatflows import MAX_ROLE_SLOTS, ROLE_SLOTS
    from nodes.acl_prefilter import ROLE_DELIMITERS

    if not args.acl_field.strip():
        raise CliError("--acl-field must not be empty")
    if args.roles is not None:
        if args.slots is not None or args.slot_node is not None:
            raise CliError("--roles prints literal conditions: --slots and --slot-node apply only without it")
        roles = [r.strip() for r in args.roles.split(",") if r.strip()]
        for role in roles:
            if '"' in role or "\\" in role or ROLE_DELIMITERS.search(role):
                raise CliError(f"--roles: role {role!r} contains '\"', '\\' or a delimiter (, ， ; ； | 、): "
                               f"the pre-filter cannot match it exactly")
        conditions = prefilter.conditions_for_roles(args.acl_field, roles, args.missing_acl)
    else:
        slots = ROLE_SLOTS if args.slots is None else args.slots
        if not 1 <= slots <= MAX_ROLE_SLOTS:
            raise CliError(f"--slots must be from 1 to {MAX_ROLE_SLOTS}, got {slots}")
        node = args.slot_node if args.slot_node is not None else "acl_roles"
        if not node.replace("_", "").isalnum() or not node.isascii():
            raise CliError(f"--slot-node: {node!r} is not a node id (letters, digits and _)")
        selectors = [f"{{{{#{node}.role_{n}#}}}}" for n in range(1, slots + 1)]
        conditions = prefilter.templated_conditions(args.acl_field, selectors, args.missing_acl)
    print(yaml.safe_dump({"metadata_filtering_mode": "manual", "metadata_filtering_conditions": conditions},
                         allow_unicode=True, sort_keys=False), end="")
    return 0


# --- package ---------------------------------------------------------------------------------------------

def untracked(root, files: list[str]) -> list[str]:
    """Packaged files that git does not track (none when this is not a git checkout)."""
    import subprocess

    done = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True)
    if done.returncode != 0:
        return []
    tracked = set(done.stdout.decode("utf-8").split("\0"))
    return [f for f in files if f not in tracked]


def package_command(args: argparse.Namespace) -> int:
    from gcite import ROOT
    from gcite.build.package import PackageError, build, source_of, update_dsl_dependencies

    out = ROOT / args.out
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {args.out}: not a directory")
    try:
        built = build(ROOT, out)
    except OSError as error:
        raise CliError(f"cannot build the package ({os_error_text(error)})") from None
    except PackageError as error:
        for problem in error.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"no package written ({len(error.problems)} problem(s))", file=sys.stderr)
        return 1
    for path in untracked(ROOT, [source_of(f) for f in built.files]):
        print(f"warning: {path} is packaged but not tracked by git: the identifier will differ on a clean clone "
              f"(add it to .difyignore, or commit it)", file=sys.stderr)
    print(f"package:    {built.path.relative_to(ROOT) if built.path.is_relative_to(ROOT) else built.path}")
    print(f"identifier: {built.identifier}")
    print(f"size:       {built.size:,} bytes ({built.size / 1024:.1f} KB; {built.uncompressed:,} bytes uncompressed, "
          f"{len(built.files)} files)")
    if not args.no_dsl_update:
        for path in update_dsl_dependencies(ROOT / "dsl", built.identifier):
            print(f"updated dependency in {path.relative_to(ROOT)}")
    return 0
