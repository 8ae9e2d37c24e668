"""Build the plugin's .difypkg the way the daemon's packager (`dify plugin package`) does, and validate it first.

- Files are walked from the plugin root. Each line of `.difyignore` (else `.gitignore`) is a gitignore pattern; as in
  the daemon, a path is skipped as soon as one pattern matches it, so `!negation` lines have no effect.
- Entries are sorted, use `/` separators, and no directory entries are written.
- The repository's README.md is the developer README; the package's README is the user-facing page in
  `plugin_readme/`: `plugin_readme/README.md` ships as `README.md` (English, what Dify shows by default) and
  `plugin_readme/README_<lang>.md` as `readme/README_<lang>.md` (e.g. `README_zh_Hans.md`, shown to users of that
  language), the layout the daemon reads a plugin's README from.
- The unique identifier is `author/name:version@checksum`, the checksum being sha256 over the sorted paths of
  sha256(path) followed by sha256(content), as the daemon computes it when a package is uploaded.
"""

import ast
import hashlib
import io
import os
import re
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pathspec
import yaml

MAX_UNCOMPRESSED = 50 * 1024 * 1024  # the daemon's default MAX_PLUGIN_PACKAGE_SIZE
AUTHOR = re.compile(r"[a-z0-9_-]{1,64}")
NAME = re.compile(r"[a-z0-9_-]{1,128}")
VERSION = re.compile(r"\d{1,4}(\.\d{1,4}){2}(-\w{1,16})?")
META_VERSION = re.compile(r"\d+\.\d+\.\d+")
PROVIDER_NAME = re.compile(r"[a-zA-Z0-9_-]+")
ARCHES = {"amd64", "arm64"}
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
MANIFEST_BYTES = 64 * 1024  # a manifest read from someone else's package (ours is under 2 KB)


class PackageError(Exception):
    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class Package:
    path: Path
    identifier: str
    size: int  # bytes of the .difypkg
    uncompressed: int
    files: list[str]


# --- which files --------------------------------------------------------------------------------------------


def ignore_patterns(root: Path) -> list[pathspec.patterns.GitWildMatchPattern]:
    for name in (".difyignore", ".gitignore"):
        path = root / name
        if path.is_file():
            lines = path.read_text(encoding="utf-8").split("\n")
            return [
                pathspec.patterns.GitWildMatchPattern(line.strip())
                for line in lines
                if line.strip() and not line.strip().startswith("#")
            ]
    return []


def excluded(relative: str, is_dir: bool, patterns) -> bool:
    candidate = relative + "/" if is_dir else relative
    return any(p.include is True and p.match_file(candidate) is not None for p in patterns)


def collect_files(root: Path) -> list[str]:
    """The plugin's files as the daemon's packager walks them: relative `/` paths, sorted."""
    patterns = ignore_patterns(root)
    files = []
    for directory, dirnames, filenames in os.walk(root):
        base = Path(directory).relative_to(root)
        dirnames[:] = [
            d
            for d in dirnames
            if not excluded((base / d).as_posix(), True, patterns) and not (Path(directory, d).is_symlink())
        ]
        for name in filenames:
            relative = (base / name).as_posix()
            if not excluded(relative, False, patterns):
                files.append(relative)
    outside = [
        f"{relative}: a symlink to {os.readlink(root / relative)}, outside the plugin tree: packaging it would "
        f"ship that file of this machine (replace the link with the file, or list it in .difyignore)"
        for relative in files
        if (root / relative).is_symlink() and not _inside(root, root / relative)
    ]
    if outside:
        raise PackageError(outside)
    return sorted(files)


def _inside(root: Path, path: Path) -> bool:
    """Whether `path`, symlinks resolved, is a file within `root` (resolved too)."""
    try:
        return path.resolve(strict=True).is_relative_to(root.resolve(strict=True))
    except (OSError, RuntimeError):  # dangling, or a loop
        return False


PLUGIN_README_DIR = "plugin_readme"
README_I18N = re.compile(r"README_[a-z]{2}_[A-Za-z]{2,}\.md")  # the daemon's pattern for readme/README_<lang>.md


