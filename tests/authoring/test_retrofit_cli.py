"""`python -m gcite retrofit`: one line per change, the file written beside the input, a second run a no-op that
says so, --dry-run writing nothing, and every refusal one `error:` line with exit status 2."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gcite.cli.main import main
from gcite.release.marketplace import release
from gcite.release.package import identifier_of_package
from gcite.release.signing import generate_key_pair, load_private_key
from tests.support import ROOT
from tests.support.yamltext import safe_load

FIXTURES = ROOT / "tests" / "fixtures" / "retrofit"
APP = FIXTURES / "svcvit-image-knowledge-base.zh.yml"


def copy(tmp_path: Path, source: Path = APP) -> Path:
    target = tmp_path / "app.yml"
    shutil.copyfile(source, target)
    return target


def test_retrofit_writes_beside_the_input_and_a_second_run_changes_nothing(tmp_path, capsys):
    app = copy(tmp_path)
    assert main(["retrofit", str(app), "--nodes", "code"]) == 0
    lines = capsys.readouterr().out.splitlines()
    out = tmp_path / "app.gcite.yml"
    assert lines[-1].startswith(f"wrote {out}") and any(line.startswith("node added: ") for line in lines)
    assert any(line.startswith("selector rewired: ") for line in lines)
    assert app.read_bytes() == APP.read_bytes()  # the input is never overwritten
    written = out.read_text(encoding="utf-8")
    assert "gcite_merge_1743994891832" in written
    assert main(["retrofit", str(out), "--nodes", "code"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"no change: {out} already has G-Cite wired in for every retrieval → LLM context path"
    ]
    assert out.read_text(encoding="utf-8") == written


def test_the_export_api_form_becomes_a_yaml_file_beside_it(tmp_path, capsys):
    exported = tmp_path / "export.json"
    exported.write_text(json.dumps({"data": APP.read_text(encoding="utf-8")}, ensure_ascii=False), encoding="utf-8")
    assert main(["retrofit", str(exported)]) == 0
    assert "note: read the export API's" in capsys.readouterr().out
    assert safe_load((tmp_path / "export.gcite.yml").read_text(encoding="utf-8"))["app"]["mode"] == "advanced-chat"


def test_dry_run_writes_nothing(tmp_path, capsys):
    app = copy(tmp_path)
    assert main(["retrofit", str(app), "--dry-run", "--out", str(tmp_path / "x.yml")]) == 0
    out = capsys.readouterr().out
    assert "dry run:" in out and "node added: " in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.yml"]


def test_sources_in_answer_dry_run_prints_the_answer_line_and_a_second_run_says_no_change(tmp_path, capsys):
    app = copy(tmp_path)
    assert main(["retrofit", str(app), "--sources-in-answer", "--nodes", "code", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        'answer extended: Answer "直接回复" (answer) lists the cited sources after its text '
        "(gcite_validate_1743994891832.references_by_marker_markdown)" in lines
    )
    assert 'edge added: gcite_validate_1743994891832 → "直接回复" (answer)' in lines
    assert lines[-1].startswith("dry run: ") and sorted(p.name for p in tmp_path.iterdir()) == ["app.yml"]
    assert main(["retrofit", str(app), "--sources-in-answer", "--nodes", "code"]) == 0
    capsys.readouterr()
    out = tmp_path / "app.gcite.yml"
    answer = next(
        n for n in safe_load(out.read_text(encoding="utf-8"))["workflow"]["graph"]["nodes"] if n["id"] == "answer"
    )
    assert answer["data"]["answer"] == (
        "{{#1743994891832.text#}}\n\n{{#gcite_validate_1743994891832.references_by_marker_markdown#}}"
    )
    written = out.read_text(encoding="utf-8")
    assert main(["retrofit", str(out), "--sources-in-answer", "--nodes", "code"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"no change: {out} already has G-Cite wired in for every retrieval → LLM context path"
    ]
    assert out.read_text(encoding="utf-8") == written


def test_out_and_options_reach_the_result(tmp_path, capsys):
    app = copy(tmp_path)
    target = tmp_path / "sub.yml"
    assert (
        main(
            [
                "retrofit",
                str(app),
                "--out",
                str(target),
                "--acl",
                "dept",
                "--slots",
                "2",
                "--lang",
                "en",
                "--web",
                "gcite",
            ]
        )
        == 0
    )
    document = safe_load(target.read_text(encoding="utf-8"))
    nodes = {n["id"]: n["data"] for n in document["workflow"]["graph"]["nodes"]}
    assert nodes["gcite_filter_1743994891832"]["tool_configurations"]["acl_field"] == "dept"
    assert {"role_1", "role_2"} == {k for k in nodes["gcite_acl_roles_1743994826325"]["outputs"] if k[5:].isdigit()}
    assert nodes["gcite_web_1743994891832"]["tool_name"] == "web_search"
    assert "# Citation rules (G-Cite)" in nodes["1743994891832"]["prompt_template"][0]["text"]


def test_package_names_the_installed_build_in_every_tool_and_the_dependency(tmp_path, capsys):
    """--package FILE: the identifier the daemon gives FILE (a signed build here), not the checkout's unsigned one,
    in every G-Cite tool node and in the dependency; an earlier result's identifiers are updated, once."""
    keys = generate_key_pair(tmp_path / "publisher", bits=2048)
    signed = release(ROOT, tmp_path / "dist", private_key=load_private_key(keys.private.read_bytes()))
    identifier = identifier_of_package(signed.path)
    app = copy(tmp_path)
    assert main(["retrofit", str(app), "--web", "gcite"]) == 0  # first without --package: the checkout's own
    out = tmp_path / "app.gcite.yml"
    unsigned = {n["data"]["plugin_unique_identifier"] for n in gcite_tools(out)}
    assert len(unsigned) == 1 and identifier not in unsigned
    capsys.readouterr()
    assert main(["retrofit", str(out), "--package", str(signed.path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("plugin identifier updated: ") for line in lines) == len(gcite_tools(out)) == 3
    assert f"dependency updated: the G-Cite plugin package is now {identifier}" in lines
    assert {n["data"]["plugin_unique_identifier"] for n in gcite_tools(out)} == {identifier}
    document = safe_load(out.read_text(encoding="utf-8"))
    assert [
        d["value"]["plugin_unique_identifier"]
        for d in document["dependencies"]
        if d["value"].get("plugin_unique_identifier", "").startswith("gcite/")
    ] == [identifier]
    assert main(["retrofit", str(out), "--package", str(signed.path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"no change: {out} already has G-Cite wired in for every retrieval → LLM context path"
    ]
    # a later run without --package (to add memory, say) keeps the build the file names
    assert main(["retrofit", str(out), "--memory"]) == 0
    assert not any("identifier" in line or "dependency" in line for line in capsys.readouterr().out.splitlines())
    assert {n["data"]["plugin_unique_identifier"] for n in gcite_tools(out)} == {identifier}


def test_acl_on_a_file_retrofitted_without_it_is_refused_and_with_it_changes_nothing(tmp_path, capsys):
    """Access control is added on a first run only: asked for on a file retrofitted without it, it is one error
    line (exit 2, nothing written) rather than a file that shows every chunk to everyone; asked for again on a file
    that has it, nothing changes."""
    app = copy(tmp_path)
    assert main(["retrofit", str(app), "--nodes", "code"]) == 0
    plain = tmp_path / "app.gcite.yml"
    before = plain.read_bytes()
    capsys.readouterr()
    assert main(["retrofit", str(plain), "--nodes", "code", "--acl", "access_roles", "--memory"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"error: {plain}: --acl: LLM ") and "without access control" in captured.err
    assert plain.read_bytes() == before
    guarded = tmp_path / "guarded.gcite.yml"  # a *.gcite.yml is rewritten in place
    assert main(["retrofit", str(app), "--nodes", "code", "--acl", "access_roles", "--out", str(guarded)]) == 0
    written = guarded.read_bytes()
    capsys.readouterr()
    assert main(["retrofit", str(guarded), "--nodes", "code", "--acl", "access_roles"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"no change: {guarded} already has G-Cite wired in for every retrieval → LLM context path"
    ]
    assert guarded.read_bytes() == written


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda d, llm: llm["data"].__setitem__("context", "yes"), "node 1743994891832's context is not a mapping"),
        (lambda d, llm: d.__setitem__("dependencies", "x"), "dependencies is not a list of mappings"),
        (lambda d, llm: d["workflow"]["graph"]["edges"].append(5), "is not an edge (a mapping with source and target"),
        (
            lambda d, llm: next(n for n in d["workflow"]["graph"]["nodes"] if n["data"]["type"] == "start")[
                "data"
            ].__setitem__("variables", "x"),
            "'s variables is not a list",
        ),
    ],
)
def test_a_value_of_the_wrong_shape_is_one_error_line_not_a_traceback(edit, message, tmp_path, capsys):
    document = safe_load(APP.read_text(encoding="utf-8"))
    edit(document, next(n for n in document["workflow"]["graph"]["nodes"] if n["id"] == "1743994891832"))
    app = tmp_path / "app.yml"
    app.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    assert main(["retrofit", str(app)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err
    assert "Traceback" not in captured.err and sorted(p.name for p in tmp_path.iterdir()) == ["app.yml"]


def test_out_never_overwrites_the_export(tmp_path, capsys):
    app = copy(tmp_path)
    assert main(["retrofit", str(app), "--out", str(app)]) == 2
    assert capsys.readouterr().err.startswith(f"error: --out {app}: that is the input; the exported DSL is never")
    assert app.read_bytes() == APP.read_bytes()


def gcite_tools(path: Path) -> list[dict]:
    nodes = safe_load(path.read_text(encoding="utf-8"))["workflow"]["graph"]["nodes"]
    return [n for n in nodes if str(n["data"].get("provider_id", "")).startswith("gcite/")]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--package", "missing.difypkg"], "--package missing.difypkg: no such file"),
        (["--package", str(APP)], f"--package {APP}: not a readable plugin package"),
        (
            ["--package", str(ROOT / "tests" / "fixtures" / "dify-signing" / "dummy_plugin.difypkg")],
            "the package is test/test:0.0.1, not the G-Cite plugin",
        ),
    ],
)
def test_a_package_that_is_not_g_cites_is_one_error_line(argv, message, tmp_path, capsys):
    assert main(["retrofit", str(APP), "--out", str(tmp_path / "out.yml"), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err
    assert not (tmp_path / "out.yml").exists()


@pytest.mark.parametrize(
    "name,argv,message",
    [
        ("refuse/own-chat-mode.en.yml", [], "app mode 'chat' has no workflow graph to rewire"),
        (
            "refuse/dify-knowledge-chatbot-context-disabled.en.yml",
            [],
            'no Knowledge Retrieval → LLM context path; LLM nodes looked at: "LLM" (1711528917469): context disabled',
        ),
        ("refuse/own-not-yaml.txt.yml", [], "not a Dify app DSL: not valid YAML"),
        ("svcvit-image-knowledge-base.zh.yml", ["--slots", "2"], "--slots needs --acl FIELD"),
        (
            "svcvit-image-knowledge-base.zh.yml",
            ["--acl", "access_roles", "--slots", "0"],
            "--slots: expected a whole number from 1 to 20",
        ),
        ("dify-text-summarization-workflow.en.yml", ["--memory"], "--memory: a workflow-mode app has no conversation"),
        ("missing.yml", [], "missing.yml: cannot read it"),
    ],
)
def test_refusals_are_one_error_line_with_status_2(name, argv, message, tmp_path, capsys):
    path = FIXTURES / name
    assert main(["retrofit", str(path), "--out", str(tmp_path / "out.yml"), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("error: ") and message in captured.err
    assert not (tmp_path / "out.yml").exists()


def test_an_answer_showing_two_retrofitted_llms_is_one_error_line(tmp_path, capsys):
    document = safe_load((FIXTURES / "dify-qc-knowledge-chatbot.en.yml").read_text(encoding="utf-8"))
    answer = next(n for n in document["workflow"]["graph"]["nodes"] if n["id"] == "1711528833796")
    answer["data"]["answer"] = "{{#1711528802931.text#}}\n{{#1711528815414.text#}}"
    app = tmp_path / "app.yml"
    app.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    assert main(["retrofit", str(app), "--sources-in-answer"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(
        f'error: {app}: --sources-in-answer: Answer "Answer 2" (1711528833796) shows the text of LLMs'
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.yml"]


def test_help_shows_the_command():
    done = subprocess.run(
        [sys.executable, "-m", "gcite", "retrofit", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "usage: python -m gcite retrofit" in done.stdout
    for option in (
        "--out",
        "--nodes",
        "--web",
        "--acl",
        "--slots",
        "--memory",
        "--sources-in-answer",
        "--package",
        "--lang",
        "--dry-run",
    ):
        assert option in done.stdout
    listed = subprocess.run(
        [sys.executable, "-m", "gcite", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert "retrofit" in listed.stdout
