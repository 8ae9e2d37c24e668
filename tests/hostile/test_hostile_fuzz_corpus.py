"""`make fuzz` leaves its seeds and every reproducer it found in tests/fuzz_corpus/<target>/: replay them all."""

import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.targets import ALL_TARGETS, TARGETS, encode, fields
from tests.support import ROOT

pytestmark = pytest.mark.fuzz_replay

CORPUS = ROOT / "tests" / "fuzz_corpus"
FILES = sorted(p for p in CORPUS.glob("*/*") if p.is_file())


def test_every_target_has_seeds_and_every_corpus_folder_names_a_target():
    assert {p.name for p in CORPUS.iterdir() if p.is_dir()} == set(TARGETS)
    for target in TARGETS:
        assert any(p.name.startswith("seed-") for p in (CORPUS / target).iterdir()), target


# Found by `make fuzz` in code another branch owns; replayed as expected failures until that branch fixes them
# (strict=False: the lead's merge turns them green without editing this list).
KNOWN: dict[str, str] = {}  # reproducers of bugs not fixed yet: "target/file" -> what fails


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=pytest.mark.xfail(reason=KNOWN[f"{p.parent.name}/{p.name}"], strict=False))
        if f"{p.parent.name}/{p.name}" in KNOWN
        else p
        for p in FILES
    ],
    ids=[f"{p.parent.name}/{p.name}" for p in FILES],
)
def test_replay(path: Path):
    ALL_TARGETS[path.parent.name](path.read_bytes())


def test_the_input_format_round_trips():
    values = ['[{"a": 1}]', [1, "x"], "te\udcffxt", {"k": None}]
    assert fields(encode(values, as_json=(1, 3)), 5)[:4] == values
    assert fields(b"", 2)[0] is fields(b"", 2)[1]  # both missing


def test_a_broken_invariant_fails_the_target():
    with pytest.raises(AssertionError):
        ALL_TARGETS["canary"](b"xx gcite-canary")


def test_make_fuzz_writes_a_reproducer_when_a_target_fails(tmp_path):
    # The canary target fails on its seed at once; the fuzzer must exit 1 and leave the input in the corpus.
    (tmp_path / "canary").mkdir()
    (tmp_path / "canary" / "seed-1").write_bytes(b"\x00gcite-canary")
    done = subprocess.run(
        [sys.executable, "-m", "fuzz", "--seconds", "5", "--targets", "canary", "--corpus-root", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    found = [p for p in (tmp_path / "canary").iterdir() if not p.name.startswith("seed-")]
    assert found and b"gcite-canary" in found[0].read_bytes(), done.stdout
    assert "canary: FAILED" in done.stdout