def packaged_name(source: str) -> str:
    """The name a walked file gets in the package (only the plugin README files are renamed)."""
    directory, _, name = source.rpartition("/")
    if directory == PLUGIN_README_DIR:
        if name == "README.md":
            return "README.md"
        if README_I18N.fullmatch(name):
            return f"readme/{name}"
    return source


def source_of(name: str) -> str:
    """The file in the plugin tree that the package entry `name` comes from (inverse of `packaged_name`)."""
    if name == "README.md":
        return f"{PLUGIN_README_DIR}/README.md"
    directory, _, base = name.rpartition("/")
    if directory == "readme" and README_I18N.fullmatch(base):
        return f"{PLUGIN_README_DIR}/{base}"
    return name


def package_entries(root: Path) -> dict[str, Path]:
    """{name in the package: file it comes from}, sorted by name: the walked files with the README mapping."""
    entries: dict[str, Path] = {}
    plugin_readme = (root / PLUGIN_README_DIR / "README.md").is_file()
    for source in collect_files(root):
        if source == "README.md" and plugin_readme:
            raise PackageError(
                [
                    f"README.md: the package's README comes from {PLUGIN_README_DIR}/README.md; "
                    f"exclude the repository's /README.md in .difyignore"
                ]
            )
        entries[packaged_name(source)] = root / source
    return dict(sorted(entries.items(), key=lambda item: item[0].encode("utf-8")))


# --- identity -------------------------------------------------------------------------------------------


