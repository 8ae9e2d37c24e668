"""`make test` says what it runs and how far it is (issue 35, point 5): scripts/test_fast.sh with a stand-in for
pytest, and tests/progress.py, the plugin that tells the script how many tests are done."""

import os
import re
import subprocess
import sys
import textwrap

from tests.support import ROOT

SCRIPT = ROOT / "scripts" / "test_fast.sh"

# a stand-in for `$PY -m pytest …`: 3 "tests" a second apart, each written to $GCITE_TEST_PROGRESS as
# tests/progress.py writes it; the shard holding tests/cli fails one
FAKE_PYTEST = """\
#!/usr/bin/env bash
case " $* " in *" tests/cli "*) shard=2 ;; *) shard=1 ;; esac
for i in 0 1 2 3; do
    [ "$i" -gt 0 ] && sleep 1
    failed=0; [ "$shard" = 2 ] && [ "$i" -ge 2 ] && failed=1
    echo "$i 3 $failed" > "$GCITE_TEST_PROGRESS.tmp" && mv "$GCITE_TEST_PROGRESS.tmp" "$GCITE_TEST_PROGRESS"
done
echo "called with: $*"
if [ "$shard" = 2 ]; then echo "FAILED tests/cli/test_x.py::test_y"; echo "1 failed, 2 passed in 3.01s"; exit 1; fi
echo "3 passed in 3.01s"
"""


def run_script(tmp_path, *args, **env):
    fake = tmp_path / "python"
    fake.write_text(FAKE_PYTEST)
    fake.chmod(0o755)
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**outer_env(), "PY": str(fake), **env},
    )


def outer_env():
    """This process's environment without the script's own settings: `make test` runs this test with
    TEST_MARKS and TEST_FAST_TIMEOUT set for itself, which would otherwise reach the script under test."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("TEST_", "GCITE_TEST_"))}


def test_the_shards_say_what_they_run_and_how_far_they_are(tmp_path):
    done = run_script(tmp_path, TEST_PROGRESS_EVERY="1")
    out = done.stdout
    assert done.returncode == 1, done.stderr  # a failed shard fails the run
    runs = re.findall(r"^==> shard (\d): (\S+) -m pytest -q -m \"(.+?)\" (.+)$", out, re.M)
    assert [(n, marks) for n, _, marks, _ in runs] == [
        ("1", "not browser and not fuzz_replay"),
        ("2", "not browser and not fuzz_replay"),
        ("3", "not browser and not fuzz_replay"),
    ]
    assert [run[3].split()[0] for run in runs] == ["tests/local", "tests/cli", "tests/authoring"]
    folders = [folder for run in runs for folder in run[3].split()]
    assert len(folders) == len(set(folders))  # no folder runs twice
    for shard in ("1", "2", "3"):
        lines = re.findall(rf"^\[shard {shard}\] (\d)/3 tests done(?: \((\d) failed\))?, (\d+) s$", out, re.M)
        assert len(lines) >= 1, out
        assert [int(n) for n, _, _ in lines] == sorted(int(n) for n, _, _ in lines)  # it goes forward
    assert re.search(r"^\[shard 2\] [23]/3 tests done \(1 failed\)", out, re.M), out
    for shard in ("1", "3"):
        assert re.search(rf"^\[shard {shard}\] ended after \d+ s: 3 passed in 3.01s$", out, re.M), out
    assert "called with: -m pytest -q -p no:cacheprovider -p tests.progress -m not browser" in out  # shard 2, whole
    assert "FAILED tests/cli/test_x.py::test_y" in out
    assert out.count("called with:") == 1  # a shard that passed shows its last line only


def test_the_browser_run_is_one_shard_and_a_bad_interval_is_refused(tmp_path):
    done = run_script(tmp_path, "browser", TEST_PROGRESS_EVERY="1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r'^==> shard 1: \S+ -m pytest -q -m "browser" tests$', done.stdout, re.M), done.stdout
    assert "[shard 2]" not in done.stdout and "[shard 1] ended after" in done.stdout
    for every in ("0", "31", "x"):
        refused = run_script(tmp_path, TEST_PROGRESS_EVERY=every)
        assert refused.returncode == 2 and refused.stdout == ""
        assert refused.stderr.strip() == (
            f"scripts/test_fast.sh: TEST_PROGRESS_EVERY={every}: expected a whole number of seconds from 1 to 30"
        )
    assert run_script(tmp_path, "fast").returncode == 2


def test_the_progress_plugin_counts_done_failed_and_total(tmp_path):
    (tmp_path / "test_sample.py").write_text(
        textwrap.dedent("""
        import pytest

        def test_a(): pass
        def test_b(): assert False
        @pytest.mark.parametrize("n", [1, 2])
        def test_c(n): pass
        @pytest.fixture
        def broken():
            yield
            raise RuntimeError("teardown")
        def test_d(broken): pass
    """)
    )
    progress = tmp_path / "progress"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "tests.progress",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            str(tmp_path / "test_sample.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "GCITE_TEST_PROGRESS": str(progress)},
    )
    assert done.returncode == 1, done.stdout
    assert progress.read_text() == "5 5 2\n"  # 5 tests; test_b failed, test_d failed in its teardown
    assert not (tmp_path / "progress.tmp").exists()
