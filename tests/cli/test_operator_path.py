"""docs/install.md's operator steps, run as written in a fresh clone of this commit: `gcite keygen` puts the key in
the per-user folder and nothing in the tree, `package --sign … --dsl-out …` writes the chatflows elsewhere, and
afterwards the clone's `git status` is clean and its DSL drift test still passes."""

import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

BLOCK = re.compile(r"<!-- operator steps:.*?-->\n```bash\n(.*?)```", re.S)


def documented_steps(page: str = "docs/install.md") -> list[list[str]]:
    found = BLOCK.search((ROOT / page).read_text(encoding="utf-8"))
    assert found, f"{page}: no operator-steps block"
    return [shlex.split(line) for line in found.group(1).splitlines() if line.strip()]


def test_the_chinese_page_documents_the_same_steps():
    assert documented_steps("docs/zh/install.md") == documented_steps()


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    base = tmp_path_factory.mktemp("operator")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(ROOT), str(base / "gcite")], check=True)
    subprocess.run(["git", "checkout", "-q", head.stdout.strip()], cwd=base / "gcite", check=True)
    home = base / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CONFIG_HOME", "PYTHONPATH")}
    env.update(HOME=str(home), PYTHONDONTWRITEBYTECODE="1")
    return base / "gcite", home, env


def run_step(argv: list[str], cwd: Path, home: Path, env: dict) -> subprocess.CompletedProcess:
    assert argv[0] == "gcite", argv
    argv = [sys.executable, "-m", "gcite"] + [str(home) + a[1:] if a.startswith("~/") else a for a in argv[1:]]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_documented_steps_leave_the_clone_clean(clone):
    tree, home, env = clone
    steps = documented_steps()
    assert [s[:2] for s in steps] == [["gcite", "keygen"], ["gcite", "package"], ["gcite", "verify"]]
    done = [run_step(step, tree, home, env) for step in steps]
    for step, result in zip(steps, done):
        assert result.returncode == 0, (step, result.stdout, result.stderr)
    keys = home / ".config" / "gcite" / "keys"
    private = keys / "gcite_signing_key.private.pem"
    assert stat.S_IMODE(keys.stat().st_mode) == 0o700 and stat.S_IMODE(private.stat().st_mode) == 0o600
    assert done[0].stdout.startswith(f"private key: {private} (mode 0600)")
    identifier = re.search(r"^identifier: (\S+)$", done[1].stdout, re.M).group(1)
    chatflows = sorted((home / "gcite-dsl").glob("*.yml"))
    assert [p.name for p in chatflows] == sorted(p.name for p in (tree / "dsl").glob("*.yml"))
    assert identifier in (home / "gcite-dsl" / "gcite_chatflow.yml").read_text(encoding="utf-8")
    assert done[2].stdout.startswith("verified by ")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored=no"], cwd=tree, capture_output=True, text=True, check=True
    )
    assert status.stdout == "", status.stdout
    assert not list(tree.rglob("*.pem")) or all("fixtures" in p.parts for p in tree.rglob("*.pem"))
    # the tests that read dsl/ still pass in the clone (the drift test builds the package again)
    drift = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/release/test_package.py",
            "-k",
            "test_dsl_dependency_is_the_current_package",
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert drift.returncode == 0 and " passed" in drift.stdout, drift.stdout[-2000:]
    assert subprocess.run(["git", "status", "--porcelain"], cwd=tree, capture_output=True, text=True).stdout == ""


def test_keygen_never_writes_into_the_plugin_tree(clone, tmp_path):
    tree, home, env = clone
    inside = run_step(["gcite", "keygen", "--out", "mykey"], tree, home, env)
    assert inside.returncode == 2 and inside.stderr.startswith("error: --out mykey: inside the plugin tree")
    env = {**env, "XDG_CONFIG_HOME": str(tree / "conf")}
    via_xdg = run_step(["gcite", "keygen"], tree, home, env)
    assert via_xdg.returncode == 2 and "inside the plugin tree" in via_xdg.stderr and not (tree / "conf").exists()
    env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")
    (tmp_path / "xdg" / "gcite" / "keys").mkdir(parents=True, mode=0o755)
    (tmp_path / "xdg" / "gcite" / "keys").chmod(0o755)
    made = run_step(["gcite", "keygen"], tree, home, env)
    assert made.returncode == 0, made.stderr
    assert stat.S_IMODE((tmp_path / "xdg" / "gcite" / "keys").stat().st_mode) == 0o700
    again = run_step(["gcite", "keygen"], tree, home, env)
    assert again.returncode == 2 and "already exists" in again.stderr