def checksum(entries: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for path in sorted(entries, key=lambda p: p.encode("utf-8")):
        digest.update(hashlib.sha256(path.encode("utf-8")).digest())
        digest.update(hashlib.sha256(entries[path]).digest())
    return digest.hexdigest()


def unique_identifier(manifest: dict[str, Any], entries: dict[str, bytes]) -> str:
    return f"{manifest['author']}/{manifest['name']}:{manifest['version']}@{checksum(entries)}"


def identifier_of_package(path: Path) -> str:
    """The identifier the daemon computes from an uploaded package's entries; ArchiveError (one line) for a package
    that cannot be read within the bounds of gcite.release.archive, or that has no readable manifest."""
    from gcite import load_yaml
    from gcite.release.archive import ArchiveError, read_entries, read_package_file

    entries = read_entries(read_package_file(path))
    if "manifest.yaml" not in entries:
        raise ArchiveError(f"{path}: no manifest.yaml entry (not a plugin package)")
    try:
        manifest = load_yaml(entries["manifest.yaml"][: MANIFEST_BYTES + 1].decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError):
        manifest = None
    if (
        len(entries["manifest.yaml"]) > MANIFEST_BYTES
        or not isinstance(manifest, dict)
        or not all(isinstance(manifest.get(key), (str, int, float)) for key in ("author", "name", "version"))
    ):
        raise ArchiveError(f"{path}: manifest.yaml is not a plugin manifest (author, name and version)")
    return unique_identifier(manifest, entries)


# --- validation -----------------------------------------------------------------------------------------


def load_yaml(root: Path, relative: str, problems: list[str]) -> dict[str, Any] | None:
    path = root / relative
    if not path.is_file():
        problems.append(f"{relative}: file not found")
        return None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        problems.append(f"{relative}: not valid YAML ({error})".replace("\n", " "))
        return None
    if not isinstance(data, dict):
        problems.append(f"{relative}: expected a mapping at the top")
        return None
    return data


def sdk_problems(model, data: dict[str, Any], relative: str) -> list[str]:
    from pydantic import ValidationError

    try:
        model.model_validate(data)
    except ValidationError as error:
        return [f"{relative}: {'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in error.errors()]
    return []


def check_manifest(manifest: dict[str, Any], problems: list[str]) -> None:
    def need(ok: bool, message: str) -> None:
        if not ok:
            problems.append(f"manifest.yaml: {message}")

    need(manifest.get("type") == "plugin", "type must be 'plugin'")
    need(
        bool(AUTHOR.fullmatch(str(manifest.get("author", "")))),
        f"author {manifest.get('author')!r} must match ^[a-z0-9_-]{{1,64}}$ (the daemon rejects anything else)",
    )
    need(
        bool(NAME.fullmatch(str(manifest.get("name", "")))),
        f"name {manifest.get('name')!r} must match ^[a-z0-9_-]{{1,128}}$",
    )
    need(
        bool(VERSION.fullmatch(str(manifest.get("version", "")))), f"version {manifest.get('version')!r} must be X.Y.Z"
    )
    meta = manifest.get("meta") or {}
    need(bool(META_VERSION.fullmatch(str(meta.get("version", "")))), "meta.version must be X.Y.Z")
    need(bool(meta.get("arch")) and set(meta.get("arch") or []) <= ARCHES, "meta.arch must list amd64 and/or arm64")
    runner = meta.get("runner") or {}
    need(runner.get("language") == "python", "meta.runner.language must be python")
    need(str(runner.get("version")) == "3.12", 'meta.runner.version must be "3.12" (Dify runs plugins on 3.12)')
    for key in ("label", "description"):
        need(isinstance(manifest.get(key), dict) and bool(manifest[key].get("en_US")), f"{key}.en_US is required")
    need(bool((manifest.get("plugins") or {}).get("tools")), "plugins.tools must list at least one provider YAML")


def validate(root: Path, files: list[str]) -> tuple[dict[str, Any] | None, list[str]]:
    """Everything the daemon checks before it packages or installs: one message per problem."""
    with warnings.catch_warnings():
        # importing the SDK patches this process with gevent, which warns that ssl (imported by requests) came
        # first: a concern of a plugin process, not of a packaging run, and noise on the command's stderr
        warnings.filterwarnings("ignore", message="Monkey-patching ssl")
        from dify_plugin.core.entities.plugin.setup import PluginConfiguration
        from dify_plugin.entities.tool import ToolConfiguration, ToolProviderConfiguration

    problems: list[str] = []
    packaged = set(files)
    manifest = load_yaml(root, "manifest.yaml", problems)
    if manifest is None:
        return None, problems
    check_manifest(manifest, problems)
    problems += sdk_problems(PluginConfiguration, manifest, "manifest.yaml")

    def must_ship(relative: str, what: str) -> None:
        if relative not in packaged:
            problems.append(f"{what} {relative} is not in the package (missing, or excluded by .difyignore)")

    icons = [manifest.get("icon"), manifest.get("icon_dark")]
    runner = (manifest.get("meta") or {}).get("runner") or {}
    must_ship(f"{runner.get('entrypoint', 'main')}.py", "the entrypoint")
    must_ship("requirements.txt", "the dependency file")
    must_ship("README.md", "the README Dify shows for the plugin")
    if manifest.get("privacy"):
        must_ship(str(manifest["privacy"]), "the privacy policy")
    for provider_path in (manifest.get("plugins") or {}).get("tools") or []:
        must_ship(provider_path, "the provider")
        provider = load_yaml(root, provider_path, problems)
        if provider is None:
            continue
        problems += sdk_problems(ToolProviderConfiguration, {**provider, "tools": []}, provider_path)
        identity = provider.get("identity") or {}
        icons.append(identity.get("icon"))
        if not PROVIDER_NAME.fullmatch(str(identity.get("name", ""))):
            problems.append(f"{provider_path}: identity.name must match ^[a-zA-Z0-9_-]+$")
        must_ship(str(((provider.get("extra") or {}).get("python") or {}).get("source")), "the provider class")
        for tool_path in provider.get("tools") or []:
            must_ship(tool_path, "the tool")
            tool = load_yaml(root, tool_path, problems)
            if tool is None:
                continue
            problems += sdk_problems(ToolConfiguration, tool, tool_path)
            must_ship(str(((tool.get("extra") or {}).get("python") or {}).get("source")), "the tool class")
    problems += endpoint_problems(root, manifest, packaged)
    for icon in filter(None, icons):
        must_ship(f"_assets/{icon}", "the icon")
    size = sum((root / source_of(f)).stat().st_size for f in files)
    if size >= MAX_UNCOMPRESSED:
        problems.append(f"the plugin is {size:,} bytes uncompressed; the daemon accepts less than {MAX_UNCOMPRESSED:,}")
    return manifest, problems


# --- building -------------------------------------------------------------------------------------------


def build(root: Path, out_dir: Path) -> Package:
    sources = package_entries(root)
    files = list(sources)
    manifest, problems = validate(root, files)
    if problems or manifest is None:
        raise PackageError(problems)
    entries = {f: sources[f].read_bytes() for f in files}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in files:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, entries[name])
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{manifest['name']}-{manifest['version']}.difypkg"
    path.write_bytes(buffer.getvalue())
    return Package(
        path=path,
        identifier=unique_identifier(manifest, entries),
        size=path.stat().st_size,
        uncompressed=sum(map(len, entries.values())),
        files=files,
    )


# --- keeping DSL dependencies in step -------------------------------------------------------------------


def identifier_pattern(author: str, name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w/-]){re.escape(author)}/{re.escape(name)}:[0-9][\w.+-]*@[a-f0-9]{{32,64}}")


