"""python -m gcite COMMAND …"""

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gcite", description="G-Cite command line")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="run the G-Cite chatflow on the built-in building-assistant data")
    run = commands.add_parser("run", help="run a chatflow DSL on graphon and print the Service API stream")
    run.add_argument("dsl", help="path of the DSL file")
    run.add_argument("--query", required=True, help="the user's question (sys.query)")
    run.add_argument("--inputs", default="{}", help="Start node inputs as a JSON object, e.g. '{\"user_roles\": \"物业经理\"}'")
    run.add_argument("--llm-base-url", help="an OpenAI-compatible endpoint (key in GCITE_LLM_API_KEY); "
                                            "default: the built-in extractive stand-in")
    run.add_argument("--llm-model", help="model name for --llm-base-url")
    run.add_argument("--web-search-fails", action="store_true", help="make the sample web search fail")
    from gcite.client import add_chat_arguments
    from gcite.serve import add_serve_arguments

    add_chat_arguments(commands.add_parser("chat", help="ask a question and show the cited answer as it streams"))
    add_serve_arguments(commands.add_parser("serve", help="serve the chat page and endpoint on 127.0.0.1 "
                                                             "through the real plugin process"))
    commands.add_parser("sync-schema", help="write the models' item schemas into the tools' output_schema")
    pack = commands.add_parser("package", help="validate the plugin and write dist/<name>-<version>.difypkg")
    pack.add_argument("--out", default="dist", help="output directory (default: dist)")
    pack.add_argument("--no-dsl-update", action="store_true", help="do not rewrite the dependency in dsl/*.yml")
    commands.add_parser("build-dsl", help="regenerate dsl/*.yml from gcite/dsl_build.py and nodes/*.py")
    pre = commands.add_parser("prefilter", help="print Knowledge Retrieval metadata_filtering_conditions for roles")
    pre.add_argument("--acl-field", default="access_roles", help="document metadata field holding the roles")
    pre.add_argument("--roles", help="literal conditions for these roles (comma-separated)")
    pre.add_argument("--slots", type=int, default=3, help="templated conditions with this many role slots")
    pre.add_argument("--slot-node", default="acl_roles", help="id of the Code node running nodes/acl_prefilter.py")
    pre.add_argument("--missing-acl", choices=("visible", "hidden"), default="visible")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from gcite import demo

        demo.run(sys.stdout)
    elif args.command == "run":
        return run_command(args)
    elif args.command == "chat":
        from gcite.client import chat_command

        return chat_command(args, sys.stdin, sys.stdout, sys.stderr)
    elif args.command == "serve":
        from gcite.serve import serve_command

        return serve_command(args)
    elif args.command == "build-dsl":
        from gcite import ROOT, dsl_build

        changed = dsl_build.write()
        print("\n".join(f"wrote {p.relative_to(ROOT)}" for p in changed) or "dsl/ already in step")
    elif args.command == "package":
        return package_command(args)
    elif args.command == "prefilter":
        import yaml

        from gcite import prefilter

        if args.roles is not None:
            roles = [r.strip() for r in args.roles.split(",") if r.strip()]
            conditions = prefilter.conditions_for_roles(args.acl_field, roles, args.missing_acl)
        else:
            selectors = [f"{{{{#{args.slot_node}.role_{n}#}}}}" for n in range(1, args.slots + 1)]
            conditions = prefilter.templated_conditions(args.acl_field, selectors, args.missing_acl)
        print(yaml.safe_dump({"metadata_filtering_mode": "manual", "metadata_filtering_conditions": conditions},
                             allow_unicode=True, sort_keys=False), end="")
    elif args.command == "sync-schema":
        from gcite import schema_sync

        changed = schema_sync.sync()
        print("updated: " + ", ".join(changed) if changed else "schemas already in step")
    return 0


def run_command(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from graphon.dsl.errors import DslError

    from gcite.demo import SAMPLE_SEARCH_KEY
    from gcite.llm import ExtractiveModel, OpenAICompatibleModel
    from gcite.runner import Services, run_chatflow, sse
    from gcite.web_search import SampleSearchHttpClient

    try:
        inputs = json.loads(args.inputs)
    except ValueError as error:
        print(f"error: --inputs is not JSON: {error}", file=sys.stderr)
        return 2
    if not isinstance(inputs, dict):
        print("error: --inputs must be a JSON object", file=sys.stderr)
        return 2
    if args.llm_base_url and not args.llm_model:
        print("error: --llm-base-url needs --llm-model", file=sys.stderr)
        return 2
    llm = OpenAICompatibleModel(args.llm_base_url, args.llm_model) if args.llm_base_url else ExtractiveModel()
    services = Services(llm=llm, search_http=SampleSearchHttpClient(fail=args.web_search_fails),
                        tavily_fail=args.web_search_fails,
                        tool_credentials={"langgenius/tavily:": {"tavily_api_key": SAMPLE_SEARCH_KEY}})
    failed = False
    try:
        dsl = Path(args.dsl).read_text(encoding="utf-8")
        for event in run_chatflow(dsl, args.query, inputs, services):
            failed |= event["event"] == "error"
            sys.stdout.write(sse(event))
            sys.stdout.flush()
    except (OSError, ValueError, DslError) as error:  # unreadable file, or not a runnable chatflow DSL
        print(f"error: {args.dsl}: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    finally:
        services.close()
    return 1 if failed else 0


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
    from gcite.package import PackageError, build, update_dsl_dependencies

    try:
        built = build(ROOT, ROOT / args.out)
    except PackageError as error:
        for problem in error.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"no package written ({len(error.problems)} problem(s))", file=sys.stderr)
        return 1
    for path in untracked(ROOT, built.files):
        print(f"warning: {path} is packaged but not tracked by git: the identifier will differ on a clean clone "
              f"(add it to .difyignore, or commit it)", file=sys.stderr)
    print(f"package:    {built.path.relative_to(ROOT)}")
    print(f"identifier: {built.identifier}")
    print(f"size:       {built.size:,} bytes ({built.size / 1024:.1f} KB; {built.uncompressed:,} bytes uncompressed, "
          f"{len(built.files)} files)")
    if not args.no_dsl_update:
        for path in update_dsl_dependencies(ROOT / "dsl", built.identifier):
            print(f"updated dependency in {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
