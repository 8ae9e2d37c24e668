"""`python -m gcite keygen`, `package` (with --sign, --marketplace, --repo, --contact) and `verify`: a package Dify
installs, signed as its plugin daemon checks it, and checked against the Marketplace's rules (gcite.release.signing,
gcite.release.marketplace)."""

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

from gcite.cli.build import untracked
from gcite.cli.common import CliError, os_error_text

DEFAULT_KEY_NAME = "gcite_signing_key"
PUBLIC_KEYS_SETTING = "THIRD_PARTY_SIGNATURE_VERIFICATION_PUBLIC_KEYS"


def add_parsers(commands, pack: argparse.ArgumentParser) -> None:
    """The keygen and verify commands, and package's signing and Marketplace options."""
    keygen = commands.add_parser("keygen", help="make a key pair for signing packages (RSA 4096, the daemon's format)")
    keygen.add_argument(
        "--out",
        metavar="NAME",
        help=f"write NAME.private.pem and NAME.public.pem (default: {DEFAULT_KEY_NAME} in your "
        f"key folder, $XDG_CONFIG_HOME/gcite/keys or ~/.config/gcite/keys, made mode 0700); "
        f"never inside the plugin tree; an existing key is never overwritten",
    )
    verify = commands.add_parser("verify", help="check a package's signature as Dify's plugin daemon does")
    verify.add_argument("package", metavar="PKG", help="the .difypkg file")
    verify.add_argument(
        "--key",
        action="append",
        default=[],
        metavar="PUB.pem",
        help="a public key the daemon trusts besides Dify's official one (repeatable; the daemon's "
        f"{PUBLIC_KEYS_SETTING})",
    )
    pack.add_argument(
        "--sign",
        metavar="KEY.private.pem",
        help="sign the package with this private key (from `python -m gcite keygen`): writes "
        "dist/<name>-<version>.signed.difypkg",
    )
    pack.add_argument(
        "--dsl-out",
        metavar="DIR",
        help="write the chatflows of dsl/ naming this package's identifier into DIR (your DSLs to "
        "import; dsl/ itself is never changed by a signed or --dsl-out build)",
    )
    pack.add_argument(
        "--category",
        choices=("community", "partner"),
        help="the authorised category recorded in the signature (needs --sign; default: community)",
    )
    pack.add_argument(
        "--marketplace",
        action="store_true",
        help="a Marketplace submission: a missing --repo/--contact is an error, not a warning (submitted unsigned)",
    )
    pack.add_argument(
        "--repo",
        metavar="URL",
        help="the project's public repository, written into the packaged "
        "manifest and READMEs (github.com, gitlab.com, …)",
    )
    pack.add_argument("--contact", metavar="EMAIL", help="the maintainers' e-mail, written into the packaged manifest")


def shown(path: Path) -> str:
    from gcite import ROOT

    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_absolute() and path.is_relative_to(ROOT) else str(path)


def key_home(environ=None) -> Path:
    """The per-user folder keys go to without --out: $XDG_CONFIG_HOME/gcite/keys, else ~/.config/gcite/keys."""
    import os

    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CONFIG_HOME") or ""
    base = Path(base) if Path(base).is_absolute() else Path.home() / ".config"  # the spec: a relative one is invalid
    return base / "gcite" / "keys"


def private_folder(folder: Path) -> None:
    """Make `folder` (and its parents) and leave it mode 0700, owned by us; CliError naming what stops it."""
    import os
    import stat

    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode):
            raise CliError(f"{folder}: not a folder (the key folder must be a real folder, not a link)")
        if info.st_uid != os.getuid():
            raise CliError(f"{folder}: owned by another user; give --out in a folder of yours")
        if stat.S_IMODE(info.st_mode) != 0o700:
            os.chmod(folder, 0o700)
    except OSError as error:
        raise CliError(f"{folder}: cannot make the key folder ({os_error_text(error)})") from None


def inside_plugin_tree(path: Path) -> bool:
    from gcite import ROOT

    return path.resolve().is_relative_to(ROOT.resolve())


def keygen_command(args: argparse.Namespace) -> int:
    from gcite.release.signing import SigningError, generate_key_pair

    if args.out is None:
        folder = key_home()
        if inside_plugin_tree(folder):
            raise CliError(
                f"the key folder {folder} is inside the plugin tree (XDG_CONFIG_HOME?): give --out outside it"
            )
        private_folder(folder)
        stem = folder / DEFAULT_KEY_NAME
    else:
        stem = Path(args.out).expanduser()
        if inside_plugin_tree(stem.parent):
            raise CliError(
                f"--out {args.out}: inside the plugin tree; a signing key never goes into the repository "
                f"(leave --out out: keys go to {key_home()})"
            )
    try:
        pair = generate_key_pair(stem)
    except SigningError as error:
        raise CliError(f"--out: {error}") from None
    print(
        f"private key: {pair.private} (mode 0600). Keep it with you, out of this repository and off the Dify "
        f"server; sign with: gcite package --sign {pair.private}"
    )
    print(
        f"public key:  {pair.public}. Give it to Dify's plugin daemon: put it where the daemon can read it and "
        f"list that path in {PUBLIC_KEYS_SETTING}, with THIRD_PARTY_SIGNATURE_VERIFICATION_ENABLED=true "
        f"(docs/install.md)"
    )
    return 0