def update_dsl_dependencies(dsl_dir: Path, identifier: str) -> list[Path]:
    """Point every reference to this plugin in dsl/*.yml at `identifier`; returns the files changed."""
    author, rest = identifier.split("/", 1)
    pattern = identifier_pattern(author, rest.split(":", 1)[0])
    changed = []
    for path in sorted(dsl_dir.glob("*.yml")) if dsl_dir.is_dir() else []:
        text = path.read_text(encoding="utf-8")
        updated = pattern.sub(identifier, text)
        if updated != text:
            path.write_text(updated, encoding="utf-8")
            changed.append(path)
    return changed


def plugin_references(text: str, author: str, name: str) -> list[str]:
    return identifier_pattern(author, name).findall(text)


# --- the endpoint group and its declarations, checked as the daemon and the SDK check them ---------------------
# The plugin's endpoint declarations, checked as the daemon (and the SDK that runs them) check them.
#
# `endpoint_problems` returns one message per problem. Sources:
# - daemon `pkg/plugin_packager/decoder/helper.go`: each `plugins.endpoints` file is an endpoint group; a scalar
#   entry of its `endpoints` is a file holding one endpoint declaration, a mapping an inline declaration; only the
#   last group is kept, so more than one is a mistake;
# - daemon `plugin_declaration.go`: `plugins.endpoints` entries at most 128 characters; `endpoint_declaration.go`:
#   `path` and `method` required, method one of HEAD GET POST PUT DELETE OPTIONS; `config.go::ProviderConfig`:
#   a setting's `type` one of secret-input text-input select boolean app-selector model-selector array[tools],
#   `scope` only for app-selector (all chat workflow completion) and model-selector, `label.en_US` required, texts
#   under 1024 characters, `default` a basic type, option values under 128 characters;
# - daemon `setup_endpoint.go`: endpoints are set up only with `resource.permission.endpoint.enabled`; an app
#   invocation without `resource.permission.app.enabled` is refused;
# - SDK `entities/endpoint.py` (EndpointProviderConfiguration, EndpointConfiguration: `extra.python.source`
#   required) and `core/plugin_registration.py` (each declaration becomes a werkzeug Rule; the source module must
#   hold exactly one Endpoint subclass).


METHODS = ("HEAD", "GET", "POST", "PUT", "DELETE", "OPTIONS")
SETTING_TYPES = ("secret-input", "text-input", "select", "boolean", "app-selector", "model-selector", "array[tools]")
APP_SCOPES = ("all", "chat", "workflow", "completion")
MODEL_SCOPES = (
    "llm",
    "text-embedding",
    "rerank",
    "tts",
    "speech2text",
    "moderation",
    "vision",
    "document",
    "tool-call",
)
MAX_TEXT = 1024
MAX_ENTRY = 128


