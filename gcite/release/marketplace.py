"""The Dify Marketplace's automated checks, run on exactly what a package contains; and the publisher's details.

A submission to langgenius/dify-plugins is refused before review when its `pre-check-plugin` run reports an error.
The rules below are those checks (the workflow's author and icon steps, and the dify-marketplace-toolkit validators
`manifest`, `readme`, `contents`, `secrets`, `dependencies`; their sources are named per rule), plus what G-Cite
adds on top: every requirement bounded above, `dify-plugin` with `>=`, the README in English everywhere (not only
outside code fences), a localised Chinese README, and a privacy policy that names every place the plugin sends data.

`repo` and `contact` are the publisher's to give (the project's public home is not ours to invent): `publish()`
writes them into the packaged manifest and names them in the packaged READMEs. Without them the package is still
checked, and their absence is a warning unless the package is meant for the Marketplace.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from gcite.release.secret_scan import scan

MAX_BYTES = 50 * 1024 * 1024  # package file and unpacked contents (toolkit contents.py; the daemon's default limit)
MAX_FILES = 5000
MIN_DIFY_PLUGIN = (0, 9, 0)
LOCALISED_README = "readme/README_zh_Hans.md"

# toolkit/checks/source_hosts.py
SOURCE_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "gitee.com", "codeberg.org", "git.sr.ht")
_HOSTS = "|".join(re.escape(host) for host in SOURCE_HOSTS)
REPO_URL = re.compile(rf"^https?://(?:www\.)?(?:{_HOSTS})/[^\s)>\"]+$", re.IGNORECASE)
REPO_LINK = re.compile(rf"https?://(?:www\.)?(?:{_HOSTS})/[^\s)>\"]+", re.IGNORECASE)
# toolkit/checks/manifest.py
EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+$")
REQUIRED_FIELDS = (
    "author",
    "name",
    "version",
    "type",
    "icon",
    "plugins",
    "privacy",
    "label.en_US",
    "description.en_US",
    "meta.version",
    "meta.arch",
    "meta.runner.language",
    "meta.runner.version",
    "meta.runner.entrypoint",
    "meta.minimum_dify_version",
)
PRIVACY_TEMPLATE = "please fill in the privacy policy"
# the README check: CJK ideographs (and, in the workflow's older script, CJK punctuation and full-width forms)
CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
# toolkit/checks/contents.py
BLOCKED_DIRS = {
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    "env",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
    ".tox",
    ".nox",
    ".idea",
    ".vscode",
    "node_modules",
    "pycache",
}
REVIEW_DIRS = {"build", "dist"}
BLOCKED_FILES = {".DS_Store", ".gitconfig", "Thumbs.db", "desktop.ini", "id_rsa"}
ALLOWED_ENV_FILES = {".env.example", ".env.sample", ".env.template"}
BLOCKED_SUFFIXES = {".key", ".pem", ".p12", ".pfx", ".pyc", ".pyo", ".log", ".tmp", ".swp", ".swo", ".bak"}
ARCHIVE_SUFFIXES = {".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar"}
# the pre-check workflow's icon step: the plugin template's icon and its marker
TEMPLATE_ICON_MARKER = "DIFY_MARKETPLACE_TEMPLATE_ICON_DO_NOT_USE"
TEMPLATE_ICON = (
    '<svg width="100" height="100" xmlns="http://www.w3.org/2000/svg">\n'
    '  <path d="M20 20 V80 M20 20 H60 Q80 20 80 40 T60 60 H20" \n        fill="none" \n'
    '        stroke="black" \n        stroke-width="5"/>\n</svg>'
)
# toolkit/checks/dependencies.py
OPERATOR = re.compile(r"(===|==|~=|!=|<=|>=|<|>|\^)")
UPPER_BOUND = re.compile(r"(===|==|<=|<|~=)")
NAME = re.compile(r"^\s*([A-Za-z0-9_.-]+)")

RULES = {
    "manifest": "manifest fields (toolkit manifest.py)",
    "author": "manifest author (pre-check-plugin)",
    "icon": "custom icon (pre-check-plugin)",
    "dependencies": "bounded dependencies, dify-plugin >= 0.9.0 (toolkit dependencies.py)",
    "readme": "English README with the source repository (toolkit readme.py)",
    "privacy": "PRIVACY.md (toolkit manifest.py)",
    "contents": "no development files (toolkit contents.py)",
    "secrets": "no secret-shaped strings (toolkit secrets.py)",
    "size": "under 50 MB and 5,000 files (toolkit contents.py)",
}


@dataclass(frozen=True)
class Finding:
    rule: str  # a key of RULES
    message: str
    error: bool = True

    def __str__(self) -> str:
        return f"{'error' if self.error else 'warning'}: [{self.rule}] {self.message}"


@dataclass(frozen=True)
class PrivacyFacts:
    """What the plugin really sends where; the privacy policy must say each."""

    search_providers: tuple[str, ...]  # labels of the services the Web search tool calls
    invokes_app: bool  # the endpoint invokes a Dify app (resource.permission.app)


def plugin_privacy_facts(manifest: dict[str, Any]) -> PrivacyFacts:
    """G-Cite's facts, from the code that has them: the search providers' table and the manifest's permissions."""
    from websearch.providers import PROVIDERS

    app = ((manifest.get("resource") or {}).get("permission") or {}).get("app") or {}
    return PrivacyFacts(tuple(provider.label for provider in PROVIDERS.values()), bool(app.get("enabled")))


