"""python -m gcite COMMAND …

One `add_*` function per command (or group of commands) adds its subparser, listed in PARSERS; `build_parser` calls
only the one of the command being run. Each command's `*_command(args) -> int` lives in the module of its group
(`run`, `build`, `chat`, `serve`, `sign`, `acl`, `retrofit`), imported when it runs. A bad option or input is a
one-line `error: …` on stderr and exit status 2; a failed run is status 1; never a traceback.
"""

import argparse
import sys

# random bytes in a `gcite secret`: the endpoint takes no shorter token_secret (MIN_SECRET_BYTES in
# endpoints/settings.py, RFC 7518 §3.2); the URL-safe text of 32 bytes is 43 characters
SECRET_BYTES = 32


def version_text() -> str:
    import yaml

    from gcite import ROOT

    try:
        manifest = yaml.safe_load((ROOT / "manifest.yaml").read_text(encoding="utf-8"))
        return f"gcite {manifest['version']} (plugin {manifest['author']}/{manifest['name']})"
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return "gcite (version unknown: manifest.yaml unreadable)"


class VersionAction(argparse.Action):
    """`--version`: reads the version from manifest.yaml only when asked (argparse's own action takes the text when the
    parser is built, which every command would pay for)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            sys.stdout.write(version_text() + "\n")
            sys.stdout.flush()
        except OSError:  # a closed pipe or a full disk: nothing to tell, as argparse's own action does
            pass
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or, given one of COMMANDS, of that command alone (given anything else, such as
    "--version", of none): each command's options come from the module that runs it, and a command should not wait
    for the others' imports (`gcite secret` took 0.16 s, importing the HTTP client, the local Dify and the retrofit
    passes; now 0.04 s)."""
    parser = argparse.ArgumentParser(prog="python -m gcite", description="G-Cite command line")
    parser.add_argument("--version", action=VersionAction, help="print the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for names, add in PARSERS:
        if command is None or command in names:
            add(commands)
    return parser


def add_demo(commands) -> None:
    from gcite.cli.common import add_knowledge_base_argument, add_llm_arguments

    demo = commands.add_parser("demo", help="run the G-Cite chatflow on the built-in building-assistant data")
    demo.add_argument(
        "--query",
        action="append",
        metavar="TEXT",
        help="a question (repeat for more turns of one conversation; default: two sample questions)",
    )
    demo.add_argument(
        "--roles",
        metavar="ROLES",
        help="the user's roles, comma-separated (default: 物业经理; '' for a user with no role)",
    )
    demo.add_argument(
        "--dsl",
        default="plugin",
        metavar="plugin|code|PATH",
        help="the chatflow: plugin (dsl/gcite_chatflow.yml, default), code (dsl/gcite_chatflow_code.yml) or a DSL file",
    )
    demo.add_argument(
        "--lang",
        choices=("en", "zh"),
        help="the language of the sample questions (default: $DEMO_LANG, else your locale: Chinese for "
        "zh_*, else English)",
    )
    add_knowledge_base_argument(demo)
    add_llm_arguments(demo)
    demo.add_argument(
        "--verbose",
        action="store_true",
        help="also print the workflow engine's log records (graphon, dify_plugin) on stderr",
    )


def add_run(commands) -> None:
    from gcite.cli.common import add_knowledge_base_argument, add_llm_arguments

    run = commands.add_parser("run", help="run a chatflow DSL on graphon and print the Service API stream")
    run.add_argument("dsl", help="path of the chatflow DSL file (YAML)")
    run.add_argument("--query", required=True, help="the user's question (sys.query)")
    run.add_argument(
        "--inputs", default="{}", help='Start node inputs as a JSON object, e.g. \'{"user_roles": "物业经理"}\''
    )
    run.add_argument(
        "--pretty",
        action="store_true",
        help="show the chunk list, the answer as it streams and the cited sources instead of the raw stream",
    )
    add_knowledge_base_argument(run)
    add_llm_arguments(run)
    run.add_argument(
        "--web-search-fails",
        action="store_true",
        help="the local search server refuses the key (the web search node fails and the answer falls "
        "back to the knowledge base)",
    )
    run.add_argument(
        "--verbose",
        action="store_true",
        help="print on stderr what the local Knowledge Retrieval admitted (conditions, documents), and the "
        "workflow engine's log records (graphon, dify_plugin)",
    )


def add_chat(commands) -> None:
    from gcite.cli.chat import add_chat_arguments

    add_chat_arguments(commands.add_parser("chat", help="ask a question and show the cited answer as it streams"))


def add_serve(commands) -> None:
    from gcite.cli.serve import add_serve_arguments

    add_serve_arguments(
        commands.add_parser(
            "serve", help="serve the chat page and endpoint on 127.0.0.1 through the real plugin process"
        )
    )


def add_sync_schema(commands) -> None:
    commands.add_parser("sync-schema", help="write the models' item schemas into the tools' output_schema")


def add_secret(commands) -> None:
    commands.add_parser(
        "secret",
        help="print a new random token signing secret (32 random bytes, URL-safe text) "
        "for the endpoint's token_secret setting; printed once, stored nowhere",
    )


def add_package(commands) -> None:
    """package, and keygen and verify (gcite.cli.sign adds them with package's signing options)."""
    pack = commands.add_parser("package", help="validate the plugin and write dist/<name>-<version>.difypkg")
    pack.add_argument("--out", default="dist", help="output directory (default: dist)")
    pack.add_argument("--no-dsl-update", action="store_true", help="do not rewrite the dependency in dsl/*.yml")
    from gcite.cli import sign as sign_cli

    sign_cli.add_parsers(commands, pack)


def add_build_dsl(commands) -> None:
    from citations.answer_layout import ANSWERS
    from gcite.authoring.variants import LANGS, MAX_ROLE_SLOTS, ROLE_SLOTS, SEARCHES

    dsl = commands.add_parser(
        "build-dsl", help="generate the chatflow DSL files from gcite/authoring/chatflows.py and nodes/*.py"
    )
    dsl.add_argument(
        "--lang",
        choices=LANGS,
        action="append",
        help="the language of the prompt, labels and refusal phrase (repeatable; default: all)",
    )
    dsl.add_argument(
        "--slots",
        type=int,
        default=ROLE_SLOTS,
        metavar="N",
        help=f"role slots of the pre-filter, 1-{MAX_ROLE_SLOTS}: the most roles one user may have "
        f"(default: {ROLE_SLOTS})",
    )
    dsl.add_argument(
        "--persona",
        metavar="TEXT",
        help="the assistant's persona, the first line of the system prompt (default: a neutral one)",
    )
    dsl.add_argument(
        "--search",
        choices=SEARCHES,
        default=SEARCHES[0],
        help="the plugin chatflow's web search: gcite (the plugin's web_search tool, default) or tavily "
        "(the official Tavily plugin)",
    )
    dsl.add_argument(
        "--answer",
        choices=ANSWERS,
        help="what the Answer shows: cited (the plugin chatflow's default: the cited_answer tool streams "
        "clean citations), llm-node (the Code-node chatflow's default: the LLM node streams raw "
        "markers, then the validator's list) or clean (wait, then the validator's clean numbers); "
        "cited applies to the plugin chatflow only (docs/chatflows.md)",
    )
    dsl.add_argument(
        "--out",
        metavar="DIR",
        help="output directory (default: dsl/; required with non-default --slots, --persona, --search or --answer)",
    )


def add_prefilter(commands) -> None:
    pre = commands.add_parser("prefilter", help="print Knowledge Retrieval metadata_filtering_conditions for roles")
    pre.add_argument(
        "--acl-field", default="access_roles", help="document metadata field holding the roles (default: access_roles)"
    )
    pre.add_argument("--roles", help="literal conditions for these roles (comma-separated)")
    pre.add_argument("--slots", type=int, help="templated conditions with this many role slots (default: 3)")
    pre.add_argument("--slot-node", help="id of the Code node running nodes/acl_prefilter.py (default: acl_roles)")
    pre.add_argument(
        "--missing-acl",
        choices=("visible", "hidden"),
        default="visible",
        help="whether a document without the field is visible to everyone (default) or hidden",
    )


def add_acl(commands) -> None:
    from gcite.cli import acl as acl_cli

    acl_cli.add_parser(commands)


def add_retrofit(commands) -> None:
    from gcite.cli import retrofit as retrofit_cli

    retrofit_cli.add_parser(commands)


# (the commands a function adds, the function), in the order `--help` lists them
PARSERS = (
    (("demo",), add_demo),
    (("run",), add_run),
    (("chat",), add_chat),
    (("serve",), add_serve),
    (("sync-schema",), add_sync_schema),
    (("secret",), add_secret),
    (("package", "keygen", "verify"), add_package),
    (("build-dsl",), add_build_dsl),
    (("prefilter",), add_prefilter),
    (("acl",), add_acl),
    (("retrofit",), add_retrofit),
)
COMMANDS = frozenset(name for names, _ in PARSERS for name in names)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # the command is the first argument (the parser's own options, --help and --version, take no value); --version
    # needs no command's parser, and any other first argument gets them all: its help or error names every command
    parser = build_parser(argv[0] if argv and (argv[0] in COMMANDS or argv[0] == "--version") else None)
    if not argv:
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(argv)
    if args.command not in ("demo", "run", "chat"):
        return dispatch(args)
    from gcite.cli.common import engine_logs

    with engine_logs(args.verbose):
        return dispatch(args)


WRITES_THE_TREE = ("package", "build-dsl", "sync-schema")


def dispatch(args: argparse.Namespace) -> int:
    from gcite.cli.errors import CliError

    try:
        from gcite import INSTALLED

        if INSTALLED and args.command in WRITES_THE_TREE:
            raise CliError(
                f"{args.command} builds from and writes into a clone of the plugin's repository: run it "
                f"there, with the command installed from it (make venv, or pip install -e .)"
            )
        if args.command in ("demo", "run"):
            from gcite.cli.run import demo_command, run_command

            return (demo_command if args.command == "demo" else run_command)(args)
        if args.command == "build-dsl":
            from gcite.cli.build import build_dsl_command

            return build_dsl_command(args)
        if args.command in ("package", "keygen", "verify"):
            from gcite.cli import sign as sign_cli

            return {
                "package": sign_cli.package_command,
                "keygen": sign_cli.keygen_command,
                "verify": sign_cli.verify_command,
            }[args.command](args)
        if args.command == "prefilter":
            from gcite.cli.build import prefilter_command

            return prefilter_command(args)
        if args.command == "chat":
            from gcite.cli.chat import chat_command

            return chat_command(args, sys.stdin, sys.stdout, sys.stderr)
        if args.command == "serve":
            from gcite.cli.serve import serve_command

            return serve_command(args)
        if args.command == "acl":
            from gcite.cli import acl as acl_cli

            return acl_cli.command(args)
        if args.command == "retrofit":
            from gcite.cli import retrofit as retrofit_cli

            return retrofit_cli.command(args)
        if args.command == "secret":
            import secrets

            print(secrets.token_urlsafe(SECRET_BYTES))
            return 0
        if args.command == "sync-schema":
            from gcite.authoring import schema as schema_sync

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
