"""The CLI's input files: what is not a chatflow, files past their size caps (refused without reading them whole),
named pipes read once, and your own knowledge base."""

import json
import os
import subprocess
import sys
from contextlib import contextmanager

import pytest

from gcite.cli.main import main
from tests.support import ROOT
from tests.support.cli_errors import one_error_line

BAD_FILES = {
    "binary.yml": (b"\x00\x01\xff\xfe", "not a YAML file (not UTF-8 text)"),
    "broken.yml": (b"app: [1\n", "not a YAML file (expected ',' or ']'"),
    "list.yml": (b"- 1\n- 2\n", "not a chatflow DSL (expected a mapping at the top, found list)"),
    "empty.yml": (b"", "not a chatflow DSL (expected a mapping at the top, found an empty file)"),
    "text.yml": (b"just some words\n", "not a chatflow DSL (expected a mapping at the top, found str)"),
    "workflow.yml": (b"app: {mode: workflow}\nworkflow: {graph: {nodes: []}}\n", "app.mode is 'workflow'"),
    "no_graph.yml": (b"kind: app\nworkflow: {}\n", "not a chatflow DSL (it has no workflow.graph)"),
    "no_nodes.yml": (b"workflow:\n  graph:\n    nodes: [{id: x}]\n    edges: 5\n", "DslError"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_run_on_a_file_that_is_not_a_chatflow_is_a_one_line_error(name, tmp_path, capsys):
    content, message = BAD_FILES[name]
    (tmp_path / name).write_bytes(content)
    line = one_error_line(capsys, ["run", str(tmp_path / name), "--query", "q"])
    assert line.startswith(f"error: {tmp_path / name}: ") and message in line


def test_run_on_a_missing_file_or_a_directory(tmp_path, capsys):
    assert "cannot read it (FileNotFoundError" in one_error_line(
        capsys, ["run", str(tmp_path / "nope.yml"), "--query", "q"]
    )
    assert "cannot read it (IsADirectoryError" in one_error_line(capsys, ["run", str(tmp_path), "--query", "q"])


def sparse_file(path, size):
    """A file of `size` NUL bytes that takes no disk space (valid UTF-8: reading it whole would cost `size`)."""
    with open(path, "wb") as file:
        file.truncate(size)
    return path


def traced_peak(action):
    """`action()`'s result and the peak of the memory Python allocated while it ran, in MiB."""
    import tracemalloc

    tracemalloc.start()
    try:
        result = action()
        return result, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("command", [["run", "{path}", "--query", "q"], ["retrofit", "{path}", "--dry-run"]])
def test_a_dsl_over_dify_s_import_limit_is_refused_without_reading_it_whole(command, tmp_path, capsys):
    path = sparse_file(tmp_path / "big.yml", 256 * 2**20)
    line, peak = traced_peak(lambda: one_error_line(capsys, [part.format(path=path) for part in command]))
    assert line == f"error: {path}: larger than 10 MiB (Dify's own DSL import limit); not read further"
    assert peak < 40, f"{peak:.0f} MiB allocated: the file was read past the limit"


def test_the_cli_s_dsl_limit_is_safeyaml_s():
    from gcite import safeyaml
    from gcite.cli import common

    assert common.MAX_DSL_BYTES == safeyaml.MAX_BYTES


def test_a_knowledge_base_over_its_limit_is_refused_without_reading_it_whole(tmp_path, capsys):
    from gcite.cli import common

    path = sparse_file(tmp_path / "big.json", 4 * common.MAX_KNOWLEDGE_BASE_BYTES)
    line, peak = traced_peak(
        lambda: one_error_line(
            capsys, ["run", str(ROOT / "dsl" / "gcite_chatflow.yml"), "--query", "q", "--knowledge-base", str(path)]
        )
    )
    assert line == f"error: --knowledge-base {path}: larger than 64 MiB (the knowledge base limit); not read further"
    assert peak < 1.5 * common.MAX_KNOWLEDGE_BASE_BYTES / 2**20, f"{peak:.0f} MiB allocated"


@contextmanager
def fifo_fed_once(path, data: bytes):
    """A named pipe at `path` that gives `data` to its first reader only: a second read of the file blocks (the
    writer is gone), so a command that reads it twice hangs instead of passing. The writer is a process of its own
    (`cat`): a thread here may be a greenlet (the SDK's gevent patching), blocked with the whole test in open()."""
    os.mkfifo(path)
    source = path.with_name(path.name + ".data")
    source.write_bytes(data)
    writer = subprocess.Popen(["sh", "-c", 'cat "$1" > "$2"', "sh", str(source), str(path)])
    try:
        yield path
    finally:
        writer.kill()
        writer.wait(timeout=10)


def test_serve_reads_its_dsl_and_knowledge_base_once_and_serves_what_it_read(tmp_path):
    """`serve` checks --dsl and --knowledge-base no further than their caps, then serves that text and data: it
    does not read the files a second time, uncapped (a file swapped or grown in between would be read whole)."""
    from types import SimpleNamespace

    from gcite.cli.serve import usage_problem
    from gcite.local.serve import LocalDify

    dsl_text = (ROOT / "dsl" / "gcite_chatflow.en.yml").read_text(encoding="utf-8")
    kb = {"documents": [{"document_id": "d1", "segments": []}]}
    with (
        fifo_fed_once(tmp_path / "app.yml", dsl_text.encode()) as dsl_path,
        fifo_fed_once(tmp_path / "kb.json", json.dumps(kb).encode()) as kb_path,
    ):
        args = SimpleNamespace(port=0, pace=None, fail_on=None, dsl=str(dsl_path), knowledge_base=str(kb_path))
        args.llm_base_url = args.llm_model = args.secret_file = None
        args.allow_origin = []
        assert usage_problem(args) is None
        local = LocalDify(0, dsl_text=args.dsl_text, knowledge_base=args.knowledge_base_data)
    try:
        assert local.dsl_text == dsl_text and local.knowledge_base == kb
    finally:
        local.server.server_close()


def test_demo_reads_its_dsl_once(tmp_path):
    with fifo_fed_once(tmp_path / "app.yml", (ROOT / "dsl" / "gcite_chatflow.yml").read_bytes()) as path:
        done = subprocess.run(
            [sys.executable, "-m", "gcite", "demo", "--dsl", str(path), "--query", "巡更时发现异常怎么上报？"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "巡更" in done.stdout


def test_no_traceback_reaches_the_terminal(tmp_path):
    (tmp_path / "broken.yml").write_bytes(b"app: [1\n")
    done = subprocess.run(
        [sys.executable, "-m", "gcite", "run", str(tmp_path / "broken.yml"), "--query", "q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def a_knowledge_base(tmp_path):
    """A knowledge base of one document no sample holds, in the sample's format."""
    path = tmp_path / "kb.json"
    path.write_text(
        json.dumps(
            {
                "dataset_id": "mine",
                "dataset_name": "我的知识库",
                "documents": [
                    {
                        "document_id": "doc-roof",
                        "document_name": "roof.md",
                        "doc_metadata": {
                            "document_title": "屋顶花园开放规定",
                            "access_roles": "",
                            "updated": "2026-01-01",
                        },
                        "segments": [
                            {
                                "segment_id": "seg-roof-1",
                                "content": "屋顶花园每天早上八点开放，晚上六点关闭，雨天不开放。",
                            }
                        ],
                    }
                ],
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    return path


def test_run_and_demo_take_your_knowledge_base(tmp_path, capsys):
    kb = str(a_knowledge_base(tmp_path))
    question = "屋顶花园几点开放？"
    assert (
        main(
            [
                "run",
                str(ROOT / "dsl" / "gcite_chatflow.yml"),
                "--query",
                question,
                "--inputs",
                '{"user_roles": "前台"}',
                "--knowledge-base",
                kb,
                "--pretty",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "屋顶花园开放规定" in out.split("-- cited sources")[1] and "巡更" not in out.split("-- cited sources")[1]
    assert main(["demo", "--query", question, "--knowledge-base", kb]) == 0
    out = capsys.readouterr().out
    assert f"Knowledge base: {kb} (1 documents)" in out
    assert "[1] 屋顶花园开放规定" in out.split("-- cited sources")[1]


@pytest.mark.parametrize(
    "command", [["run", str(ROOT / "dsl" / "gcite_chatflow.yml"), "--query", "q"], ["demo"], ["demo", "--query", "q"]]
)
@pytest.mark.parametrize(
    "name,content,message",
    [
        (
            "bad.json",
            "{bad\n",
            "not a JSON file (Expecting property name enclosed in double quotes at line 1, column 2)",
        ),
        ("list.json", "[1]", 'not a knowledge base (expected a JSON object with a "documents" list'),
        ("nope.json", None, "cannot read it (No such file or directory)"),
        ("latin1.json", b"\xe9", "not a JSON file (not UTF-8 text)"),
    ],
)
def test_run_and_demo_refuse_a_bad_knowledge_base_as_serve_does(command, name, content, message, tmp_path, capsys):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    line = one_error_line(capsys, [*command, "--knowledge-base", str(path)])
    assert line.startswith(f"error: --knowledge-base {path}: {message}")
    assert main(["serve", "--knowledge-base", str(path)]) == 2  # the same words from serve
    assert capsys.readouterr().err.strip() == line