# --- the publisher's details -----------------------------------------------------------------------------


def publisher_problems(repo: str | None, contact: str | None) -> list[str]:
    """The given --repo/--contact as the Marketplace checks them (one message each); empty when both are fine."""
    problems = []
    if repo is not None and not REPO_URL.match(repo):
        problems.append(
            f"--repo {repo!r}: expected a repository URL on {', '.join(SOURCE_HOSTS)} "
            f"(e.g. https://github.com/OWNER/NAME)"
        )
    if contact is not None and not EMAIL.match(contact):
        problems.append(f"--contact {contact!r}: expected an e-mail address")
    return problems


def _set_top_level(text: str, key: str, value: str) -> str:
    line = f"{key}: {json.dumps(value)}"  # a JSON string is a YAML double-quoted scalar
    pattern = re.compile(rf"^{key}:.*$", re.MULTILINE)
    if pattern.search(text):
        return pattern.sub(lambda _: line, text, count=1)
    return text + ("" if text.endswith("\n") else "\n") + line + "\n"


SOURCE_SECTION = {
    "README.md": (
        "## Source code and support",
        "Source code, issues and the full documentation: {repo}",
        "Contact: {contact}",
    ),
    LOCALISED_README: ("## 源代码与支持", "源代码、问题反馈与完整文档：{repo}", "联系方式：{contact}"),
}


def publish(entries: dict[str, bytes], repo: str | None, contact: str | None) -> dict[str, bytes]:
    """The package's entries with `repo`/`contact` in the manifest and a source section in each README."""
    out = dict(entries)
    manifest = out["manifest.yaml"].decode("utf-8")
    for key, value in (("repo", repo), ("contact", contact)):
        if value is not None:
            manifest = _set_top_level(manifest, key, value)
    out["manifest.yaml"] = manifest.encode("utf-8")
    if repo is not None or contact is not None:
        for name, (heading, source, reach) in SOURCE_SECTION.items():
            if name not in out:
                continue
            lines = ([source.format(repo=repo)] if repo else []) + ([reach.format(contact=contact)] if contact else [])
            text = out[name].decode("utf-8").rstrip("\n")
            out[name] = (text + f"\n\n{heading}\n\n" + "\n\n".join(lines) + "\n").encode("utf-8")
    return out


# --- the checks ------------------------------------------------------------------------------------------


