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
    keygen.add_argument("--out", default=DEFAULT_KEY_NAME, metavar="NAME",
                        help=f"write NAME.private.pem and NAME.public.pem (default: {DEFAULT_KEY_NAME}); "
                             f"an existing key is never overwritten")
    verify = commands.add_parser("verify", help="check a package's signature as Dify's plugin daemon does")
    verify.add_argument("package", metavar="PKG", help="the .difypkg file")
    verify.add_argument("--key", action="append", default=[], metavar="PUB.pem",
                        help="a public key the daemon trusts besides Dify's official one (repeatable; the daemon's "
                             f"{PUBLIC_KEYS_SETTING})")
    pack.add_argument("--sign", metavar="KEY.private.pem",
                      help="sign the package with this private key (from `python -m gcite keygen`): writes "
                           "dist/<name>-<version>.signed.difypkg")
    pack.add_argument("--category", choices=("community", "partner"),
                      help="the authorised category recorded in the signature (needs --sign; default: community)")
    pack.add_argument("--marketplace", action="store_true",
                      help="a Marketplace submission: a missing --repo/--contact is an error, not a warning "
                           "(submitted unsigned)")
    pack.add_argument("--repo", metavar="URL", help="the project's public repository, written into the packaged "
                                                    "manifest and READMEs (github.com, gitlab.com, …)")
    pack.add_argument("--contact", metavar="EMAIL", help="the maintainers' e-mail, written into the packaged manifest")


def shown(path: Path) -> str:
    from gcite import ROOT

    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_absolute() and path.is_relative_to(ROOT) else str(path)


def keygen_command(args: argparse.Namespace) -> int:
    from gcite.release.signing import SigningError, generate_key_pair

    try:
        pair = generate_key_pair(args.out)
    except SigningError as error:
        raise CliError(f"--out: {error}") from None
    print(f"private key: {pair.private} (mode 0600). Keep it with you, out of this repository and off the Dify "
          f"server; sign with: python -m gcite package --sign {pair.private}")
    print(f"public key:  {pair.public}. Give it to Dify's plugin daemon: put it where the daemon can read it and "
          f"list that path in {PUBLIC_KEYS_SETTING}, with THIRD_PARTY_SIGNATURE_VERIFICATION_ENABLED=true "
          f"(docs/install.md)")
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
        raise CliError("--marketplace packages are submitted unsigned (the Marketplace signs them with Dify's key): "
                       "drop --sign")
    problems = publisher_problems(args.repo, args.contact)
    if problems:
        raise CliError(problems[0])
    out = ROOT / args.out
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {args.out}: not a directory")
    unprotected = private_key_mode_problem(args.sign) if args.sign else None
    if unprotected:
        raise CliError(f"--sign {unprotected}")
    try:
        key = read_private_key(args.sign) if args.sign else None
    except SigningError as error:
        raise CliError(f"--sign {error}") from None
    try:
        built = release(ROOT, out, repo=args.repo, contact=args.contact, marketplace=args.marketplace,
                        private_key=key, category=args.category or "community")
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
        print(f"warning: {path} is packaged but not tracked by git: the identifier will differ on a clean clone "
              f"(add it to .difyignore, or commit it)", file=sys.stderr)
    print(f"package:    {shown(built.path)}")
    print(f"identifier: {built.identifier}")
    print(f"size:       {built.size:,} bytes ({built.size / 1024:.1f} KB; {built.uncompressed:,} bytes uncompressed, "
          f"{len(built.files)} files)")
    if built.signed:
        print(f"signed:     with {args.sign} (category {args.category or 'community'}); check it with: "
              f"python -m gcite verify {shown(built.path)} --key PUBLIC.pem")
    if args.marketplace:
        print("dsl/ not updated: the Marketplace's listing gets its own identifier when it is published")
    elif not args.no_dsl_update:
        for path in update_dsl_dependencies(ROOT / "dsl", built.identifier):
            print(f"updated dependency in {path.relative_to(ROOT)}")
    return 0
