"""The endpoint in the package: declarations validated as the daemon does, bilingual settings, and the packaged
plugin (with only requirements.txt installed) answering a chat request."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from gcite.local.plugin_process import PluginProcess
from gcite.release.package import build, collect_files, package_entries, validate
from tests.support import ROOT
from tests.support.endpoint import Canned, answer_text, assert_protocol, chunk, dify_stream, events_of, post, token
from tests.support.package_env import package_python, unpack
from tests.support.yamltext import safe_load

LANGS = ("en_US", "zh_Hans")


def load(relative):
    return safe_load((ROOT / relative).read_text(encoding="utf-8"))


def test_the_manifest_declares_the_endpoint_group_and_its_permissions():
    manifest = load("manifest.yaml")
    assert manifest["plugins"]["endpoints"] == ["group/gcite_endpoint.yaml"]
    assert manifest["resource"]["permission"]["endpoint"]["enabled"] is True
    assert manifest["resource"]["permission"]["app"]["enabled"] is True
    group = load("group/gcite_endpoint.yaml")
    routes = [
        (load(path)["method"], load(path)["path"], load(path)["extra"]["python"]["source"])
        for path in group["endpoints"]
    ]
    assert ("POST", "/gcite/chat", "endpoints/chat.py") in routes
    assert ("OPTIONS", "/gcite/chat", "endpoints/chat.py") in routes


def test_every_setting_is_bilingual_and_typed_as_the_issue_asks():
    settings = {s["name"]: s for s in load("group/gcite_endpoint.yaml")["settings"]}
    assert settings["app"]["type"] == "app-selector" and settings["app"]["required"] is True
    assert settings["token_secret"]["type"] == "secret-input" and settings["token_secret"]["required"] is True
    assert settings["snippet_length"]["default"] == "300"
    assert {"allowed_origins", "source_node_id", "jwt_audience"} <= set(settings)
    for setting in settings.values():
        for key in ("label", "help", "placeholder"):
            if key in setting:
                assert set(LANGS) <= set(setting[key]), (setting["name"], key)


@pytest.fixture
def tree(tmp_path):
    """A copy of the plugin's packaged files to break."""
    for relative in collect_files(ROOT) + [".difyignore"]:
        target = tmp_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / relative, target)
    return tmp_path


def problems_of(root: Path) -> list[str]:
    return validate(root, list(package_entries(root)))[1]


def edit_yaml(path: Path, change) -> None:
    data = safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")


def test_the_shipped_declarations_pass(tree):
    assert problems_of(tree) == []


@pytest.mark.parametrize(
    "breakage,expected",
    [
        (lambda t: edit_yaml(t / "endpoints/chat.yaml", lambda d: d.update(method="PATCH")), "method: 'PATCH'"),
        (lambda t: edit_yaml(t / "endpoints/chat.yaml", lambda d: d.update(method="post")), "method: 'post'"),
        (lambda t: edit_yaml(t / "endpoints/chat.yaml", lambda d: d.pop("path")), "path: required"),
        (lambda t: edit_yaml(t / "endpoints/chat.yaml", lambda d: d.pop("extra")), "extra.python.source"),
        (lambda t: edit_yaml(t / "endpoints/chat.yaml", lambda d: d.update(path="/gcite/<bad")), "not a valid route"),
        (
            lambda t: edit_yaml(t / "endpoints/chat_preflight.yaml", lambda d: d.update(method="POST")),
            "already declared",
        ),
        (lambda t: (t / "endpoints/chat_preflight.yaml").unlink(), "endpoints/chat_preflight.yaml"),
        (
            lambda t: edit_yaml(t / "group/gcite_endpoint.yaml", lambda d: d["settings"][0].update(scope="chatty")),
            "scope: 'chatty'",
        ),
        (
            lambda t: edit_yaml(t / "group/gcite_endpoint.yaml", lambda d: d["settings"][4].update(type="number")),
            "type: 'number'",
        ),
        (
            lambda t: edit_yaml(t / "group/gcite_endpoint.yaml", lambda d: d["settings"][1]["label"].pop("en_US")),
            "label.en_US",
        ),
        (
            lambda t: edit_yaml(t / "group/gcite_endpoint.yaml", lambda d: d["settings"][2].update(name="app")),
            "declared twice",
        ),
        (
            lambda t: edit_yaml(t / "manifest.yaml", lambda d: d["resource"]["permission"].pop("endpoint")),
            "permission.endpoint.enabled",
        ),
        (
            lambda t: edit_yaml(t / "manifest.yaml", lambda d: d["resource"]["permission"].pop("app")),
            "permission.app.enabled",
        ),
        (
            lambda t: edit_yaml(
                t / "manifest.yaml", lambda d: d["plugins"]["endpoints"].append("group/gcite_endpoint.yaml")
            ),
            "keeps only the last",
        ),
        (
            lambda t: (t / "endpoints/chat.py").write_text(
                (ROOT / "endpoints/chat.py").read_text(encoding="utf-8") + "\n\nclass Another(Endpoint):\n    pass\n"
            ),
            "2 Endpoint subclasses",
        ),
    ],
    ids=[
        "patch",
        "lowercase-method",
        "no-path",
        "no-source",
        "bad-route",
        "duplicate-route",
        "missing-file",
        "bad-scope",
        "number-setting",
        "no-english-label",
        "duplicate-setting",
        "no-endpoint-permission",
        "no-app-permission",
        "two-groups",
        "two-classes",
    ],
)
def test_broken_declarations_are_reported_like_the_daemon_would(tree, breakage, expected):
    breakage(tree)
    problems = problems_of(tree)
    assert any(expected in p for p in problems), problems


def test_the_package_command_refuses_a_broken_endpoint(tree, tmp_path):
    edit_yaml(tree / "endpoints/chat.yaml", lambda d: d.update(method="PATCH"))
    from gcite.release.package import PackageError

    with pytest.raises(PackageError) as raised:
        build(tree, tmp_path / "dist")
    assert any("PATCH" in p for p in raised.value.problems)


# --- the packaged plugin ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def packaged_plugin(tmp_path_factory):
    built = build(ROOT, tmp_path_factory.mktemp("dist"))
    unpacked = unpack(built.path, tmp_path_factory.mktemp("plugin"))
    with PluginProcess(unpacked, package_python(unpacked / "requirements.txt")) as process:
        yield process


def test_the_packaged_plugin_serves_the_chat_endpoint_with_only_its_requirements(packaged_plugin):
    canned = Canned(dify_stream(["答案[C:1]。"], [chunk(1, "来源正文")]))
    call = post(packaged_plugin, {"query": "q"}, bearer=token("erin", ["前台"]), handler=canned)
    events = events_of(call)
    assert_protocol(call.text, events)
    assert answer_text(events) == "答案。" and events[-1][0] == "done"
    assert canned.requests[0]["inputs"] == {
        "user_roles": json.dumps(["前台"], ensure_ascii=False),
        "citation_style": "markers",
    }
    denied = post(packaged_plugin, {"query": "q"}, bearer=token(secret="x" * 40), handler=canned)
    assert denied.wait_head() == 401 and len(canned.requests) == 1
    assert packaged_plugin.alive