def _load(root: Path, relative: str, problems: list[str]) -> dict[str, Any] | None:
    return load_yaml(root, relative, problems)


def _i18n(value: Any, where: str, required: bool, problems: list[str]) -> None:
    if value is None:
        if required:
            problems.append(f"{where}: required (with en_US)")
        return
    if not isinstance(value, dict):
        problems.append(f"{where}: expected a mapping of languages")
        return
    if not isinstance(value.get("en_US"), str) or not value["en_US"]:
        problems.append(f"{where}.en_US: required")
    for language, text in value.items():
        if not isinstance(text, str) or len(text) >= MAX_TEXT:
            problems.append(f"{where}.{language}: expected text under {MAX_TEXT} characters")


def _scope_ok(kind: str, scope: str) -> bool:
    allowed = APP_SCOPES if kind == "app-selector" else MODEL_SCOPES if kind == "model-selector" else ()
    return all(part.strip() in allowed for part in scope.split("&"))


def setting_problems(settings: Any, where: str) -> list[str]:
    problems: list[str] = []
    if settings is None:
        return problems
    if not isinstance(settings, list):
        return [f"{where}.settings: expected a list"]
    names = set()
    for n, setting in enumerate(settings):
        at = f"{where}.settings[{n}]"
        if not isinstance(setting, dict):
            problems.append(f"{at}: expected a mapping")
            continue
        name = setting.get("name")
        if not isinstance(name, str) or not name or len(name) >= MAX_TEXT:
            problems.append(f"{at}.name: required text under {MAX_TEXT} characters")
        elif name in names:
            problems.append(f"{at}.name: {name!r} is declared twice")
        names.add(name)
        kind = setting.get("type")
        if kind not in SETTING_TYPES:
            problems.append(f"{at}.type: {kind!r} is not one of {', '.join(SETTING_TYPES)}")
        scope = setting.get("scope")
        if scope is not None and (not isinstance(scope, str) or not _scope_ok(str(kind), scope)):
            problems.append(f"{at}.scope: {scope!r} is not a valid scope for type {kind!r}")
        if "required" in setting and not isinstance(setting["required"], bool):
            problems.append(f"{at}.required: expected true or false")
        if setting.get("default") is not None and not isinstance(setting["default"], (str, int, float, bool)):
            problems.append(f"{at}.default: expected a string, number or boolean")
        _i18n(setting.get("label"), f"{at}.label", True, problems)
        for key in ("help", "placeholder"):
            _i18n(setting.get(key), f"{at}.{key}", False, problems)
        for m, option in enumerate(setting.get("options") or []):
            if (
                not isinstance(option, dict)
                or not isinstance(option.get("value"), str)
                or not (0 < len(option["value"]) < 128)
            ):
                problems.append(f"{at}.options[{m}].value: required text under 128 characters")
            else:
                _i18n(option.get("label"), f"{at}.options[{m}].label", True, problems)
    return problems


def endpoint_class_count(source: str) -> int:
    """Classes in `source` deriving from a base named `Endpoint` (the SDK wants exactly one per module)."""
    tree = ast.parse(source)
    return sum(
        1
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(
            (isinstance(b, ast.Name) and b.id == "Endpoint") or (isinstance(b, ast.Attribute) and b.attr == "Endpoint")
            for b in node.bases
        )
    )