def _field(manifest: dict[str, Any], dotted: str) -> Any:
    value: Any = manifest
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def check_manifest(manifest: dict[str, Any], marketplace: bool) -> list[Finding]:
    found = [
        Finding("manifest", f"manifest.yaml: {name} is required")
        for name in REQUIRED_FIELDS
        if _field(manifest, name) in (None, "", [], {})
    ]
    if manifest.get("type") not in (None, "plugin"):
        found.append(Finding("manifest", "manifest.yaml: type must be 'plugin'"))
    repo, contact = manifest.get("repo"), manifest.get("contact")
    if not repo:
        found.append(
            Finding(
                "manifest",
                "manifest.yaml: repo is missing (give --repo URL: the project's public repository)",
                error=marketplace,
            )
        )
    elif not isinstance(repo, str) or not REPO_URL.match(repo):
        found.append(
            Finding("manifest", f"manifest.yaml: repo {repo!r} must be a repository URL on {', '.join(SOURCE_HOSTS)}")
        )
    if not contact:
        found.append(Finding("manifest", "manifest.yaml: contact is missing (give --contact EMAIL)", error=marketplace))
    elif not isinstance(contact, str) or not EMAIL.match(contact):
        found.append(Finding("manifest", f"manifest.yaml: contact {contact!r} must be an e-mail address"))
    author = str(manifest.get("author") or "").lower()
    for reserved in ("langgenius", "dify"):
        if reserved in author:
            found.append(
                Finding(
                    "author",
                    f"manifest.yaml: author {manifest.get('author')!r} must not contain "
                    f"{reserved!r} (reserved for first-party plugins)",
                )
            )
    privacy = manifest.get("privacy")
    if privacy and privacy != "PRIVACY.md":
        found.append(Finding("privacy", f"manifest.yaml: privacy is {privacy!r}; point it at the root PRIVACY.md"))
    return found


