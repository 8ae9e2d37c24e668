"""`python -m gcite demo` and `python -m gcite run`: a chatflow on the local runner, in the terminal."""

import argparse
import sys

from gcite.cli.common import CliError, llm_options_problem, load_knowledge_base, read_chatflow_file


def demo_command(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from gcite.cli import demo

    path = demo.DSL_CHOICES.get(args.dsl) or Path(args.dsl)
    text = read_chatflow_file(path)  # read once, no further than its cap; the run takes this text
    queries = tuple(q for q in args.query or () if q.strip())
    if args.query and not queries:
        raise CliError("--query: the question is empty")
    if args.lang and queries:
        raise CliError("--lang chooses the language of the sample questions; with --query there are none to choose")
    roles = demo.DEMO_ROLES if args.roles is None else args.roles
    check_llm_options(args)
    knowledge_base = load_knowledge_base(Path(args.knowledge_base) if args.knowledge_base else None)
    if not queries:  # the sample questions, in the language the user reads
        try:
            lang, why = demo.demo_language(os.environ, args.lang)
        except demo.LanguageError as error:
            raise CliError(str(error)) from None
        print(demo.language_note(lang, why), flush=True)
        queries = demo.SAMPLE_TURNS[lang]
    return (
        0
        if demo.run(
            sys.stdout,
            queries,
            roles,
            path,
            args.llm_base_url,
            args.llm_model,
            knowledge_base,
            args.knowledge_base,
            dsl_text=text,
        )
        else 1
    )


def check_llm_options(args: argparse.Namespace) -> None:
    problem = llm_options_problem(args)
    if problem:
        raise CliError(problem)


def run_command(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from gcite.local.dify_rules import check_text
    from gcite.local.runner import parse_inputs

    try:
        inputs = parse_inputs(args.inputs)
        query = check_text(args.query, "--query")
    except ValueError as error:
        raise CliError(str(error)) from None
    check_llm_options(args)
    if not query.strip():
        raise CliError("--query: the question is empty")
    dsl = read_chatflow_file(Path(args.dsl))
    knowledge_base = load_knowledge_base(Path(args.knowledge_base) if args.knowledge_base else None)

    from citations.answer_layout import machine_inputs
    from gcite.cli.pretty import PrettyPrinter
    from gcite.local.dify_rules import DifyRefusal
    from gcite.local.runner import run_chatflow
    from gcite.local.service_api import dify_sse
    from gcite.local.services import local_services

    def show_retrieval(record: dict) -> None:
        print(
            f"[verbose] {record['node_id']}: admitted {len(record['admitted'])} of {record['documents']} documents "
            f"{record['admitted']}; retrieved segments {record['result']}; metadata_filtering_conditions "
            f"{json.dumps(record['metadata_filtering_conditions'], ensure_ascii=False)}",
            file=sys.stderr,
        )

    printer = PrettyPrinter(sys.stdout) if args.pretty else None
    failed = False
    overrides = {} if knowledge_base is None else {"knowledge_base": knowledge_base}
    with local_services(
        llm_base_url=args.llm_base_url,
        llm_model=args.llm_model,
        web_search_fails=args.web_search_fails,
        retrieval_log=show_retrieval if args.verbose else None,
        **overrides,
    ) as services:
        try:
            # --pretty reads the answer as G-Cite's readers do: a cited_answer node streams markers for it (an
            # explicit --input citation_style=… wins); the raw stream is what Dify's chat would get
            run_inputs = {**machine_inputs(), **inputs} if printer else inputs
            for event in run_chatflow(dsl, query, run_inputs, services):
                failed |= event["event"] == "error" or (  # Dify's failed run ends at workflow_finished
                    event["event"] == "workflow_finished" and (event.get("data") or {}).get("status") == "failed"
                )
                if printer:
                    printer.feed(event)
                else:
                    sys.stdout.write(dify_sse(event))
                    sys.stdout.flush()
        except DifyRefusal as error:
            raise CliError(str(error)) from None
        except Exception as error:  # noqa: BLE001 - a DSL the engine cannot run: one line, never a traceback
            from gcite.local.dify_rules import validation_text

            raise CliError(f"{args.dsl}: {type(error).__name__}: {validation_text(error)}") from None
    if printer:
        failed |= bool(printer.finish()["errors"])
    return 1 if failed else 0
