"""The JS client (clients/js/, @gcite/client) in Node: its tests (tests/js/client.test.mjs, `node --test`) against a
real `gcite serve` started here with --allow-origin and --secret-file, and the package as an app installs it:
`npm pack`, then `npm install <tarball>` into a fresh project, offline, and an import."""

import json
import os
import re
import shutil
import subprocess

import pytest

from tests.support import ROOT
from tests.support.serve_process import gcite_serve, private_secret_file

APP = "http://localhost:3000"
CLIENT = ROOT / "clients" / "js"


def tool(name: str) -> str:
    """The path of `node` or `npm` (Node 20 or later); skipped where it is missing, except in CI, where it fails."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is not installed (Node 20 or later: Debian's nodejs package, or nodejs.org)")
        pytest.skip(f"{name} is not installed")
    if name == "node":
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        assert int(version.lstrip("v").split(".")[0]) >= 20, f"the JS client needs Node 20 or later, found {version}"
    return path


def summary(output: str) -> dict[str, int]:
    """node --test's closing counts (# tests 21, # pass 21, …)."""
    return {name: int(n) for name, n in re.findall(r"^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$", output, re.M)}


def test_the_client_in_node_against_gcite_serve(tmp_path):
    node = tool("node")
    secret = private_secret_file(tmp_path, "a-local-secret-for-the-js-client-tests-" + "0" * 16)
    with gcite_serve("--pace", "0", "--allow-origin", APP, "--secret-file", str(secret)) as served:
        env = {
            **os.environ,
            "GCITE_CHAT_URL": served["chat"],
            "GCITE_USERS_URL": f"{served['origin']}/local/users",
            "GCITE_SECRET_FILE": str(secret),
            "GCITE_APP_ORIGIN": APP,
            "NO_COLOR": "1",
        }
        done = subprocess.run(
            [node, "--test", "--test-reporter=tap", "tests/js/"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    counts = summary(done.stdout)
    assert done.returncode == 0 and counts.get("fail") == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "# SKIP" not in done.stdout  # the tests against gcite serve ran
    written = re.findall(r"^\s*it\(", (ROOT / "tests/js/client.test.mjs").read_text(encoding="utf-8"), re.M)
    assert counts["tests"] == counts["pass"] == len(written), counts


def test_npm_pack_gives_a_tarball_a_fresh_project_installs_offline_and_imports(tmp_path):
    node, npm = tool("node"), tool("npm")
    cache = tmp_path / "npm-cache"  # nothing from the user's npm cache, nothing from the registry
    npm_env = {
        **os.environ,
        "npm_config_cache": str(cache),
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
    }
    packed = subprocess.run(
        [npm, "pack", "--json", "--pack-destination", str(tmp_path)],
        cwd=CLIENT,
        env=npm_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert packed.returncode == 0, packed.stderr
    info = json.loads(packed.stdout)[0]
    assert sorted(f["path"] for f in info["files"]) == [
        "README.md",
        "gcite-client.d.ts",
        "gcite-client.js",
        "package.json",
    ]
    tarball = tmp_path / info["filename"]
    assert tarball.is_file() and not list(CLIENT.glob("*.tgz"))  # nothing left in the tree

    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text(
        json.dumps({"name": "an-app", "version": "1.0.0", "private": True, "type": "module"})
    )
    installed = subprocess.run(
        [npm, "install", "--offline", str(tarball)], cwd=app, env=npm_env, capture_output=True, text=True, timeout=120
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    package = app / "node_modules" / "@gcite" / "client"
    assert (package / "gcite-client.d.ts").is_file()
    assert json.loads((package / "package.json").read_text())["types"] == "./gcite-client.d.ts"

    (app / "main.js").write_text(
        """
import { Chat, collect, readEvents, safeUrl } from "@gcite/client";
const body = ': open\\n\\nevent: ready\\ndata: {}\\n\\nevent: text\\ndata: {"text":"答案"}\\n\\n'
  + 'event: cite\\ndata: {"numbers":[1],"ids":["4"],"new":[1]}\\n\\n'
  + 'event: done\\ndata: {"status":"cited","citations":[],"invalid_ids":[],"conversation":"h","message_id":"m"}\\n\\n';
const result = await collect(readEvents(new Response(body)));
console.log(JSON.stringify({ answer: result.answer, status: result.status, chat: typeof Chat,
                             url: safeUrl("javascript:alert(1)") }));
""",
        encoding="utf-8",
    )
    ran = subprocess.run([node, "main.js"], cwd=app, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"answer": "答案[1]", "status": "cited", "chat": "function", "url": ""}