def check_dependencies(entries: dict[str, bytes]) -> list[Finding]:
    if "requirements.txt" not in entries:
        return [Finding("dependencies", "requirements.txt is missing (the install test installs it)")]
    found = []
    seen_sdk = False
    for number, raw in enumerate(entries["requirements.txt"].decode("utf-8", "replace").splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        where = f"requirements.txt:{number} {line!r}"
        if re.search(r"git\+", line, re.IGNORECASE) or re.search(r"(^|\s@)\s*(?:https?|ftp|file)://", line, re.I):
            found.append(Finding("dependencies", f"{where}: git and direct-URL installs are not allowed"))
            continue
        if line.startswith("-"):
            found.append(
                Finding(
                    "dependencies",
                    f"{where}: keep every requirement on its own line in requirements.txt (no options or includes)",
                )
            )
            continue
        name = (NAME.match(line).group(1) if NAME.match(line) else "").lower().replace("_", "-")
        if name == "dify-plugin":
            seen_sdk = True
            lower = re.search(r">=\s*([0-9][0-9A-Za-z.+-]*)", line)
            if "~=" in line:
                found.append(
                    Finding(
                        "dependencies",
                        f"{where}: write dify-plugin>=X,<Y (the Marketplace reads only "
                        f">= or ==, so ~= counts as no version)",
                    )
                )
                continue
            if lower is None:
                found.append(
                    Finding(
                        "dependencies",
                        f"{where}: write dify-plugin>=X,<Y with X at least 0.9.0 "
                        f"(a lower bound the Marketplace reads, an upper bound for "
                        f"the next minor release)",
                    )
                )
                continue
            if _version(lower.group(1)) < MIN_DIFY_PLUGIN:
                found.append(Finding("dependencies", f"{where}: dify-plugin must be >= 0.9.0"))
                continue
        if not OPERATOR.search(line):
            found.append(Finding("dependencies", f"{where}: no version constraint"))
        elif not UPPER_BOUND.search(line):
            found.append(Finding("dependencies", f"{where}: unbounded above; add an upper bound (e.g. ,<NEXT_MAJOR)"))
    if not seen_sdk:
        found.append(Finding("dependencies", "requirements.txt: no dify-plugin requirement (>= 0.9.0 needed)"))
    return found


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for part in re.split(r"[.+-]", text):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def check_readme(entries: dict[str, bytes], manifest: dict[str, Any], marketplace: bool) -> list[Finding]:
    found = []
    readme = entries.get("README.md", b"").decode("utf-8", "replace")
    if not readme.strip():
        return [Finding("readme", "README.md is missing or empty")]
    cjk = CJK.findall(readme)
    if cjk:
        found.append(
            Finding(
                "readme",
                f"README.md must be English only: {len(cjk)} CJK characters (first: "
                f"{''.join(dict.fromkeys(cjk))[:8]!r}); Chinese goes to {LOCALISED_README}",
            )
        )
    repo = manifest.get("repo")
    if isinstance(repo, str) and repo:
        if repo not in readme:
            found.append(Finding("readme", f"README.md does not name the repository {repo}"))
    elif not REPO_LINK.search(readme):
        found.append(Finding("readme", "README.md names no source repository (give --repo URL)", error=marketplace))
    localised = entries.get(LOCALISED_README, b"").decode("utf-8", "replace")
    if not localised.strip():
        found.append(Finding("readme", f"{LOCALISED_README} (the Chinese README Dify shows in Chinese) is missing"))
    elif not CJK.search(localised):
        found.append(Finding("readme", f"{LOCALISED_README} is not in Chinese"))
    return found


def check_privacy(entries: dict[str, bytes], facts: PrivacyFacts | None) -> list[Finding]:
    if "PRIVACY.md" not in entries:
        return [
            Finding(
                "privacy",
                "PRIVACY.md is missing at the package root (the Marketplace requires it even when privacy is a URL)",
            )
        ]
    text = entries["PRIVACY.md"].decode("utf-8", "replace")
    lowered = text.lower()
    if not text.strip():
        return [Finding("privacy", "PRIVACY.md is empty")]
    if PRIVACY_TEMPLATE in lowered:
        return [Finding("privacy", "PRIVACY.md still holds the template's placeholder text")]
    found = []
    if facts is not None:
        for label in facts.search_providers:
            if label.lower() not in lowered:
                found.append(
                    Finding(
                        "privacy",
                        f"PRIVACY.md does not say that web search sends the query to "
                        f"{label} (websearch/providers.py calls it)",
                    )
                )
        if facts.invokes_app and not re.search(r"\bapp\b", lowered):
            found.append(
                Finding(
                    "privacy", "PRIVACY.md does not say that the endpoint sends the question to the Dify app it invokes"
                )
            )
    if not re.search(r"\bstores? nothing\b|\bdoes not store\b|\bnot stored\b", lowered):
        found.append(Finding("privacy", "PRIVACY.md does not say what the plugin stores"))
    return found


def check_contents(entries: dict[str, bytes], package_size: int | None) -> list[Finding]:
    found = []
    for name in entries:
        path = PurePosixPath(name)
        blocked = [part for part in path.parts[:-1] if part in BLOCKED_DIRS]
        if blocked:
            found.append(Finding("contents", f"{name}: inside a {blocked[0]}/ folder (forbidden)"))
        elif path.name in BLOCKED_FILES or (
            path.name.startswith(".env")
            and path.name not in ALLOWED_ENV_FILES
            and (path.name == ".env" or path.name.startswith(".env."))
        ):
            found.append(Finding("contents", f"{name}: a forbidden file"))
        elif path.suffix.lower() in BLOCKED_SUFFIXES:
            found.append(Finding("contents", f"{name}: a forbidden file type ({path.suffix})"))
        elif path.suffix.lower() in ARCHIVE_SUFFIXES:
            found.append(Finding("contents", f"{name}: an archive (reviewers ask why)", error=False))
        elif any(part in REVIEW_DIRS for part in path.parts[:-1]):
            found.append(
                Finding("contents", f"{name}: inside a build/ or dist/ folder (reviewers ask why)", error=False)
            )
    total = sum(map(len, entries.values()))
    if total >= MAX_BYTES:
        found.append(Finding("size", f"the contents are {total:,} bytes unpacked; the limit is under {MAX_BYTES:,}"))
    if package_size is not None and package_size >= MAX_BYTES:
        found.append(Finding("size", f"the package is {package_size:,} bytes; the limit is under {MAX_BYTES:,}"))
    if len(entries) >= MAX_FILES:
        found.append(Finding("size", f"the package holds {len(entries):,} files; the limit is under {MAX_FILES:,}"))
    return found


def check_secrets(entries: dict[str, bytes]) -> list[Finding]:
    """The secret scan's findings (gcite/release/secret_scan.py) as the Marketplace's `secrets` rule."""
    return [Finding("secrets", message, error=error) for message, error in scan(entries)]


def _normalised(text: str) -> str:
    return re.sub(r"\s+", "", text)


def check_icon(entries: dict[str, bytes], manifest: dict[str, Any]) -> list[Finding]:
    found = []
    for field in ("icon", "icon_dark"):
        icon = manifest.get(field)
        if not icon:
            if field == "icon":
                found.append(Finding("icon", "manifest.yaml: icon is required"))
            continue
        content = entries.get(f"_assets/{icon}")
        if not content:
            found.append(Finding("icon", f"_assets/{icon} is missing or empty"))
            continue
        text = content.decode("utf-8", "ignore")
        if TEMPLATE_ICON_MARKER in text:
            found.append(Finding("icon", f"_assets/{icon} is the template's placeholder icon"))
        elif _normalised(text) == _normalised(TEMPLATE_ICON):
            found.append(Finding("icon", f"_assets/{icon} is the plugin template's default icon"))
    return found


def check(
    entries: dict[str, bytes], marketplace: bool, facts: PrivacyFacts | None = None, package_size: int | None = None
) -> list[Finding]:
    """Every Marketplace rule over a package's entries ({name: content}); errors first, in RULES order."""
    try:
        manifest = yaml.safe_load(entries.get("manifest.yaml", b"")) or {}
    except yaml.YAMLError:
        manifest = None
    if not isinstance(manifest, dict):
        return [Finding("manifest", "manifest.yaml is missing or not a YAML mapping")]
    found = (
        check_manifest(manifest, marketplace)
        + check_icon(entries, manifest)
        + check_dependencies(entries)
        + check_readme(entries, manifest, marketplace)
        + check_privacy(entries, facts)
        + check_contents(entries, package_size)
        + check_secrets(entries)
    )
    order = list(RULES)
    return sorted(found, key=lambda f: (not f.error, order.index(f.rule)))


# --- a package with the checks, the publisher's details and, optionally, a signature ---------------------


@dataclass(frozen=True)
class Release:
    path: Path | None  # None: not written (an error among the findings)
    identifier: str | None
    size: int
    uncompressed: int
    files: list[str]
    findings: list[Finding]
    signed: bool


def release(
    root: Path,
    out_dir: Path,
    *,
    repo: str | None = None,
    contact: str | None = None,
    marketplace: bool = False,
    private_key=None,
    category: str = "community",
) -> Release:
    """Build the plugin (the packager's own checks raise PackageError), add the publisher's details, run every
    Marketplace rule and write the package only when none is an error; signed when `private_key` is given."""
    import tempfile
    import zipfile

    from gcite.release import signing
    from gcite.release.package import build, identifier_of_package

    problems = publisher_problems(repo, contact)
    if problems:
        raise ValueError("; ".join(problems))
    with tempfile.TemporaryDirectory() as scratch:
        unsigned = build(root, Path(scratch))
        with zipfile.ZipFile(unsigned.path) as archive:
            entries = {info.filename: archive.read(info) for info in archive.infolist()}
    entries = publish(entries, repo, contact)
    manifest = yaml.safe_load(entries["manifest.yaml"])
    data = signing.write_package(list(entries.items()))
    if private_key is not None:
        data = signing.sign(data, private_key, category)
    findings = check(entries, marketplace, plugin_privacy_facts(manifest), package_size=len(data))
    files = list(entries)
    if any(f.error for f in findings):
        return Release(None, None, len(data), sum(map(len, entries.values())), files, findings, private_key is not None)
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = ".signed.difypkg" if private_key is not None else ".difypkg"
    path = out_dir / f"{manifest['name']}-{manifest['version']}{suffix}"
    path.write_bytes(data)
    return Release(
        path,
        identifier_of_package(path),
        len(data),
        sum(map(len, entries.values())),
        files,
        findings,
        private_key is not None,
    )