def declaration_problems(root: Path, declaration: Any, where: str, packaged: set[str]) -> list[str]:
    from werkzeug.routing import Map, Rule

    problems: list[str] = []
    if not isinstance(declaration, dict):
        return [f"{where}: expected a mapping"]
    path, method = declaration.get("path"), declaration.get("method")
    if not isinstance(path, str) or not path.startswith("/"):
        problems.append(f"{where}.path: required, starting with /")
    else:
        try:
            Map([Rule(path, methods=[str(method)])])
        except (ValueError, TypeError) as error:
            problems.append(f"{where}.path: {path!r} is not a valid route ({error})")
    if method not in METHODS:
        problems.append(f"{where}.method: {method!r} is not one of {', '.join(METHODS)} (uppercase)")
    if "hidden" in declaration and not isinstance(declaration["hidden"], bool):
        problems.append(f"{where}.hidden: expected true or false")
    source = (
        ((declaration.get("extra") or {}).get("python") or {}).get("source")
        if isinstance(declaration.get("extra"), dict)
        else None
    )
    if not isinstance(source, str) or not source.endswith(".py"):
        problems.append(f"{where}.extra.python.source: required, a .py file")
    elif source not in packaged:
        problems.append(
            f"{where}: the endpoint class {source} is not in the package (missing, or excluded by .difyignore)"
        )
    else:
        try:
            count = endpoint_class_count((root / source).read_text(encoding="utf-8"))
        except SyntaxError as error:
            problems.append(f"{source}: not valid Python ({error.msg}, line {error.lineno})")
        else:
            if count != 1:
                problems.append(f"{source}: defines {count} Endpoint subclasses; the SDK loads exactly one per module")
    return problems


def endpoint_problems(root: Path, manifest: dict[str, Any], packaged: set[str]) -> list[str]:
    """Every problem of the manifest's endpoint groups and their declarations (empty when there are none)."""
    from dify_plugin.entities.endpoint import EndpointConfiguration, EndpointProviderConfiguration

    groups = (manifest.get("plugins") or {}).get("endpoints") or []
    if not groups:
        return []
    problems: list[str] = []
    if not isinstance(groups, list):
        return ["manifest.yaml: plugins.endpoints must be a list of files"]
    if len(groups) > 1:
        problems.append(f"manifest.yaml: plugins.endpoints lists {len(groups)} groups; the daemon keeps only the last")
    permission = (manifest.get("resource") or {}).get("permission") or {}
    if not (permission.get("endpoint") or {}).get("enabled"):
        problems.append(
            "manifest.yaml: resource.permission.endpoint.enabled must be true, or the daemon refuses "
            "to set up the endpoints"
        )
    routes: dict[tuple[str, str], str] = {}
    for group_path in groups:
        if not isinstance(group_path, str) or len(group_path) > MAX_ENTRY:
            problems.append(
                f"manifest.yaml: plugins.endpoints entry {group_path!r} must be a path of at most "
                f"{MAX_ENTRY} characters"
            )
            continue
        if group_path not in packaged:
            problems.append(
                f"the endpoint group {group_path} is not in the package (missing, or excluded by .difyignore)"
            )
        group = _load(root, group_path, problems)
        if group is None:
            continue
        settings = group.get("settings")
        problems += setting_problems(settings, group_path)
        problems += sdk_problems(
            EndpointProviderConfiguration, {"settings": settings or [], "endpoints": []}, group_path
        )
        if any(isinstance(s, dict) and s.get("type") == "app-selector" for s in settings or []) and not (
            permission.get("app") or {}
        ).get("enabled"):
            problems.append(
                f"{group_path}: an app-selector setting needs resource.permission.app.enabled in the "
                f"manifest, or invoking the app is refused"
            )
        entries = group.get("endpoints")
        if not isinstance(entries, list) or not entries:
            problems.append(f"{group_path}: endpoints must list at least one endpoint")
            continue
        for n, entry in enumerate(entries):
            if isinstance(entry, str):
                where = entry
                if entry not in packaged:
                    problems.append(f"the endpoint {entry} is not in the package (missing, or excluded by .difyignore)")
                declaration = _load(root, entry, problems)
                if declaration is None:
                    continue
            elif isinstance(entry, dict):
                where, declaration = f"{group_path}: endpoints[{n}]", entry
            else:
                problems.append(f"{group_path}: endpoints[{n}] must be a file path or a declaration")
                continue
            found = declaration_problems(root, declaration, where, packaged)
            problems += found or sdk_problems(EndpointConfiguration, declaration, where)
            route = (str(declaration.get("path")), str(declaration.get("method")))
            if not found and route in routes:
                problems.append(f"{where}: {route[1]} {route[0]} is already declared in {routes[route]}")
            routes.setdefault(route, where)
    return problems
