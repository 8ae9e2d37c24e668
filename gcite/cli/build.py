"""`python -m gcite build-dsl`, `prefilter` and `sync-schema`: what is generated (`package` is in gcite/cli/sign.py)."""

import argparse

from gcite import unicode_problem
from gcite.cli.common import CliError, os_error_text


def build_dsl_command(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gcite import ROOT
    from gcite.authoring import chatflows
    from gcite.authoring.bundle import write_nodes
    from gcite.authoring.variants import condition_count

    langs = tuple(dict.fromkeys(args.lang)) if args.lang else chatflows.LANGS
    defaults = args.slots == chatflows.ROLE_SLOTS and args.persona is None
    if args.out is None and (args.search != chatflows.SEARCHES[0] or args.answer is not None):
        option = "--search" if args.search != chatflows.SEARCHES[0] else "--answer"
        raise CliError(
            f"{option} needs --out DIR: dsl/ holds the default chatflows (the tests compare them with the generator)"
        )
    if args.out is None and not defaults:
        raise CliError(
            "--slots and --persona need --out DIR: dsl/ holds the default chatflows "
            "(the tests compare them with the generator)"
        )
    out = Path(args.out) if args.out else chatflows.DSL_DIR
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out}: not a directory")
    try:
        changed = write_nodes() if args.out is None else []  # nodes/ is made with the default dsl/
        changed += chatflows.write(
            out_dir=out, langs=langs, slots=args.slots, persona=args.persona, search=args.search, answer=args.answer
        )
    except ValueError as error:
        raise CliError(f"--{error}") from None
    except OSError as error:
        raise CliError(f"--out {out}: cannot write the chatflows ({os_error_text(error)})") from None

    def shown(path: Path) -> str:
        return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)

    print("\n".join(f"wrote {shown(p)}" for p in changed) or f"{shown(out)} already in step")
    if not defaults:
        print(f"pre-filter: {args.slots} role slot(s), {condition_count(args.slots)} conditions")
    return 0


def prefilter_command(args: argparse.Namespace) -> int:
    import yaml

    from citations.acl_prefilter import ROLE_DELIMITERS
    from gcite.authoring import prefilter
    from gcite.authoring.variants import MAX_ROLE_SLOTS, ROLE_SLOTS

    if not args.acl_field.strip():
        raise CliError("--acl-field must not be empty")
    for value, where in (
        (args.acl_field, "--acl-field"),
        (args.roles or "", "--roles"),
        (args.slot_node or "", "--slot-node"),
    ):
        problem = unicode_problem(value, where)  # Dify could not store such text
        if problem:
            raise CliError(problem)
    if args.roles is not None:
        if args.slots is not None or args.slot_node is not None:
            raise CliError("--roles prints literal conditions: --slots and --slot-node apply only without it")
        roles = [r.strip() for r in args.roles.split(",") if r.strip()]
        for role in roles:
            if '"' in role or "\\" in role or ROLE_DELIMITERS.search(role):
                raise CliError(
                    f"--roles: role {role!r} contains '\"', '\\' or a delimiter (, ， ; ； | 、): "
                    f"the pre-filter cannot match it exactly"
                )
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
    print(
        yaml.safe_dump(
            {"metadata_filtering_mode": "manual", "metadata_filtering_conditions": conditions},
            allow_unicode=True,
            sort_keys=False,
        ),
        end="",
    )
    return 0


def untracked(root, files: list[str]) -> list[str]:
    """Packaged files that git does not track (none when this is not a git checkout)."""
    import subprocess

    done = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True)
    if done.returncode != 0:
        return []
    tracked = set(done.stdout.decode("utf-8").split("\0"))
    return [f for f in files if f not in tracked]
