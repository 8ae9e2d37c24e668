"""`python -m gcite retrofit IN.yml`: G-Cite wired into an exported Dify app (the library:
gcite/authoring/retrofit/)."""

import argparse
from pathlib import Path

import yaml

from gcite.authoring.retrofit.graph import printable
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
        "--answer",
        choices=retrofit.ANSWERS,
        default="llm-node",
        help="what the Answer shows: llm-node (default: the LLM's text as it streams, with its raw [C:N] markers), "
        "cited (the plugin's cited_answer tool in the LLM node's place, with its model and system prompt: the "
        "answer streams with clean citations, then its sources; needs --nodes plugin) or clean (the validate "
        "node's answer with clean numbers and its sources, once the LLM has written)",
    )
    parser.add_argument(
        "--enable-context",
        action="store_true",
        help="an LLM whose prompt uses {{#context#}} while its context is switched off (Dify's "
        '"Knowledge Retrieval + Chatbot" template): switch it on, from the nearest Knowledge '
        "Retrieval upstream",
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


MAX_PACKAGE_ENTRIES = 10_000  # docs/security.md
MAX_PACKAGE_BYTES = 64 * 1024 * 1024  # the declared uncompressed size of all entries together


def package_identifier(path: Path) -> str:
    """The identifier the plugin daemon gives the package at `path` (`--package`), or a one-line error: a package
    of another author, name or version than the G-Cite plugin this checkout builds (its manifest.yaml) is refused,
    so are archives past the entry and size bounds."""
    import zipfile
    import zlib

    from gcite import ROOT, load_yaml
    from gcite.release.archive import ArchiveError
    from gcite.release.package import identifier_of_package

    if not path.is_file():
        raise CliError(f"--package {path}: no such file (build one with `python -m gcite package`)")
    not_package = f"--package {path}: not a readable plugin package (a .difypkg zip with a manifest.yaml)"
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
        if len(infos) > MAX_PACKAGE_ENTRIES or sum(i.file_size for i in infos) > MAX_PACKAGE_BYTES:
            raise CliError(
                f"--package {path}: more than {MAX_PACKAGE_ENTRIES:,} entries or "
                f"{MAX_PACKAGE_BYTES // (1024 * 1024)} MiB uncompressed: not a G-Cite package"
            )
        identifier = identifier_of_package(path)
    except CliError:
        raise
    except ArchiveError as error:  # read within gcite.release.archive's bounds; the message names the entry
        raise CliError(f"--package {path}: not a readable plugin package ({error})") from None
    except (
        zipfile.BadZipFile,
        zlib.error,
        KeyError,
        OSError,
        ValueError,
        TypeError,
        EOFError,
        RuntimeError,
        NotImplementedError,
        MemoryError,
        RecursionError,
        yaml.YAMLError,
    ):
        raise CliError(not_package) from None
    manifest = load_yaml((ROOT / "manifest.yaml").read_text(encoding="utf-8"))
    ours = f"{manifest['author']}/{manifest['name']}:{manifest['version']}"
    if identifier.split("@")[0] != ours:
        raise CliError(
            f"--package {path}: the package is {identifier.split('@')[0]}, not the G-Cite plugin this "
            f"checkout builds ({ours}); build it with `python -m gcite package` (and `--sign`), or "
            f"retrofit with the G-Cite checkout of that version"
        )
    return identifier


def default_out(path: Path) -> Path:
    """IN.gcite.yml beside IN (YAML whatever IN was: the export API's JSON form too); IN when already so named."""
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    if stem.endswith(SUFFIX) and path.suffix in (".yml", ".yaml"):
        return path
    return path.with_name(f"{stem}{SUFFIX}.yml")


def write_no_follow(out: Path, text: str) -> None:
    """Writes `text` to `out`, never through a symlink (the result lands where the builder named it, not where a
    link planted there points): a symlink at `out` is an error."""
    import os

    if out.is_symlink():
        raise CliError(
            f"--out {out}: is a symbolic link; the result is never written through one (remove the link "
            f"or name another file)"
        )
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(out, flags, 0o644)
    except OSError as error:
        if error.errno == getattr(__import__("errno"), "ELOOP", None):
            raise CliError(
                f"--out {out}: is a symbolic link; the result is never written through one (remove "
                f"the link or name another file)"
            ) from None
        raise
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)


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
            enable_context=args.enable_context,
            answer=args.answer,
            slots=ROLE_SLOTS if args.slots is None else args.slots,
        )
    except ValueError as error:
        raise CliError(f"--{error}") from None
    try:
        result = retrofit.retrofit(text, options)
    except retrofit.RetrofitRefusal as error:
        raise CliError(f"{source}: {printable(str(error))}") from None
    # names from the DSL reach the terminal with their control and bidi characters escaped
    for line in result.changes:
        print(printable(line))
    for note in result.notes:
        print(f"note: {printable(note)}")
    for warning in result.warnings:
        print(f"warning: {printable(warning)}")
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
    if out.is_symlink():
        raise CliError(
            f"--out {out}: is a symbolic link; the result is never written through one (remove the link "
            f"or name another file)"
        )
    try:  # read only as far as it could equal the result
        current = read_text(out, limit=len(result.text.encode("utf-8"))) if out.exists() else None
    except CliError:
        current = None
    if current == result.text:
        if result.changed or out != source:
            print(f"{out} already holds this result")
        return 0
    try:
        write_no_follow(out, result.text)
    except OSError as error:
        raise CliError(f"--out {out}: cannot write it ({os_error_text(error)})") from None
    print(f"wrote {out}: import it in Dify (Studio → Import DSL file)")
    return 0
