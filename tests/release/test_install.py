"""`pip install .` and `pip install ./clients/python`, each into a fresh venv, offline: wheels built from the working
tree with the backend already installed (--no-build-isolation, --no-index), then run from another folder.

The command's requirements are not downloaded: the fresh venv reads them from this Python's site-packages through a
.pth line (a path line: that folder's own .pth files, an editable gcite among them, are not processed). The client's
venv sees only `requests` and what requests imports, so it proves the client needs nothing else."""

import json
import os
import subprocess
import sys
import sysconfig
import urllib.request
import venv
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.serve_process import gcite_serve

SITE = Path(sysconfig.get_paths()["purelib"])
REQUESTS = ("requests", "urllib3", "idna", "charset_normalizer", "certifi")


def run(argv, cwd, **kwargs):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(
        argv,
        cwd=cwd,
        env={**env, **kwargs.pop("env", {})},
        capture_output=True,
        text=True,
        timeout=kwargs.pop("timeout", 300),
        **kwargs,
    )


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheels")
    built = run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(out),
            str(ROOT),
            str(ROOT / "clients" / "python"),
        ],
        cwd=out,
    )
    assert built.returncode == 0, built.stderr[-2000:] + "\n(hatchling is in requirements-dev.txt: make venv)"
    return {p.name.split("-")[0]: p for p in out.glob("*.whl")}


def fresh_venv(folder: Path, wheel: Path, site_lines: list[str]) -> Path:
    venv.create(folder, with_pip=False, symlinks=True)
    python = folder / "bin" / "python"
    installed = run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        cwd=folder,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    purelib = run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=folder)
    (Path(purelib.stdout.strip()) / "_gcite_test_deps.pth").write_text("\n".join(site_lines) + "\n")
    return folder / "bin"


@pytest.fixture(scope="module")
def command(wheels, tmp_path_factory):
    return fresh_venv(tmp_path_factory.mktemp("venv-gcite"), wheels["gcite"], [str(SITE)])


def test_the_command_runs_from_another_folder(command, tmp_path):
    helped = run([str(command / "gcite"), "--help"], cwd=tmp_path)
    assert helped.returncode == 0 and "demo" in helped.stdout and "serve" in helped.stdout
    where = run([str(command / "python"), "-c", "import gcite; print(gcite.ROOT, gcite.INSTALLED)"], cwd=tmp_path)
    root = Path(where.stdout.split()[0])
    assert where.stdout.split()[1] == "True" and root.is_relative_to(command.parent) and not root.is_relative_to(ROOT)
    demo = run([str(command / "gcite"), "demo", "--lang", "en"], cwd=tmp_path, timeout=600)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert "[C:" in demo.stdout or "[1]" in demo.stdout or "Sources" in demo.stdout, demo.stdout[-2000:]
    refused = run([str(command / "gcite"), "package"], cwd=tmp_path)
    assert refused.returncode == 2 and "clone of the plugin's repository" in refused.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written into the folder it ran from


def test_the_client_alone_against_gcite_serve(command, wheels, tmp_path_factory):
    deps = tmp_path_factory.mktemp("requests-only")
    for name in REQUESTS:
        (deps / name).symlink_to(SITE / name)
    client = fresh_venv(tmp_path_factory.mktemp("venv-client"), wheels["gcite_client"], [str(deps)])
    elsewhere = tmp_path_factory.mktemp("app")
    alone = run(
        [
            str(client / "python"),
            "-c",
            "import importlib.util as u, gcite.client; "
            "print([m for m in ('dify_plugin', 'graphon', 'yaml', 'gevent', 'pydantic') if u.find_spec(m)])",
        ],
        cwd=elsewhere,
    )
    assert alone.returncode == 0 and alone.stdout.strip() == "[]", alone.stderr
    # no pacing: the stand-in model's human pace (0.06 s a delta) is the page's, not what this test is about
    with gcite_serve("--pace", "0", command=(str(command / "gcite"),), cwd=elsewhere) as served:
        users = json.loads(urllib.request.urlopen(served["origin"] + "/local/users", timeout=30).read())
        token = next(u["token"] for u in users if u["roles"])
        script = (
            "import sys, gcite.client as c; events = list(c.chat(sys.argv[1], sys.argv[2], sys.argv[3])); "
            "print(type(events[-1]).__name__, len(events))"
        )
        asked = run(
            [str(client / "python"), "-c", script, served["chat"], token, "How often is the patrol?"],
            cwd=elsewhere,
            timeout=300,
        )
        assert asked.returncode == 0, asked.stderr[-2000:]
        assert asked.stdout.split()[0] == "Done", asked.stdout
