"""The plugin's endpoint declarations, checked as the daemon (and the SDK that runs them) check them.

Called from `gcite.build.package.validate`; returns one message per problem. Sources:
- daemon `pkg/plugin_packager/decoder/helper.go`: each `plugins.endpoints` file is an endpoint group; a scalar
  entry of its `endpoints` is a file holding one endpoint declaration, a mapping an inline declaration; only the
  last group is kept, so more than one is a mistake;
- daemon `plugin_declaration.go`: `plugins.endpoints` entries at most 128 characters; `endpoint_declaration.go`:
  `path` and `method` required, method one of HEAD GET POST PUT DELETE OPTIONS; `config.go::ProviderConfig`:
  a setting's `type` one of secret-input text-input select boolean app-selector model-selector array[tools],
  `scope` only for app-selector (all chat workflow completion) and model-selector, `label.en_US` required, texts
  under 1024 characters, `default` a basic type, option values under 128 characters;
- daemon `setup_endpoint.go`: endpoints are set up only with `resource.permission.endpoint.enabled`; an app
  invocation without `resource.permission.app.enabled` is refused;
- SDK `entities/endpoint.py` (EndpointProviderConfiguration, EndpointConfiguration: `extra.python.source`
  required) and `core/plugin_registration.py` (each declaration becomes a werkzeug Rule; the source module must
  hold exactly one Endpoint subclass).
"""

import ast
from pathlib import Path
from typing import Any

import yaml

METHODS = ("HEAD", "GET", "POST", "PUT", "DELETE", "OPTIONS")
SETTING_TYPES = ("secret-input", "text-input", "select", "boolean", "app-selector", "model-selector", "array[tools]")
APP_SCOPES = ("all", "chat", "workflow", "completion")
MODEL_SCOPES = ("llm", "text-embedding", "rerank", "tts", "speech2text", "moderation", "vision", "document",
                "tool-call")
MAX_TEXT = 1024
MAX_ENTRY = 128


def _load(root: Path, relative: str, problems: list[str]) -> dict[str, Any] | None:
    from gcite.build.package import load_yaml  # package.py calls this module from its validate()

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
            if not isinstance(option, dict) or not isinstance(option.get("value"), str) or not (
                    0 < len(option["value"]) < 128):
                problems.append(f"{at}.options[{m}].value: required text under 128 characters")
            else:
                _i18n(option.get("label"), f"{at}.options[{m}].label", True, problems)
    return problems


def endpoint_class_count(source: str) -> int:
    """Classes in `source` deriving from a base named `Endpoint` (the SDK wants exactly one per module)."""
    tree = ast.parse(source)
    return sum(1 for node in tree.body if isinstance(node, ast.ClassDef) and any(
        (isinstance(b, ast.Name) and b.id == "Endpoint") or (isinstance(b, ast.Attribute) and b.attr == "Endpoint")
        for b in node.bases))


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
    source = ((declaration.get("extra") or {}).get("python") or {}).get("source") if isinstance(
        declaration.get("extra"), dict) else None
    if not isinstance(source, str) or not source.endswith(".py"):
        problems.append(f"{where}.extra.python.source: required, a .py file")
    elif source not in packaged:
        problems.append(f"{where}: the endpoint class {source} is not in the package (missing, or excluded by .difyignore)")
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

    from gcite.build.package import sdk_problems

    groups = (manifest.get("plugins") or {}).get("endpoints") or []
    if not groups:
        return []
    problems: list[str] = []
    if not isinstance(groups, list):
        return ["manifest.yaml: plugins.endpoints must be a list of files"]
    if len(groups) > 1:
        problems.append(f"manifest.yaml: plugins.endpoints lists {len(groups)} groups; the daemon keeps only the last")
    permission = ((manifest.get("resource") or {}).get("permission") or {})
    if not (permission.get("endpoint") or {}).get("enabled"):
        problems.append("manifest.yaml: resource.permission.endpoint.enabled must be true, or the daemon refuses "
                        "to set up the endpoints")
    routes: dict[tuple[str, str], str] = {}
    for group_path in groups:
        if not isinstance(group_path, str) or len(group_path) > MAX_ENTRY:
            problems.append(f"manifest.yaml: plugins.endpoints entry {group_path!r} must be a path of at most "
                            f"{MAX_ENTRY} characters")
            continue
        if group_path not in packaged:
            problems.append(f"the endpoint group {group_path} is not in the package (missing, or excluded by .difyignore)")
        group = _load(root, group_path, problems)
        if group is None:
            continue
        settings = group.get("settings")
        problems += setting_problems(settings, group_path)
        problems += sdk_problems(EndpointProviderConfiguration, {"settings": settings or [], "endpoints": []},
                                 group_path)
        if any(isinstance(s, dict) and s.get("type") == "app-selector" for s in settings or []) and not (
                permission.get("app") or {}).get("enabled"):
            problems.append(f"{group_path}: an app-selector setting needs resource.permission.app.enabled in the "
                            f"manifest, or invoking the app is refused")
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
