"""`python -m gcite keygen`, `package --sign / --marketplace` and `verify`, run as an operator and a maintainer run
them (in a subprocess, on a copy of the plugin tree so that dist/ and dsl/ of the checkout stay untouched)."""

import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.yamltext import safe_load

FIXTURES = ROOT / "tests" / "fixtures" / "dify-signing"
REPO = "https://github.com/example-org/gcite"


def gcite(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gcite", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of the repository's tracked files: `python -m gcite` run from it packages it."""
    root = tmp_path_factory.mktemp("tree") / "gcite"
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    for name in filter(None, files.decode().split("\0")):
        if (ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, root / name)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    return root


@pytest.fixture(scope="module")
def keys(tree, tmp_path_factory):
    folder = tmp_path_factory.mktemp("keys")
    done = gcite("keygen", "--out", str(folder / "ops"), cwd=tree)
    assert done.returncode == 0, done.stderr
    return folder / "ops", done.stdout


def test_keygen_says_where_each_key_goes(keys):
    stem, out = keys
    private, public = Path(f"{stem}.private.pem"), Path(f"{stem}.public.pem")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and public.read_bytes().startswith(b"-----BEGIN RSA PUBLIC")
    lines = out.splitlines()
    assert lines[0].startswith(f"private key: {private} (mode 0600). Keep it with you")
    assert (
        lines[1].startswith(f"public key:  {public}.") and "THIRD_PARTY_SIGNATURE_VERIFICATION_PUBLIC_KEYS" in lines[1]
    )


def test_keygen_refuses_to_overwrite(keys, tree):
    stem, _ = keys
    done = gcite("keygen", "--out", str(stem), cwd=tree)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "already exists" in done.stderr


def test_package_sign_then_verify(keys, tree):
    stem, _ = keys
    done = gcite("package", "--sign", f"{stem}.private.pem", cwd=tree)
    assert done.returncode == 0, done.stderr
    lines = dict(
        line.split(":", 1) for line in done.stdout.splitlines() if ":" in line and not line.startswith("updated")
    )
    package = tree / lines["package"].strip()
    identifier = lines["identifier"].strip()
    assert package.name == "gcite-0.1.0.signed.difypkg" and identifier.startswith("gcite/gcite:0.1.0@")
    # dsl/ names the unsigned build and stays as it is; the note says where the operator's chatflows come from
    assert "updated dependency" not in done.stdout and "dsl/ unchanged: it names the unsigned build" in done.stdout
    assert "--dsl-out DIR" in done.stdout and identifier not in (tree / "dsl" / "gcite_chatflow.yml").read_text()
    # only the publisher's details are missing: warnings, not errors
    assert "warning: [manifest] manifest.yaml: repo is missing" in done.stderr and "error:" not in done.stderr
    assert "Warning" not in done.stderr  # no Python warning (gevent's, on importing the SDK) among the command's own
    ok = gcite("verify", str(package), "--key", f"{stem}.public.pem", cwd=tree)
    assert ok.returncode == 0 and ok.stdout.startswith(f"verified by {stem}.public.pem (signed ")
    assert "category: community" in ok.stdout
    official_only = gcite("verify", str(package), cwd=tree)
    assert official_only.returncode == 1 and official_only.stdout.startswith("not verified: the signature does not")
    other = gcite("verify", str(package), "--key", str(FIXTURES / "test_key_pair_1.public.pem"), cwd=tree)
    assert other.returncode == 1


def test_verify_the_marketplace_fixture_names_the_official_key(tree):
    done = gcite("verify", str(FIXTURES / "langgenius-agent_0.0.14.difypkg"), cwd=tree)
    assert done.returncode == 0 and done.stdout.startswith("verified by Dify's official key (signed 2025-04-14")
    unsigned = gcite("verify", str(FIXTURES / "dummy_plugin.difypkg"), cwd=tree)
    assert unsigned.returncode == 1 and "unsigned" in unsigned.stdout


@pytest.mark.parametrize(
    "args, expected",
    [
        (["package", "--category", "partner"], "error: --category is recorded in the signature: it needs --sign"),
        (["package", "--marketplace", "--sign", "x.pem"], "error: --marketplace packages are submitted unsigned"),
        (
            ["package", "--repo", "https://example.com/x/y"],
            "error: --repo 'https://example.com/x/y': expected a repository URL on github.com",
        ),
        (["package", "--contact", "nobody"], "error: --contact 'nobody': expected an e-mail address"),
        (["package", "--sign", "missing.private.pem"], "error: --sign missing.private.pem: cannot read (No such file"),
        (["verify", "nothing.difypkg"], "error: nothing.difypkg: cannot read (No such file"),
    ],
)
def test_bad_options_are_one_line_errors(tree, args, expected):
    done = gcite(*args, cwd=tree)
    assert done.returncode == 2 and done.stderr.startswith(expected) and done.stderr.count("\n") == 1, done.stderr


def test_a_key_in_the_wrong_format_is_one_line(tree, tmp_path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "pkcs8.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    (tmp_path / "pkcs8.pem").chmod(0o600)
    done = gcite("package", "--sign", str(tmp_path / "pkcs8.pem"), cwd=tree)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "'PRIVATE KEY' PEM block, the daemon reads only 'RSA PRIVATE KEY'" in done.stderr
    (tmp_path / "spki.pem").write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    done = gcite("verify", str(FIXTURES / "dummy_plugin.difypkg"), "--key", str(tmp_path / "spki.pem"), cwd=tree)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "'PUBLIC KEY' PEM block" in done.stderr


def test_marketplace_without_repo_names_each_broken_rule_and_writes_nothing(tree):
    done = gcite("package", "--marketplace", "--out", "dist-market", cwd=tree)
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        "error: [manifest] manifest.yaml: repo is missing (give --repo URL: the project's public repository)",
        "error: [manifest] manifest.yaml: contact is missing (give --contact EMAIL)",
        "error: [readme] README.md names no source repository (give --repo URL)",
    ]
    assert done.stderr.splitlines()[-1] == "no package written (3 Marketplace rule(s) broken)"
    assert not (tree / "dist-market").exists()


def test_marketplace_with_repo_and_contact_passes(tree):
    before = (tree / "dsl" / "gcite_chatflow.yml").read_text(encoding="utf-8")
    done = gcite(
        "package", "--marketplace", "--repo", REPO, "--contact", "dev@example.org", "--out", "submit", cwd=tree
    )
    assert done.returncode == 0, done.stderr
    assert "error:" not in done.stderr
    package = tree / "submit" / "gcite-0.1.0.difypkg"
    with zipfile.ZipFile(package) as archive:
        manifest = safe_load(archive.read("manifest.yaml"))
        assert archive.comment == b""  # unsigned
    assert manifest["repo"] == REPO and manifest["contact"] == "dev@example.org"
    assert (tree / "dsl" / "gcite_chatflow.yml").read_text(encoding="utf-8") == before
    assert "dsl/ not updated" in done.stdout


def test_the_front_pages_send_the_operator_to_the_install_guide_and_no_other_tool():
    for page, guide in (("README.md", "docs/install.md"), ("README.zh-CN.md", "docs/zh/install.md")):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert f"]({guide})" in text and "dify signature" not in text and "dify-plugin-daemon/releases" not in text


@pytest.mark.parametrize("page", ["docs/packaging.md", "docs/zh/packaging.md", "docs/install.md", "docs/zh/install.md"])
def test_installing_needs_no_other_tool(page):
    """keygen → package --sign → the daemon's two settings → upload, in that order, and no download of the Go CLI."""
    text = (ROOT / page).read_text(encoding="utf-8")
    assert "dify signature" not in text and "dify-plugin-daemon/releases" not in text
    steps = [
        "gcite keygen",
        "package --sign",
        "THIRD_PARTY_SIGNATURE_VERIFICATION_ENABLED",
        "THIRD_PARTY_SIGNATURE_VERIFICATION_PUBLIC_KEYS",
        "signed.difypkg",
    ]
    assert all(step in text for step in steps), page
    at = 0
    for step in steps:  # each step named after the one before it
        at = text.find(step, at)
        assert at >= 0, (page, step)
    if page.endswith("install.md"):
        assert "extraEnv" in text and "docker-compose.override.yaml" in text  # Helm and docker compose


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_key_others_can_read_is_refused(keys, tree, tmp_path, mode):
    stem, _ = keys
    key = tmp_path / "open.private.pem"
    shutil.copyfile(f"{stem}.private.pem", key)
    key.chmod(mode)
    done = gcite("package", "--sign", str(key), "--out", str(tmp_path / "dist"), cwd=tree)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: --sign {key}: mode {mode:04o}") and f"chmod 600 {key}" in done.stderr
    assert not (tmp_path / "dist").exists() and "BEGIN" not in done.stderr + done.stdout
