"""`python -m gcite retrofit IN.yml`: G-Cite wired into an exported Dify app (the library:
gcite/authoring/retrofit/)."""

import argparse
from pathlib import Path

import yaml

from gcite.cli.common import CliError, os_error_text, read_text

SUFFIX = ".gcite"


def add_parser(commands: argparse._SubParsersAction) -> None:
    from gcite.authoring import retrofit

    parser = commands.add_parser(
        "retrofit",
        help="add G-Cite citations to an exported Dify chatflow or workflow (DSL YAML)",
        description='Reads an app DSL exported from Dify (any 1.x DSL version, or the export API\'s {"data": …} '
        "form) and wires G-Cite in for every LLM node whose context comes from Knowledge Retrieval: a "
        "merge node, the context rewired, citation rules added to the system prompt, a validate node "
        "after the LLM. One line per change; a second run changes nothing. Exit status 2 with one "
        "line when the file is not a Dify app DSL, has no retrieval → LLM context path, or has a shape "
        "that cannot be rewired safely. Docs: docs/retrofit.md.",
    )
    parser.add_argument("dsl", metavar="IN.yml", help="the exported app DSL")
    parser.add_argument(
        "--out",
        metavar="OUT.yml",
        help=f"where to write the result (default: IN{SUFFIX}.yml beside IN; IN itself when its name "
        f"already ends in {SUFFIX}.yml)",
    )
    parser.add_argument(
        "--nodes",
        choices=retrofit.NODES,
        default=retrofit.NODES[0],
        help="G-Cite's nodes: plugin (the G-Cite plugin's tools, default) or code (Code nodes, no plugin needed)",
    )
    parser.add_argument(
        "--web",
        choices=retrofit.WEBS,
        default=retrofit.WEBS[0],
        help="web search: none (default) or gcite (the plugin's web_search tool, beside the "
        "retrieval, into the merge node)",
    )
    parser.add_argument(
        "--acl",
        metavar="FIELD",
        help="pre-filter by role: the document metadata field holding the roles (adds the hidden "
        "user_roles input, the retrieval conditions and the filter node)",
    )
    parser.add_argument(
        "--slots",
        type=int,
        metavar="N",
        help="with --acl: role slots of the pre-filter, the most roles one user may have (default: 3)",
    )
    parser.add_argument(
        "--memory", action="store_true", help="multi-turn memory without citation markers (chatflows only)"
    )
    parser.add_argument(
        "--sources-in-answer",
        action="store_true",
        help="each Answer node showing the LLM's text then lists the cited sources, as in G-Cite's own "
        "chatflows (a workflow: each End node after the LLM outputs the list as references)",
    )
    parser.add_argument(
        "--package",
        metavar="FILE.difypkg",
        help="the G-Cite package you install (a signed build, say): the plugin tools and the "
        "dependency name its identifier (default: the unsigned package this checkout builds)",
    )
    parser.add_argument(
        "--lang",
        choices=retrofit.LANGS,
        default="auto",
        help="language of the added rules and labels (default: auto, the prompt's own)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the changes and write nothing")


def package_identifier(path: Path) -> str:
    """The identifier the plugin daemon gives the package at `path` (`--package`), or a one-line error."""
    import zipfile

    from gcite.authoring.retrofit import GCITE_PLUGIN
    from gcite.release.archive import ArchiveError
    from gcite.release.package import identifier_of_package

    if not path.is_file():
        raise CliError(f"--package {path}: no such file (build one with `python -m gcite package`)")
    try:
        identifier = identifier_of_package(path)
    except ArchiveError as error:  # read within gcite.release.archive's bounds; the message names the entry
        raise CliError(f"--package {path}: not a readable plugin package ({error})") from None
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, TypeError, yaml.YAMLError):
        raise CliError(f"--package {path}: not a plugin package (a .difypkg zip with a manifest.yaml)") from None
    if not identifier.startswith(GCITE_PLUGIN):
        raise CliError(f"--package {path}: the package is {identifier.split('@')[0]}, not the G-Cite plugin")
    return identifier


def default_out(path: Path) -> Path:
    """IN.gcite.yml beside IN (YAML whatever IN was: the export API's JSON form too); IN when already so named."""
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    if stem.endswith(SUFFIX) and path.suffix in (".yml", ".yaml"):
        return path
    return path.with_name(f"{stem}{SUFFIX}.yml")


def command(args: argparse.Namespace) -> int:
    from gcite.authoring import retrofit
    from gcite.authoring.chatflows import ROLE_SLOTS

    if args.slots is not None and args.acl is None:
        raise CliError("--slots needs --acl FIELD: the slots are the pre-filter's")
    source = Path(args.dsl)
    text = read_text(source, "a Dify app DSL")
    identifier = package_identifier(Path(args.package)) if args.package else None
    try:
        options = retrofit.Options(
            nodes=args.nodes,
            web=args.web,
            acl=args.acl,
            memory=args.memory,
            lang=args.lang,
            sources_in_answer=args.sources_in_answer,
            identifier=identifier,
            slots=ROLE_SLOTS if args.slots is None else args.slots,
        )
    except ValueError as error:
        raise CliError(f"--{error}") from None
    try:
        result = retrofit.retrofit(text, options)
    except retrofit.RetrofitRefusal as error:
        raise CliError(f"{source}: {error}") from None
    for line in result.changes:
        print(line)
    for note in result.notes:
        print(f"note: {note}")
    out = Path(args.out) if args.out else default_out(source)
    if args.out and not args.dry_run and out.resolve() == source.resolve() and default_out(source) != source:
        # the export stays as Dify wrote it: --acl, say, must later run on it (only IN.gcite.yml is rewritten)
        raise CliError(
            f"--out {out}: that is the input; the exported DSL is never overwritten (write to another "
            f"file, or name it *.gcite.yml)"
        )
    if not result.changed:
        print(f"no change: {source} already has G-Cite wired in for every retrieval → LLM context path")
    if args.dry_run:
        print(f"dry run: {len(result.changes)} change(s), nothing written")
        return 0
    if not result.changed and out == source:
        return 0
    try:
        current = out.read_text(encoding="utf-8") if out.exists() else None
    except (OSError, UnicodeDecodeError):
        current = None
    if current == result.text:
        if result.changed or out != source:
            print(f"{out} already holds this result")
        return 0
    try:
        out.write_text(result.text, encoding="utf-8")
    except OSError as error:
        raise CliError(f"--out {out}: cannot write it ({os_error_text(error)})") from None
    print(f"wrote {out}: import it in Dify (Studio → Import DSL file)")
    return 0
