"""The Marketplace's automated checks on the package, the publisher's details, and a signed release."""

import zipfile
from pathlib import Path

import pytest
import yaml

from gcite.release import marketplace, secret_scan, signing
from gcite.release.marketplace import Finding, check, publish, release
from tests.support import ROOT
from tests.support.yamltext import safe_load

REPO = "https://github.com/example-org/gcite"
CONTACT = "maintainer@example.org"


def errors(findings: list[Finding]) -> list[str]:
    return [str(f) for f in findings if f.error]


def warnings(findings: list[Finding]) -> list[str]:
    return [str(f) for f in findings if not f.error]


def entries_of(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    return release(ROOT, tmp_path_factory.mktemp("dist"), repo=REPO, contact=CONTACT, marketplace=True)


@pytest.fixture(scope="module")
def clean_entries(published):
    return entries_of(published.path)


def facts(entries):
    return marketplace.plugin_privacy_facts(safe_load(entries["manifest.yaml"]))


# --- the tree as it is --------------------------------------------------------------------------------------


def test_the_tree_passes_every_rule_with_a_repository_and_a_contact(published, clean_entries):
    assert published.path is not None and errors(published.findings) == []
    assert warnings(published.findings) == []  # nothing for a reviewer to ask about on the happy path
    manifest = safe_load(clean_entries["manifest.yaml"])
    assert manifest["repo"] == REPO and manifest["contact"] == CONTACT
    assert REPO in clean_entries["README.md"].decode() and CONTACT in clean_entries["README.md"].decode()
    assert REPO in clean_entries["readme/README_zh_Hans.md"].decode()
    assert published.identifier.startswith("gcite/gcite:") and not published.signed
    # the tree's own files do not carry anyone's address: the publisher gives it
    assert "repo:" not in (ROOT / "manifest.yaml").read_text(encoding="utf-8")


def test_without_marketplace_a_missing_repo_and_contact_only_warn(tmp_path):
    built = release(ROOT, tmp_path)
    assert built.path is not None and errors(built.findings) == []
    assert any("repo is missing" in w for w in warnings(built.findings))
    assert any("contact is missing" in w for w in warnings(built.findings))
    assert "repo" not in safe_load(entries_of(built.path)["manifest.yaml"])


def test_for_the_marketplace_a_missing_repo_and_contact_are_errors(tmp_path):
    built = release(ROOT, tmp_path, marketplace=True)
    assert built.path is None and not list(tmp_path.iterdir())
    assert (
        "error: [manifest] manifest.yaml: repo is missing (give --repo URL: the project's public repository)"
        in errors(built.findings)
    )
    assert any("contact is missing" in e for e in errors(built.findings))
    assert any("README.md names no source repository" in e for e in errors(built.findings))


@pytest.mark.parametrize(
    "repo, contact, expected",
    [
        ("https://example.com/me/gcite", None, "--repo 'https://example.com/me/gcite': expected a repository URL on"),
        ("github.com/me/gcite", None, "expected a repository URL"),
        ("https://github.com/", None, "expected a repository URL"),
        (None, "maintainer at example.org", "--contact 'maintainer at example.org': expected an e-mail address"),
    ],
)
def test_a_bad_repo_or_contact_is_refused_before_anything_is_built(tmp_path, repo, contact, expected):
    with pytest.raises(ValueError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        release(ROOT, tmp_path, repo=repo, contact=contact)
    assert not list(tmp_path.iterdir())


def test_a_signed_release_verifies_with_the_publishers_key(tmp_path):
    pair = signing.generate_key_pair(tmp_path / "publisher")
    built = release(
        ROOT,
        tmp_path / "dist",
        repo=REPO,
        contact=CONTACT,
        private_key=signing.read_private_key(pair.private),
        category="community",
    )
    assert built.path.name == "gcite-0.1.0.signed.difypkg" and built.signed
    result = signing.verify_file(built.path, [pair.public])
    assert result.verified and result.key == str(pair.public) and result.category == "community"
    assert list(entries_of(built.path))[-1] == signing.VERIFICATION_FILE
    from gcite.release.package import identifier_of_package

    assert built.identifier == identifier_of_package(built.path)  # the verification entry is part of the checksum


# --- each rule, on entries that break it ------------------------------------------------------------------


def test_todays_tree_names_every_rule_it_breaks(clean_entries):
    """The package as it was before issue 21: each problem is one line naming its rule."""
    manifest = safe_load(clean_entries["manifest.yaml"])
    for key in ("repo", "contact"):
        manifest.pop(key)
    manifest["author"] = "difyfan"
    manifest["meta"].pop("minimum_dify_version")
    old = {
        "manifest.yaml": yaml.safe_dump(manifest).encode(),
        "requirements.txt": b"dify_plugin==0.10.2\npyjwt\nrequests>=2.32\n",
        "README.md": clean_entries["README.md"]
        .decode()
        .split("## Source code and support")[0]
        .replace("Chinese:", "\u7b80\u4f53\u4e2d\u6587:")
        .encode(),
        "PRIVACY.md": b"# Privacy\n\nThe Web search tool sends the query to Bocha, Tavily, Baidu AI Search, SerpAPI"
        b" or SearXNG.\n",
        "_assets/icon.svg": marketplace.TEMPLATE_ICON.encode(),
        "notes/debug.log": b"started\n",
        "tools/.env.local": b"X=1\n",
        "tests/fixture.py": b'TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX3BhcnQ"\n',
    }
    findings = check({**clean_entries, **old}, marketplace=True, facts=facts(clean_entries))
    lines = errors(findings)
    expected = {
        "manifest": ["meta.minimum_dify_version is required", "repo is missing", "contact is missing"],
        "author": ["author 'difyfan' must not contain 'dify'"],
        "icon": ["_assets/icon.svg is the plugin template's default icon"],
        "dependencies": [
            "requirements.txt:1 'dify_plugin==0.10.2': write dify-plugin>=X,<Y",
            "requirements.txt:2 'pyjwt': no version constraint",
            "requirements.txt:3 'requests>=2.32': unbounded above",
        ],
        "readme": ["README.md must be English only", "README.md names no source repository"],
        "privacy": [
            "does not say that web search sends the query to Brave Search",
            "does not say that the endpoint sends the question to the Dify app",
            "does not say what the plugin stores",
        ],
        "contents": ["notes/debug.log: a forbidden file type (.log)", "tools/.env.local: a forbidden file"],
        "secrets": ["tests/fixture.py:1: a JWT-shaped token"],
    }
    for rule, fragments in expected.items():
        for fragment in fragments:
            assert any(line.startswith(f"error: [{rule}] ") and fragment in line for line in lines), (rule, fragment)
    assert len(lines) == sum(map(len, expected.values())), lines
    assert all("\n" not in line for line in lines)
    assert "eyJhbGciOiJIUzI1NiJ9" not in "\n".join(lines)  # a secret is named, never repeated


@pytest.mark.parametrize(
    "line, problem",
    [
        ("dify-plugin>=0.10.2,<0.11", None),
        ("dify-plugin>=0.9.0,<1", None),
        ("dify_plugin>=0.5.0,<0.6", "dify-plugin must be >= 0.9.0"),
        ("dify-plugin~=0.9.0", "~= counts as no version"),
        ("dify-plugin==0.10.2", "write dify-plugin>=X,<Y"),
        ("dify-plugin", "write dify-plugin>=X,<Y"),
        ("dify-plugin>=0.10", "unbounded above"),
    ],
)
def test_the_sdk_requirement(line, problem):
    found = marketplace.check_dependencies({"requirements.txt": f"{line}\nrequests>=2.32,<3\n".encode()})
    assert [f.message for f in found if problem is None or problem in f.message] == (
        [] if problem is None else [f.message for f in found]
    )
    assert bool(found) == (problem is not None)


@pytest.mark.parametrize(
    "line, problem",
    [
        ("requests==2.34.2", None),
        ("requests>=2.32,<3  # HTTP", None),
        ("requests", "no version constraint"),
        ("requests>2", "unbounded above"),
        ("requests @ https://example.com/requests.whl", "direct-URL"),
        ("git+https://github.com/psf/requests", "git and direct-URL"),
        ("-r other.txt", "no options or includes"),
    ],
)
def test_every_other_requirement_is_bounded(line, problem):
    found = marketplace.check_dependencies({"requirements.txt": f"dify-plugin>=0.10.2,<0.11\n{line}\n".encode()})
    assert [problem in f.message for f in found] == ([] if problem is None else [True])


def test_no_requirement_file_or_no_sdk_is_an_error():
    assert "requirements.txt is missing" in marketplace.check_dependencies({})[0].message
    assert (
        "no dify-plugin requirement" in marketplace.check_dependencies({"requirements.txt": b"pyjwt==2\n"})[0].message
    )


@pytest.mark.parametrize(
    "content, shape",
    [
        (b"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n", "a PEM private key block"),
        (b"-----BEGIN RSA PUBLIC KEY-----\nMIIC\n-----END RSA PUBLIC KEY-----\n", "a PEM block"),
        (b"client = OpenAI(api_key='sk-proj-abcdefghijklmnopqrstuvwx')\n", "an OpenAI-style API key"),
        (b"// eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0x.c2lnbmF0dXJlX3BhcnQ\n", "a JWT-shaped token"),
        (b'API_KEY = "Zx9Qm2Lr7Tb4Wc8Yh3Kd6Nf1Pg5Sj0Va"\n', "a secret-looking value given to 'API_KEY'"),
    ],
)
def test_secret_shaped_strings_are_errors(content, shape):
    found = marketplace.check_secrets({"tools/x.py": content})
    assert (
        [f.error for f in found] == [True] and shape in found[0].message and found[0].message.startswith("tools/x.py:1")
    )


@pytest.mark.parametrize(
    "content",
    [
        b'api_key = credentials.get("api_key")\n',  # reading a credential in code
        b'token = "your-token"\n',
        b"max_tokens = 4096\n",
    ],
)
def test_code_that_reads_a_credential_is_not_a_secret(content):
    assert errors(marketplace.check_secrets({"tools/x.py": content})) == []


def test_forbidden_files_and_folders(clean_entries):
    names = {
        ".venv/lib/site.py": "inside a .venv/ folder",
        "tools/__pycache__/x.cpython-312.pyc": "__pycache__",
        ".env": "a forbidden file",
        ".DS_Store": "a forbidden file",
        "keys/me.private.pem": "(.pem)",
        "id_rsa": "a forbidden file",
        "x.pyc": "(.pyc)",
    }
    for name, fragment in names.items():
        found = marketplace.check_contents({**clean_entries, name: b"x"}, None)
        assert [f.message for f in found if f.error] == [next(f.message for f in found if fragment in f.message)], name
    assert errors(marketplace.check_contents({**clean_entries, ".env.example": b"KEY=\n"}, None)) == []
    assert warnings(marketplace.check_contents({**clean_entries, "dist/old.zip": b"x"}, None))


def test_size_and_file_count_limits(clean_entries):
    big = marketplace.check_contents({**clean_entries, "_assets/big.bin": b"\0" * marketplace.MAX_BYTES}, None)
    assert any(f.rule == "size" and "unpacked" in f.message for f in big)
    assert any("the package is" in f.message for f in marketplace.check_contents(clean_entries, marketplace.MAX_BYTES))
    many = {**clean_entries, **{f"data/{n}.txt": b"" for n in range(marketplace.MAX_FILES)}}
    assert any("files; the limit is under 5,000" in f.message for f in marketplace.check_contents(many, None))
    assert errors(marketplace.check_contents(clean_entries, len(b"".join(clean_entries.values())))) == []


def test_the_icon_must_be_our_own(clean_entries):
    marked = f"<svg><!-- {marketplace.TEMPLATE_ICON_MARKER} --></svg>".encode()
    assert (
        "placeholder"
        in marketplace.check_icon(
            {**clean_entries, "_assets/icon.svg": marked}, safe_load(clean_entries["manifest.yaml"])
        )[0].message
    )
    spaced = marketplace.TEMPLATE_ICON.replace("\n", "\n\n  ").encode()
    assert (
        "default icon"
        in marketplace.check_icon(
            {**clean_entries, "_assets/icon.svg": spaced}, safe_load(clean_entries["manifest.yaml"])
        )[0].message
    )
    assert marketplace.check_icon(clean_entries, safe_load(clean_entries["manifest.yaml"])) == []


def test_the_readmes(clean_entries):
    manifest = safe_load(clean_entries["manifest.yaml"])
    fenced = clean_entries["README.md"] + "\n```\n\u5de1\u66f4\n```\n".encode()
    assert "English only" in marketplace.check_readme({**clean_entries, "README.md": fenced}, manifest, True)[0].message
    no_zh = {k: v for k, v in clean_entries.items() if k != "readme/README_zh_Hans.md"}
    assert "Chinese README" in marketplace.check_readme(no_zh, manifest, True)[0].message
    other_repo = {**manifest, "repo": "https://github.com/someone/else"}
    assert "does not name the repository" in marketplace.check_readme(clean_entries, other_repo, True)[0].message


def test_the_privacy_policy_must_exist_and_not_be_the_template(clean_entries):
    assert (
        "missing at the package root"
        in marketplace.check_privacy({k: v for k, v in clean_entries.items() if k != "PRIVACY.md"}, None)[0].message
    )
    assert (
        "placeholder"
        in marketplace.check_privacy({"PRIVACY.md": b"Please fill in the privacy policy."}, None)[0].message
    )
    assert marketplace.check_privacy(clean_entries, facts(clean_entries)) == []


def test_publish_changes_only_the_publishers_lines(clean_entries):
    tree = (ROOT / "manifest.yaml").read_bytes()
    once = publish({"manifest.yaml": tree}, "https://github.com/a/b", None)["manifest.yaml"]
    assert once.startswith(tree) and once[len(tree) :] == b'repo: "https://github.com/a/b"\n'
    twice = publish({"manifest.yaml": once}, "https://gitlab.com/c/d", "x@y.org")["manifest.yaml"]
    assert safe_load(twice)["repo"] == "https://gitlab.com/c/d" and twice.count(b"repo:") == 1
    assert safe_load(twice)["contact"] == "x@y.org"


@pytest.mark.parametrize(
    "name, content, what",
    [
        ("tools/.netrc", b"default\n", "a .netrc"),
        ("_netrc", b"", "a .netrc"),
        ("notes/hosts.txt", b"machine api.example.com\n  login me\n  password s3cr3tvalue\n", ".netrc-shaped"),
        ("conf/config.json", b'{"auths": {"ghcr.io": {"auth": "dXNlcjpwYXNz"}}}', "docker config.json"),
        ("deploy/id_ed25519", b"\x00binary", "SSH private key"),
        ("keys/signing.ppk", b"", "PuTTY"),
        ("a/readme.txt", b"PuTTY-User-Key-File-3: ssh-ed25519\n", "a private key"),
        ("big.txt", b"x" * (2 * 1024 * 1024) + b"\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n", None),
        ("b.asc", b"-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQ\n", "a private key"),
        ("home/.git-credentials", b"https://me:tok@github.com\n", "git's stored credentials"),
    ],
)
def test_credential_files_are_flagged_by_name_and_shape(name, content, what):
    found = [f for f in marketplace.check_secrets({name: content}) if f.error]
    if what is None:  # past the scanned first MiB
        assert found == []
        return
    assert found and found[0].message.startswith(f"{name}: ") and what in found[0].message
    assert "credential file" in found[0].message


@pytest.mark.parametrize(
    "name, content",
    [
        ("dsl/app.json", b'{"auths": "not a docker config"}'),
        ("docs/netrc.md", b"The machine learning model reads a login page\n"),
        ("_assets/icon.svg", b"<svg/>"),
    ],
)
def test_ordinary_files_are_not_credential_files(name, content):
    assert secret_scan.credential_file(name, content) is None