def verify_command(args: argparse.Namespace) -> int:
    from gcite.release.archive import ArchiveError
    from gcite.release.signing import SigningError, verify_file

    try:
        result = verify_file(args.package, args.key)
    except ArchiveError as error:
        text = str(error)
        raise CliError(text if text.startswith(f"{args.package}:") else f"{args.package}: {text}") from None
    except SigningError as error:
        raise CliError(str(error)) from None
    if not result.verified:
        print(f"not verified: {result.reason}")
        return 1
    when = datetime.fromtimestamp(result.signed_at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    category = result.category or "none recorded (the daemon treats it as langgenius)"
    print(f"verified by {result.key} (signed {when}; category: {category})")
    return 0


def package_command(args: argparse.Namespace) -> int:
    from gcite import ROOT
    from gcite.release.marketplace import publisher_problems, release
    from gcite.release.package import PackageError, source_of, update_dsl_dependencies
    from gcite.release.signing import SigningError, private_key_mode_problem, read_private_key

    if args.category and not args.sign:
        raise CliError("--category is recorded in the signature: it needs --sign KEY.private.pem")
    if args.marketplace and args.sign:
        raise CliError(
            "--marketplace packages are submitted unsigned (the Marketplace signs them with Dify's key): drop --sign"
        )
    problems = publisher_problems(args.repo, args.contact)
    if problems:
        raise CliError(problems[0])
    out = ROOT / args.out
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {args.out}: not a directory")
    dsl_out = Path(args.dsl_out).expanduser() if args.dsl_out else None
    if dsl_out is not None:
        if args.marketplace:
            raise CliError("--dsl-out: a --marketplace package gets its identifier when it is published; drop one")
        if dsl_out.resolve() == (ROOT / "dsl").resolve():
            raise CliError(
                f"--dsl-out {args.dsl_out}: that is dsl/ itself, which names the unsigned build; "
                f"choose a folder of your own"
            )
        try:
            dsl_out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CliError(f"--dsl-out {args.dsl_out}: cannot make the folder ({os_error_text(error)})") from None
    unprotected = private_key_mode_problem(args.sign) if args.sign else None
    if unprotected:
        raise CliError(f"--sign {unprotected}")
    try:
        key = read_private_key(args.sign) if args.sign else None
    except SigningError as error:
        raise CliError(f"--sign {error}") from None
    try:
        built = release(
            ROOT,
            out,
            repo=args.repo,
            contact=args.contact,
            marketplace=args.marketplace,
            private_key=key,
            category=args.category or "community",
        )
    except OSError as error:
        raise CliError(f"cannot build the package ({os_error_text(error)})") from None
    except PackageError as error:
        for problem in error.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"no package written ({len(error.problems)} problem(s))", file=sys.stderr)
        return 1
    for finding in built.findings:
        print(finding, file=sys.stderr)
    if built.path is None:
        count = sum(f.error for f in built.findings)
        print(f"no package written ({count} Marketplace rule(s) broken)", file=sys.stderr)
        return 2
    for path in untracked(ROOT, [source_of(f) for f in built.files]):
        print(
            f"warning: {path} is packaged but not tracked by git: the identifier will differ on a clean clone "
            f"(add it to .difyignore, or commit it)",
            file=sys.stderr,
        )
    print(f"package:    {shown(built.path)}")
    print(f"identifier: {built.identifier}")
    print(
        f"size:       {built.size:,} bytes ({built.size / 1024:.1f} KB; {built.uncompressed:,} bytes uncompressed, "
        f"{len(built.files)} files)"
    )
    if built.signed:
        print(
            f"signed:     with {args.sign} (category {args.category or 'community'}); check it with: "
            f"python -m gcite verify {shown(built.path)} --key PUBLIC.pem"
        )
    if args.dsl_out:
        for path in write_dsl_copies(ROOT / "dsl", dsl_out, built.identifier):
            print(f"chatflow:   {path} (names {built.identifier.split('@')[0]}@…, this package)")
    if args.marketplace:
        print("dsl/ not updated: the Marketplace's listing gets its own identifier when it is published")
    elif built.signed or args.dsl_out:
        # dsl/ is tracked and names the unsigned build of this tree (a test checks it): rewriting it for a signed
        # build would leave the clone dirty and that test failing. The operator's chatflows are made elsewhere.
        print(
            "dsl/ unchanged: it names the unsigned build"
            + (
                ""
                if args.dsl_out
                else f". For chatflows naming this package: gcite package --sign {args.sign} "
                f"--dsl-out DIR, or gcite retrofit YOUR_APP.yml --package {shown(built.path)}"
            )
        )
    elif not args.no_dsl_update:
        for path in update_dsl_dependencies(ROOT / "dsl", built.identifier):
            print(f"updated dependency in {path.relative_to(ROOT)}")
    return 0


def write_dsl_copies(source: Path, out: Path, identifier: str) -> list[Path]:
    """Each dsl/*.yml, its references to this plugin replaced by `identifier`, written into `out`."""
    from gcite.release.package import identifier_pattern

    author, rest = identifier.split("/", 1)
    pattern = identifier_pattern(author, rest.split(":", 1)[0])
    written = []
    for path in sorted(source.glob("*.yml")):
        target = out / path.name
        if target.is_symlink():
            raise CliError(f"--dsl-out {out}: {path.name} is a symlink there; not writing through it")
        try:
            target.write_text(pattern.sub(identifier, path.read_text(encoding="utf-8")), encoding="utf-8")
        except OSError as error:
            raise CliError(f"--dsl-out {out}: cannot write {path.name} ({os_error_text(error)})") from None
        written.append(target)
    return written
