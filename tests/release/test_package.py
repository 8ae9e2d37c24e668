"""The .difypkg: built as the daemon's packager would, then loaded, started and invoked as Dify does."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import requests
import yaml

from citations import filter as filter_chunks
from citations import merge as merge_chunks
from citations import validate as validate_citations
from gcite.local.plugin_process import PluginProcess
from gcite.release.package import (
    PackageError,
    build,
    checksum,
    collect_files,
    identifier_of_package,
    package_entries,
    plugin_references,
    source_of,
    update_dsl_dependencies,
)
from tests.support import ROOT
from tests.support.package_env import package_python, unpack
from tests.support.web_shapes import WEB_SHAPES
from tests.support.yamltext import safe_load

# Exactly what the plugin runs, its icon, its privacy policy and its user-facing README (English, and Chinese where
# the daemon looks for other languages). Adding a packaged file means adding it here.
PACKAGE_FILES = sorted(
    [
        "PRIVACY.md",
        "README.md",
        "_assets/icon.svg",
        "clients/js/gcite-client.js",
        "endpoints/chat.py",
        "endpoints/chat.yaml",
        "endpoints/chat_preflight.yaml",
        "endpoints/chat_protocol.py",
        "endpoints/page.py",
        "endpoints/page.yaml",
        "endpoints/page/gcite.css",
        "endpoints/page/gcite.js",
        "endpoints/page/index.html",
        "endpoints/page_assets.yaml",
        "endpoints/settings.py",
        "group/gcite_endpoint.yaml",
        "main.py",
        "manifest.yaml",
        "provider/gcite.py",
        "provider/gcite.yaml",
        "readme/README_zh_Hans.md",
        "requirements.txt",
        "tools/cited_answer.py",
        "tools/cited_answer.yaml",
        "tools/filter_chunks.py",
        "tools/filter_chunks.yaml",
        "tools/merge_chunks.py",
        "tools/merge_chunks.yaml",
        "tools/params.py",
        "tools/validate_citations.py",
        "tools/validate_citations.yaml",
        "tools/web_search.py",
        "tools/web_search.yaml",
    ]
    # the plugin's packages, whole (the tools import them); never nodes/, the Code nodes made from citations/
    + [p.relative_to(ROOT).as_posix() for package in ("citations", "websearch") for p in (ROOT / package).rglob("*.py")]
)
RAG = [
    {
        "content": "巡更需先打卡",
        "metadata": {
            "score": 0.7,
            "dataset_name": "楼宇知识库",
            "segment_id": "s1",
            "doc_metadata": {"document_title": "巡更指南", "access_roles": ",物业经理,"},
        },
    },
    {
        "content": "冷水机组 7℃",
        "metadata": {"score": 0.6, "segment_id": "s2", "doc_metadata": {"access_roles": '["运维工程师"]'}},
    },
]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build(ROOT, tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def unpacked(built, tmp_path_factory):
    return unpack(built.path, tmp_path_factory.mktemp("plugin"))


@pytest.fixture(scope="module")
def python(unpacked):
    return package_python(unpacked / "requirements.txt")


@pytest.fixture(scope="module")
def plugin(unpacked, python):
    with PluginProcess(unpacked, python) as process:
        yield process


# --- the package itself ----------------------------------------------------------------------------------


def test_package_holds_only_what_the_plugin_runs(built):
    with zipfile.ZipFile(built.path) as archive:
        names = archive.namelist()
        assert not any(info.is_dir() for info in archive.infolist())
    assert names == PACKAGE_FILES  # sorted, `/` separators, nothing else
    assert not any(name.startswith("nodes/") for name in names)
    assert built.size < 200 * 1024, f"package is {built.size} bytes"
    assert built.path.name == "gcite-0.1.0.difypkg"


def test_the_docs_give_the_packages_size_and_file_count(built):
    """docs/packaging.md says "about N KB (M files)" and its Chinese page "约 N KB（M 个文件）": M exactly, N within
    10 %."""
    pages = {
        "docs/packaging.md": r"about (\d+) KB \((\d+) files\)",
        "docs/zh/packaging.md": r"约 (\d+) KB（(\d+) 个文件）",
    }
    for page, pattern in pages.items():
        said = re.findall(pattern, (ROOT / page).read_text(encoding="utf-8"))
        assert len(said) == 1, f"{page}: the package's size and file count are not stated once"
        kb, files = map(int, said[0])
        assert files == len(PACKAGE_FILES), f"{page} says {files} files, the package has {len(PACKAGE_FILES)}"
        assert abs(kb * 1024 - built.size) <= built.size * 0.1, (
            f"{page} says about {kb} KB, the package is {built.size} bytes"
        )


def test_the_package_readme_is_the_short_user_page_not_the_developer_readme(built):
    with zipfile.ZipFile(built.path) as archive:
        readme = archive.read("README.md").decode("utf-8")
        readme_zh = archive.read("readme/README_zh_Hans.md").decode("utf-8")
    assert readme == (ROOT / "plugin_readme" / "README.md").read_text(encoding="utf-8")
    assert readme_zh == (ROOT / "plugin_readme" / "README_zh_Hans.md").read_text(encoding="utf-8")
    assert readme != (ROOT / "README.md").read_text(encoding="utf-8") and len(readme) < 5000
    for text in (readme, readme_zh):
        assert "filter_chunks" in text and "merge_chunks" in text and "validate_citations" in text
        assert "/gcite/chat" in text and "README.zh-CN.md" in text and "README.md" in text
        for word in ("design", "§", "appendix", "附录", "设计文档"):
            assert word not in text
    assert re.search(r"[\u4e00-\u9fff]", readme_zh) and not re.search(r"[\u4e00-\u9fff]{20}", readme)


def test_readme_files_are_renamed_as_the_daemon_expects(tmp_path):
    for name in (
        "manifest.yaml",
        "README.md",
        "plugin_readme/README.md",
        "plugin_readme/README_zh_Hans.md",
        "plugin_readme/README_ja_JP.md",
        "plugin_readme/notes.md",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    (tmp_path / ".difyignore").write_text(".difyignore\n/README.md\n")
    entries = package_entries(tmp_path)
    assert list(entries) == [
        "README.md",
        "manifest.yaml",
        "plugin_readme/notes.md",
        "readme/README_ja_JP.md",
        "readme/README_zh_Hans.md",
    ]
    assert entries["README.md"].read_text() == "plugin_readme/README.md"
    assert all(source_of(name) == str(path.relative_to(tmp_path)) for name, path in entries.items())
    (tmp_path / ".difyignore").write_text(".difyignore\n")  # the developer README would collide with the user one
    with pytest.raises(PackageError, match="README.md"):
        package_entries(tmp_path)


def test_minimum_dify_version_is_the_newest_feature_used():
    manifest = safe_load((ROOT / "manifest.yaml").read_text(encoding="utf-8"))
    # hidden Start fields (`hide: true`, user_roles) came in Dify 1.4.0; metadata filtering 1.1.0; endpoints 1.0.0
    assert manifest["meta"]["minimum_dify_version"] == "1.4.0"
    for dsl in (ROOT / "dsl").glob("*.yml"):
        start = next(
            n["data"]
            for n in safe_load(dsl.read_text(encoding="utf-8"))["workflow"]["graph"]["nodes"]
            if n["data"]["type"] == "start"
        )
        assert [v["hide"] for v in start["variables"]] in ([True], [True, True])  # user_roles (, citation_style)
    for readme in ("README.md", "README.zh-CN.md", "plugin_readme/README.md", "plugin_readme/README_zh_Hans.md"):
        assert "1.4.0" in (ROOT / readme).read_text(encoding="utf-8"), readme


def test_identifier_is_what_the_daemon_computes_on_upload(built):
    manifest = safe_load((ROOT / "manifest.yaml").read_text())
    assert built.identifier.startswith(f"{manifest['author']}/{manifest['name']}:{manifest['version']}@")
    assert identifier_of_package(built.path) == built.identifier
    import re

    assert re.fullmatch(
        r"(?:([a-z0-9_-]{1,64})/)?([a-z0-9_-]{1,255}):([0-9]{1,4})(\.[0-9]{1,4}){1,3}(-\w{1,16})?"
        r"@[a-f0-9]{32,64}",
        built.identifier,
    )


def test_checksum_depends_on_paths_and_contents_not_on_order():
    a = {"a.txt": b"1", "b/c.txt": b"2"}
    assert checksum(a) == checksum(dict(reversed(list(a.items()))))
    assert checksum(a) != checksum({"a.txt": b"1", "b/c.txt": b"3"})
    assert checksum(a) != checksum({"a2.txt": b"1", "b/c.txt": b"2"})
    import hashlib

    expected = hashlib.sha256(b"".join(hashlib.sha256(x).digest() for x in (b"a.txt", b"1", b"b/c.txt", b"2")))
    assert checksum(a) == expected.hexdigest()


def test_ignore_rules_follow_the_daemon(tmp_path):
    for name in ("keep.py", "skip.log", "sub/keep.txt", "sub/deep/skip.log", "build/x.py", "notes/a.md", "notes/b.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / ".gitignore").write_text("*.md\n")
    (tmp_path / ".difyignore").write_text("# comment\n*.log\nbuild/\nnotes/\n!notes/a.md\n")
    assert collect_files(tmp_path) == [".difyignore", ".gitignore", "keep.py", "sub/keep.txt"]
    (tmp_path / ".difyignore").unlink()  # falls back to .gitignore
    assert "notes/a.md" not in collect_files(tmp_path) and "skip.log" in collect_files(tmp_path)


# --- bad plugin trees: one error per problem, no package ------------------------------------------------


def plugin_copy(tmp_path: Path) -> Path:
    root = tmp_path / "plugin"
    for name in [".difyignore"] + [source_of(n) for n in package_entries(ROOT)]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root / name)
    return root


def edit_yaml(path: Path, change) -> None:
    data = safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, allow_unicode=True))


def test_a_bad_tree_gets_one_error_per_problem_and_no_package(tmp_path):
    root = plugin_copy(tmp_path)
    edit_yaml(root / "manifest.yaml", lambda m: m.update(author="GCite", version="1.0"))
    (root / "_assets/icon.svg").unlink()
    (root / "requirements.txt").unlink()
    edit_yaml(root / "tools/merge_chunks.yaml", lambda t: t["parameters"][0].update(type="integer"))
    with (root / ".difyignore").open("a") as f:
        f.write("tools/filter_chunks.py\n")
    with open(root / "big.bin", "wb") as f:
        f.truncate(51 * 1024 * 1024)  # sparse: large on paper only
    out = tmp_path / "dist"
    with pytest.raises(PackageError) as caught:
        build(root, out)
    problems = caught.value.problems
    expected = [
        "author 'GCite'",
        "version '1.0'",
        "the icon _assets/icon.svg",
        "the dependency file requirements.txt",
        "tools/merge_chunks.yaml: parameters.0.type",
        "the tool class tools/filter_chunks.py",
        "uncompressed",
    ]
    for fragment in expected:
        assert sum(fragment in p for p in problems) >= 1, (fragment, problems)
    assert not out.exists() or not list(out.iterdir())


def test_a_good_copy_builds(tmp_path):
    root = plugin_copy(tmp_path)
    package = build(root, tmp_path / "dist")
    assert package.path.exists()


def test_cli_reports_problems_and_exits_non_zero(tmp_path):
    root = plugin_copy(tmp_path)
    edit_yaml(root / "manifest.yaml", lambda m: m.update(author="Bad Author"))
    script = (
        "import sys; from pathlib import Path; import gcite, gcite.cli.main as m; "
        f"gcite.ROOT = Path({str(root)!r}); sys.exit(m.main(['package', '--no-dsl-update']))"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "error: manifest.yaml: author 'Bad Author'" in done.stderr and "no package written" in done.stderr


# --- DSL dependencies stay in step ---------------------------------------------------------------------


def test_update_rewrites_stale_identifiers_only_for_this_plugin(tmp_path):
    stale = "gcite/gcite:0.0.9@" + "0" * 64
    other = "langgenius/tavily:0.1.2@" + "a" * 64
    (tmp_path / "flow.yml").write_text(
        f"dependencies:\n- type: package\n  value:\n    plugin_unique_identifier: {stale}\n"
        f"- value:\n    plugin_unique_identifier: {other}\n"
    )
    fresh = "gcite/gcite:0.1.0@" + "b" * 64
    assert update_dsl_dependencies(tmp_path, fresh) == [tmp_path / "flow.yml"]
    text = (tmp_path / "flow.yml").read_text()
    assert plugin_references(text, "gcite", "gcite") == [fresh] and other in text
    assert update_dsl_dependencies(tmp_path, fresh) == []


DSL_FILES = sorted((ROOT / "dsl").glob("*.yml"))


@pytest.mark.parametrize("dsl", DSL_FILES, ids=[p.name for p in DSL_FILES])
def test_dsl_dependency_is_the_current_package(dsl, built):
    references = plugin_references(dsl.read_text(encoding="utf-8"), "gcite", "gcite")
    for reference in references:
        assert reference == built.identifier, f"{dsl.name} names a stale package: run `make package`"


# --- loaded and run as Dify runs it ------------------------------------------------------------------------


def test_registration_in_a_python_with_only_the_requirements(unpacked, python):
    script = (
        "import json; from dify_plugin import DifyPluginEnv; "
        "from dify_plugin.core.plugin_registration import PluginRegistration as R; r = R(DifyPluginEnv()); "
        "print(json.dumps(sorted(t.identity.name for p in r.tools_configuration for t in p.tools)))"
    )
    done = subprocess.run([python, "-c", script], cwd=unpacked, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [
        "cited_answer",
        "filter_chunks",
        "merge_chunks",
        "validate_citations",
        "web_search",
    ]


def test_stdio_starts_with_the_manifest(plugin):
    manifest = safe_load((ROOT / "manifest.yaml").read_text())
    assert plugin.manifest["name"] == manifest["name"] and plugin.manifest["author"] == manifest["author"]
    assert plugin.manifest["version"] == str(manifest["version"])


def test_every_tool_invoked_over_stdio(plugin):
    web = WEB_SHAPES["bocha_raw"][0]
    merged = plugin.call_tool("gcite", "merge_chunks", {"rag_chunks": RAG, "web_chunks": web, "max_web_results": 3})
    assert merged.error is None and merged.ends == 1
    assert merged.variables == json.loads(json.dumps(merge_chunks.main(RAG, web, 3)))
    answer = "巡更先打卡[C:1]，网页说[C:3]，另见[C:9]。"
    checked = plugin.call_tool(
        "gcite", "validate_citations", {"answer": answer, "chunk_metadata": merged.variables["chunk_metadata"]}
    )
    assert checked.variables == validate_citations.main(answer, merged.variables["chunk_metadata"])
    assert checked.variables["answer"] == "巡更先打卡[1]，网页说[2]，另见。"
    filtered = plugin.call_tool("gcite", "filter_chunks", {"rag_chunks": RAG, "user_roles": "物业经理"})
    assert filtered.variables == json.loads(json.dumps(filter_chunks.main(RAG, "物业经理")))
    assert [c["metadata"]["segment_id"] for c in filtered.variables["chunks"]] == ["s1"]


@pytest.mark.parametrize(
    "tool,parameters,message",
    [
        ("merge_chunks", {"rag_chunks": "{broken"}, "rag_chunks"),
        ("merge_chunks", {"max_chunks": -3}, "max_chunks"),
        ("validate_citations", {"answer": "x", "chunk_metadata": [{"id": "one"}]}, "chunk_metadata[0]"),
        ("filter_chunks", {"rag_chunks": [], "condition": '{"op": "gt"}'}, "field"),
        ("filter_chunks", {"rag_chunks": [], "user_roles": '["a"'}, "user_roles"),
        ("no_such_tool", {}, "no_such_tool"),
    ],
)
def test_bad_input_is_an_error_event_and_the_process_stays_up(plugin, tool, parameters, message):
    session = plugin.call_tool("gcite", tool, parameters)
    assert session.error is not None and message in session.error["message"]
    assert session.variables == {}
    assert plugin.alive
    assert plugin.call_tool("gcite", "validate_citations", {"answer": "ok[C:1]"}).variables["answer"] == "ok[1]"


def test_two_hundred_concurrent_invocations_on_one_connection(plugin):
    ids = [
        plugin.invoke_tool("gcite", "validate_citations", {"answer": f"n{i}[C:{i}]", "chunk_metadata": None})
        for i in range(200)
    ]
    sessions = plugin.wait(ids, timeout=120)
    for i, session in enumerate(sessions):
        assert session.session_id == ids[i] and session.ends == 1 and session.error is None
        assert session.variables["answer"] == f"n{i}[1]"
        assert session.variables["id_map"] == {str(i): 1}
    assert plugin.stray == []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serverless_mode_health_and_invoke(unpacked, python):
    port = free_port()
    env = {**os.environ, "INSTALL_METHOD": "serverless", "SERVERLESS_HOST": "127.0.0.1", "SERVERLESS_PORT": str(port)}
    process = subprocess.Popen(
        [python, "-m", "main"], cwd=unpacked, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                health = requests.get(f"{base}/health", timeout=2)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline and process.poll() is None, "serverless mode did not start"
                time.sleep(0.2)
        assert (health.status_code, health.text) == (200, "OK")
        body = {
            "session_id": "srv-1",
            "event": "request",
            "data": {
                "type": "tool",
                "action": "invoke_tool",
                "user_id": "u",
                "provider": "gcite",
                "tool": "validate_citations",
                "credentials": {},
                "credential_type": "api-key",
                "tool_parameters": {"answer": "a[C:2]"},
            },
        }
        response = requests.post(f"{base}/invoke", json=body, timeout=30)
        events = [json.loads(line) for line in response.text.splitlines() if line.strip()]
        variables = {
            e["data"]["data"]["message"]["variable_name"]: e["data"]["data"]["message"]["variable_value"]
            for e in events
            if e["data"]["type"] == "stream"
        }
        assert variables["answer"] == "a[1]"
        assert events[-1]["data"]["type"] == "end" and all(e["session_id"] == "srv-1" for e in events)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_packaged_files_that_git_does_not_track_are_reported(tmp_path):
    from gcite.cli.build import untracked

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "kept.py").write_text("x")
    (tmp_path / "stray.txt").write_text("y")
    subprocess.run(["git", "add", "kept.py"], cwd=tmp_path, check=True)
    assert untracked(tmp_path, ["kept.py", "stray.txt"]) == ["stray.txt"]


def test_a_symlinked_file_outside_the_tree_is_refused(tmp_path):
    outside = tmp_path / "home" / ".netrc"
    outside.parent.mkdir()
    outside.write_text("machine example.com login me password hunter2hunter2\n")
    root = tmp_path / "plugin"
    root.mkdir()
    (root / "keep.py").write_text("x = 1\n")
    (root / "inside.py").symlink_to(root / "keep.py")  # a link within the tree is packaged as its target's content
    assert collect_files(root) == ["inside.py", "keep.py"]
    (root / ".netrc").symlink_to(outside)
    with pytest.raises(PackageError) as raised:
        collect_files(root)
    assert raised.value.problems == [
        f".netrc: a symlink to {outside}, outside the plugin tree: packaging it would "
        f"ship that file of this machine (replace the link with the file, or list it "
        f"in .difyignore)"
    ]
    (root / ".difyignore").write_text(".netrc\n")
    assert ".netrc" not in collect_files(root)
    (root / "dangling.py").symlink_to(tmp_path / "gone.py")
    with pytest.raises(PackageError, match="dangling.py: a symlink"):
        collect_files(root)
