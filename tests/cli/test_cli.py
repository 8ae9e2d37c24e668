import ast
import json
import os
import subprocess
import sys

import pytest
import yaml

from gcite.authoring.prefilter import conditions_for_roles, templated_conditions
from gcite.cli.main import main
from tests.support import ROOT
from tests.support.cli_errors import one_error_line
from tests.support.local_http import serving
from tests.support.openai_model import streaming_model
from tests.support.yamltext import safe_load


def test_prefilter_command_prints_literal_and_templated_conditions(capsys):
    main(["prefilter", "--roles", "物业经理, 前台"])
    printed = safe_load(capsys.readouterr().out)
    assert printed["metadata_filtering_mode"] == "manual"
    assert printed["metadata_filtering_conditions"] == conditions_for_roles("access_roles", ["物业经理", "前台"])
    main(["prefilter", "--slots", "2", "--slot-node", "roles", "--missing-acl", "hidden"])
    printed = safe_load(capsys.readouterr().out)
    assert printed["metadata_filtering_conditions"] == templated_conditions(
        "access_roles", ["{{#roles.role_1#}}", "{{#roles.role_2#}}"], "hidden"
    )


def test_demo_runs_as_a_module():
    done = subprocess.run(
        [sys.executable, "-m", "gcite", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index("node_finished(merge)") < out.index("answer, as it streams") < out.index("cited sources")
    assert "status: cited; chunk list before answer: True" in out
    assert "[C:" not in out.split("answer, as it streams")[1].split("cited sources")[0]  # no raw marker shown


# --- the CLI's structure ----------------------------------------------------------------------------------


def parsers():
    """Every parser of the CLI (the top one, each command's, each sub-command's) with its name."""
    import argparse

    from gcite.cli.main import build_parser

    todo, found = [("python -m gcite", build_parser())], []
    while todo:
        name, parser = todo.pop()
        found.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {sub}", p) for sub, p in action.choices.items()]
    return found


def test_every_command_and_option_has_help_text():
    import argparse

    found = parsers()
    names = {name for name, _ in found}
    assert {
        f"python -m gcite {c}" for c in ("demo", "run", "build-dsl", "package", "prefilter", "sync-schema")
    } <= names
    for name, parser in found:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue  # each choice is a parser of its own, checked with its help below
            assert action.help, f"{name} {action.option_strings or action.dest} has no help text"
    top = found[0][1]
    commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    assert all(choice.help for choice in commands._choices_actions), "a command has no help text"


HEAVY = (
    "requests",
    "yaml",
    "jwt",
    "cryptography",
    "graphon",
    "dify_plugin",
    "citations",
    "gcite.client",
    "gcite.local",
    "gcite.authoring",
    "gcite.cli.",
)


@pytest.mark.parametrize(
    "argv,allowed",
    [
        (["secret"], {"gcite.cli.errors", "gcite.cli.main"}),
        (["--version"], {"yaml", "gcite.cli.main"}),  # the version is read from manifest.yaml
        (
            ["prefilter", "--roles", "a"],  # gcite.cli.common reads chatflow files; the conditions come from authoring
            {"yaml", "gcite.cli.main", "gcite.cli.errors", "gcite.cli.build", "gcite.cli.common"}
            | {"gcite.authoring", "gcite.authoring.prefilter", "gcite.authoring.variants", "citations"},
        ),
    ],
)
def test_a_command_imports_only_what_it_runs(argv, allowed):
    probe = (
        "import sys; from gcite.cli.main import main\n"
        "try: code = main(sys.argv[1:])\nexcept SystemExit as done: code = done.code\n"
        f"print(code, [m for m in sys.modules if m.startswith({HEAVY!r})], file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", probe, *argv], cwd=ROOT, capture_output=True, text=True, timeout=60)
    code, _, loaded = done.stderr.strip().splitlines()[-1].partition(" ")
    assert code in ("0", "None") and done.stdout.strip(), done.stderr  # it ran, and printed what it makes
    loaded = ast.literal_eval(loaded)
    assert {m if m.startswith("gcite") else m.split(".")[0] for m in loaded} <= allowed, loaded


def test_each_command_alone_has_its_own_parser_and_no_other():
    from gcite.cli.main import COMMANDS, PARSERS, build_parser

    whole = build_parser()
    listed = next(a for a in whole._actions if hasattr(a, "choices") and a.choices).choices  # noqa: SLF001
    assert set(listed) == COMMANDS
    for names, _ in PARSERS:
        for command in names:
            alone = build_parser(command)
            choices = next(a for a in alone._actions if hasattr(a, "choices") and a.choices).choices  # noqa: SLF001
            assert set(choices) == set(names)
            assert choices[command].format_help() == listed[command].format_help()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_version_into_a_full_disk_is_no_traceback():
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "gcite", "--version"],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    manifest = safe_load((ROOT / "manifest.yaml").read_text(encoding="utf-8"))
    assert capsys.readouterr().out.strip() == f"gcite {manifest['version']} (plugin gcite/gcite)"


# --- run: flags that need each other (files it reads: test_cli_files.py) ---------------------------------------


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--llm-model", "gpt-4o-mini"], "--llm-model needs --llm-base-url"),
        (["--llm-base-url", "http://127.0.0.1:9"], "--llm-base-url needs --llm-model"),
        (["--inputs", "[1]"], "--inputs must be a JSON object"),
        (["--inputs", "{oops"], "--inputs is not JSON"),
    ],
)
def test_run_flags_that_need_another_or_bad_values_are_errors(extra, message, capsys):
    assert message in one_error_line(
        capsys, ["run", str(ROOT / "dsl" / "gcite_chatflow_code.yml"), "--query", "q", *extra]
    )


def test_run_pretty_shows_chunks_streamed_answer_and_only_cited_sources(capsys):
    dsl = str(ROOT / "dsl" / "gcite_chatflow_code.yml")
    args = ["run", dsl, "--query", "会议室怎么预约？", "--inputs", '{"user_roles": "前台"}']
    assert main(args) == 0
    raw = [json.loads(block[6:]) for block in capsys.readouterr().out.split("\n\n") if block.startswith("data: ")]
    validate = next(
        e["data"]["outputs"] for e in raw if e["event"] == "node_finished" and e["data"]["node_id"] == "validate"
    )
    assert main(args + ["--pretty"]) == 0
    out = capsys.readouterr().out
    assert "data: " not in out
    chunks, rest = out.split("-- answer, as it streams", 1)
    answer, sources = rest.split("-- cited sources", 1)
    assert chunks.startswith("-- node_finished(merge): ") and "会议室使用规范" in chunks
    assert "[C:" not in answer and "[1]" in answer and "单次最长 4 小时" in answer
    listed = [line for line in sources.splitlines() if line.startswith("[")]
    assert [line.split("]")[0] for line in listed] == [f"[{c['index']}" for c in validate["citations"]]
    assert [c["document_title"] in line for c, line in zip(validate["citations"], listed)] == [True] * len(listed)
    assert "oss://" not in out.split("-- cited sources")[1]  # internal storage URLs are not shown as links
    assert (
        sources.strip().splitlines()[-1] == f"status: {validate['status']}; chunk list before answer: True; "
        f"workflow succeeded"
    )


# --- prefilter refuses what the README calls invalid -------------------------------------------------------------


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--slots", "0"], "--slots must be from 1 to 20, got 0"),
        (["--slots", "21"], "--slots must be from 1 to 20"),
        (["--slots", "-1"], "--slots must be from 1 to 20"),
        (["--roles", 'a"b'], "role 'a\"b' contains"),
        (["--roles", "ops,a\\b"], "role 'a\\\\b' contains"),
        (["--roles", "运维；物业"], "contains '\"', '\\' or a delimiter"),
        (["--roles", "a|b"], "role 'a|b' contains"),
        (["--roles", "前台、保安"], "role '前台、保安' contains"),
        (["--roles", "x", "--slots", "2"], "--slots and --slot-node apply only without it"),
        (["--roles", "x", "--slot-node", "n"], "--slots and --slot-node apply only without it"),
        (["--slot-node", "bad node"], "--slot-node: 'bad node' is not a node id"),
        (["--acl-field", " "], "--acl-field must not be empty"),
        (["--roles", "ops,\udcff"], "--roles is not valid Unicode text: lone surrogate U+DCFF at character 4"),
        (["--acl-field", "roles\udcfe"], "--acl-field is not valid Unicode text: lone surrogate U+DCFE"),
    ],
)
def test_prefilter_refuses_invalid_slots_and_roles(argv, message, capsys):
    assert message in one_error_line(capsys, ["prefilter", *argv])


# --- build-dsl options ---------------------------------------------------------------------------------------


def test_build_dsl_defaults_reproduce_the_committed_files(tmp_path, capsys):
    assert main(["build-dsl", "--out", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in (ROOT / "dsl").glob("*.yml"))
    for name in written:
        assert (tmp_path / name).read_text(encoding="utf-8") == (ROOT / "dsl" / name).read_text(encoding="utf-8")
    assert main(["build-dsl", "--out", str(tmp_path)]) == 0 and "already in step" in capsys.readouterr().out


def test_build_dsl_with_more_slots_a_language_and_a_persona(tmp_path, capsys):
    from citations import acl_prefilter
    from gcite.authoring.variants import condition_count
    from gcite.local.runner import Services, run_chatflow
    from gcite.local.web_search import SampleSearchHttpClient

    persona = "You are Ada, the help desk assistant of Example Ltd."
    assert main(["build-dsl", "--slots", "5", "--lang", "en", "--persona", persona, "--out", str(tmp_path)]) == 0
    assert "5 role slot(s), 83 conditions" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gcite_chatflow.en.yml", "gcite_chatflow_code.en.yml"]
    assert condition_count(5) == 3 + 16 * 5 == 83 and condition_count(3) == 51
    for path in tmp_path.iterdir():
        nodes = {n["id"]: n["data"] for n in safe_load(path.read_text(encoding="utf-8"))["workflow"]["graph"]["nodes"]}
        prompt = (
            nodes["cite"]["tool_parameters"]["instructions"]["value"]
            if "cite" in nodes  # cited_answer's
            else nodes["llm"]["prompt_template"][0]["text"]
        )
        assert prompt.split("\n")[:2] == ["# Role", persona]
        assert len(nodes["kr"]["metadata_filtering_conditions"]["conditions"]) == 83
        assert list(nodes["acl_roles"]["outputs"]) == [f"role_{n}" for n in range(1, 6)] + ["role_count"]
        code = nodes["acl_roles"]["code"]
        assert code == (ROOT / "nodes" / "acl_prefilter.py").read_text(encoding="utf-8").replace(
            "DEFAULT_ROLE_SLOTS = 3\n", "DEFAULT_ROLE_SLOTS = 5\n"
        )
        namespace: dict = {}
        exec(compile(code, "acl_roles", "exec"), namespace)  # noqa: S102 - the generated Code node, run as Dify would
        assert namespace["main"]("a,b,c,d,e")["role_5"] == "e"
        with pytest.raises(ValueError, match="6 roles but the pre-filter has 5 slots"):
            namespace["main"]("a,b,c,d,e,f")
        assert acl_prefilter.main("a,b,c")["role_3"] == "c"  # the node file itself is unchanged
    # five roles fill every slot and the chatflow runs to the end on the runner
    svc = Services(search_http=SampleSearchHttpClient(fail=True))
    try:
        events = list(
            run_chatflow(
                (tmp_path / "gcite_chatflow_code.en.yml").read_text(encoding="utf-8"),
                "会议室怎么预约？",
                {"user_roles": "前台,保安,访客,运维,财务"},
                svc,
            )
        )
    finally:
        svc.close()
    roles = next(
        e["data"]["outputs"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == "acl_roles"
    )
    assert roles["role_count"] == 5 and [e["event"] for e in events][-2:] == ["message_end", "workflow_finished"]
    assert not any(e["event"] == "error" for e in events)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--slots", "4"], "--slots and --persona need --out DIR"),
        (["--persona", "x"], "--slots and --persona need --out DIR"),
        (["--slots", "0", "--out", "OUT"], "--slots: expected a whole number from 1 to 20, got 0"),
        (["--slots", "21", "--out", "OUT"], "--slots: expected a whole number from 1 to 20"),
        (["--persona", " ", "--out", "OUT"], "--persona: must not be empty"),
        (
            ["--persona", "I am {{#sys.query#}}", "--out", "OUT"],
            "--persona: must not contain a Dify variable reference",
        ),
    ],
)
def test_build_dsl_refuses_bad_options(argv, message, tmp_path, capsys):
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    assert message in one_error_line(capsys, ["build-dsl", *argv])
    assert not (tmp_path / "out").exists()


def test_build_dsl_refuses_an_unknown_language(capsys):
    with pytest.raises(SystemExit) as done:
        main(["build-dsl", "--lang", "fr", "--out", "x"])
    assert done.value.code == 2 and "invalid choice: 'fr'" in capsys.readouterr().err


# --- demo options ---------------------------------------------------------------------------------------------


def test_demo_takes_a_query_roles_and_the_code_chatflow(capsys):
    assert main(["demo", "--query", "访客怎么登记？", "--roles", "前台", "--dsl", "code"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Chatflow: gcite_chatflow_code.yml on graphon") and "user_roles = 前台" in out
    assert out.count("===== turn") == 1 and "===== turn 1: 访客怎么登记？" in out
    assert "访客管理制度" in out.split("-- cited sources")[1]  # 前台 may see the visitor policy, and it is cited


@pytest.mark.parametrize(
    "edit,message",
    [
        (
            lambda d: next(n for n in d["workflow"]["graph"]["nodes"] if n["data"]["type"] == "start")[
                "data"
            ].__setitem__("variables", "x"),
            "the Start node's variables are not valid: expected a list, got str",
        ),
        (
            lambda d: next(n for n in d["workflow"]["graph"]["nodes"] if n["data"]["type"] == "start")[
                "data"
            ].__setitem__("variables", [{"variable": "q", "label": "Q", "type": "no-such-type"}]),
            "the Start node's variables are not valid: variables[0]: type: Input should be",
        ),
        (lambda d: d.__setitem__("app", "x"), "not a chatflow DSL (app is str, not a mapping)"),
        (
            lambda d: next(n for n in d["workflow"]["graph"]["nodes"] if n["data"]["type"] == "llm")[
                "data"
            ].__setitem__("context", "yes"),
            "ValidationError: context: Input should be a valid dictionary",
        ),
    ],
)
def test_a_dsl_value_of_the_wrong_shape_is_one_line_naming_the_field(edit, message, tmp_path, capsys):
    document = safe_load((ROOT / "dsl" / "gcite_chatflow_code.en.yml").read_text(encoding="utf-8"))  # an LLM node
    edit(document)
    path = tmp_path / "bad.yml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True), encoding="utf-8")
    assert message in one_error_line(capsys, ["run", str(path), "--query", "hi"])


def test_demo_talks_to_an_openai_compatible_model_for_every_turn(capsys):
    """--llm-base-url/--llm-model: each turn's LLM node asks the model at the URL, the second with the first turn
    in its prompt, without markers; either option alone is one error line."""
    seen = []
    with serving(streaming_model(["会议室须提前", "预约[C:", "1]。"], seen)) as url:
        assert main(["demo", "--llm-base-url", f"{url}/v1", "--llm-model", "m1"]) == 0
    out = capsys.readouterr().out
    assert f"LLM: m1 at {url}/v1" in out and out.count("===== turn") == 2
    assert len(seen) == 2 and {body["model"] for body in seen} == {"m1"}
    second = "\n".join(str(m["content"]) for m in seen[1]["messages"])
    assert "会议室须提前预约" in second and "会议室须提前预约[C:" not in second  # the earlier turn, marker-free
    assert "--llm-model needs --llm-base-url" in one_error_line(capsys, ["demo", "--llm-model", "m1"])
    assert "--llm-base-url needs --llm-model" in one_error_line(capsys, ["demo", "--llm-base-url", f"{url}/v1"])


def test_demo_with_a_role_the_pre_filter_cannot_match_shows_the_error_and_fails(capsys):
    assert main(["demo", "--query", "访客怎么登记？", "--roles", '["前台\\"x"]', "--dsl", "code"]) == 1
    out = capsys.readouterr().out
    assert "error: node " in out and "contains a character the pre-filter cannot match exactly" in out


def test_demo_refuses_a_file_that_is_not_a_chatflow(tmp_path, capsys):
    (tmp_path / "x.yml").write_text("- 1\n")
    assert "not a chatflow DSL" in one_error_line(capsys, ["demo", "--dsl", str(tmp_path / "x.yml")])


# --- the sample questions' language (issue 35, point 5) -------------------------------------------------------


@pytest.mark.parametrize(
    "environ,asked,chosen",
    [
        ({}, None, ("en", "no LANG set")),
        ({"LANG": "en_US.UTF-8"}, None, ("en", "LANG=en_US.UTF-8")),
        ({"LANG": "zh_CN.UTF-8"}, None, ("zh", "LANG=zh_CN.UTF-8")),
        ({"LANG": "zh_TW"}, None, ("zh", "LANG=zh_TW")),
        ({"LANG": "C.UTF-8"}, None, ("en", "LANG=C.UTF-8")),
        ({"LANG": "de_DE.UTF-8"}, None, ("en", "LANG=de_DE.UTF-8")),  # neither: English, the README's language
        ({"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, None, ("zh", "LC_ALL=zh_CN.UTF-8")),  # as programs read it
        ({"LC_MESSAGES": "en_GB", "LANG": "zh_CN.UTF-8"}, None, ("en", "LC_MESSAGES=en_GB")),
        ({"LC_ALL": "", "LANG": "zh_CN.UTF-8"}, None, ("zh", "LANG=zh_CN.UTF-8")),  # an empty variable is not set
        ({"DEMO_LANG": "zh", "LANG": "en_US.UTF-8"}, None, ("zh", "DEMO_LANG=zh")),
        ({"DEMO_LANG": "EN", "LC_ALL": "zh_CN.UTF-8"}, None, ("en", "DEMO_LANG=EN")),
        ({"DEMO_LANG": "en", "LANG": "zh_CN.UTF-8"}, "zh", ("zh", "--lang zh")),
    ],
)
def test_the_demo_language_comes_from_lang_or_demo_lang(environ, asked, chosen):
    from gcite.cli.demo import SAMPLE_TURNS, demo_language, language_note

    assert demo_language(environ, asked) == chosen
    lang, why = chosen
    other = {"en": "zh", "zh": "en"}[lang]
    note = language_note(lang, why)
    assert f"({why})" in note and f"make demo DEMO_LANG={other}" in note and f"--lang {other}" in note
    assert all(q.isascii() for q in SAMPLE_TURNS["en"]) and not any(q.isascii() for q in SAMPLE_TURNS["zh"])


def test_a_demo_lang_that_is_no_language_is_one_error_line(capsys, monkeypatch):
    monkeypatch.setenv("DEMO_LANG", "fr")
    assert one_error_line(capsys, ["demo"]) == "error: DEMO_LANG=fr: expected en or zh"
    assert "with --query there are none" in one_error_line(capsys, ["demo", "--lang", "zh", "--query", "q"])


def test_the_demo_asks_in_the_language_it_names(capsys, monkeypatch):
    monkeypatch.delenv("DEMO_LANG", raising=False)
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "Sample questions in Chinese (LANG=zh_CN.UTF-8); for English: make demo DEMO_LANG=en, or gcite demo --lang en"
    )
    assert "===== turn 1: 巡更时发现异常怎么上报？" in out and "===== turn 2: 会议室怎么预约？" in out
    assert main(["demo", "--lang", "en"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Sample questions in English (--lang en); for Chinese: make demo DEMO_LANG=zh")
    assert "===== turn 1: How do I report an anomaly on patrol?" in out
    assert out.count("status: cited") == 2  # the sample data answers both, with citations


# --- the Makefile ---------------------------------------------------------------------------------------------


def test_make_demo_passes_query_roles_and_dsl(tmp_path):
    import shutil

    if not shutil.which("make"):
        pytest.skip("make is not installed")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("QUERY", "ROLES", "DSL", "DEMO")}
    done = subprocess.run(
        ["make", "-s", "demo", 'QUERY=What\'s the visitor "rule"?', "ROLES=前台", "DSL=code", "DEMO=cli"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Chatflow: gcite_chatflow_code.yml" in done.stdout and "user_roles = 前台" in done.stdout
    assert '===== turn 1: What\'s the visitor "rule"?' in done.stdout and "turn 2" not in done.stdout


def test_make_demo_takes_demo_lang_over_lang():
    import shutil

    if not shutil.which("make"):
        pytest.skip("make is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("QUERY", "ROLES", "DSL", "DEMO", "LC_ALL", "LC_MESSAGES")}
    done = subprocess.run(
        ["make", "-s", "demo", "DEMO=cli", "DEMO_LANG=en"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "LANG": "zh_CN.UTF-8"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Sample questions in English (DEMO_LANG=en); for Chinese: make demo DEMO_LANG=zh")
    assert "===== turn 2: How do I book a meeting room?" in done.stdout


def test_the_set_up_announces_each_step():
    import shutil

    if not shutil.which("make"):
        pytest.skip("make is not installed")
    done = subprocess.run(
        ["make", "-n", "-W", "requirements-dev.txt", "venv"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    steps = [line for line in done.stdout.splitlines() if line.startswith('echo "==> set-up')]
    assert [s.split("]")[0] for s in steps[:4]] == [f'echo "==> set-up [{n}/4' for n in range(1, 5)]
    assert any("set-up done" in line for line in done.stdout.splitlines())
    install = [line for line in done.stdout.splitlines() if "-r requirements-dev.txt" in line]
    assert install and " -q " not in install[0]  # pip shows what it collects and installs


# --- rough edges: no traceback, no silently ignored flag (issue 14, point 7) ----------------------------------


def test_a_bare_command_line_prints_the_help(capsys):
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m gcite") and "build-dsl" in err and "Traceback" not in err


def test_acl_without_a_subcommand_names_the_subcommands(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["acl"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "{audit,fix}" in err.splitlines()[-1] and "acl_command" not in err


@pytest.mark.parametrize("command", ["build-dsl", "package"])
def test_out_that_is_a_file_or_under_one_is_a_one_line_error(command, tmp_path, capsys):
    extra = ["--slots", "2"] if command == "build-dsl" else ["--no-dsl-update"]
    (tmp_path / "a-file").write_text("x")
    line = one_error_line(capsys, [command, "--out", str(tmp_path / "a-file"), *extra])
    assert line == f"error: --out {tmp_path / 'a-file'}: not a directory"
    line = one_error_line(capsys, [command, "--out", str(tmp_path / "a-file" / "sub"), *extra])
    assert f"{tmp_path / 'a-file' / 'sub'}: Not a directory" in line and line.startswith("error: ")
    assert (tmp_path / "a-file").read_text() == "x"


def test_run_with_an_unreachable_llm_keeps_the_engine_log_off_stderr_unless_verbose(capsys):
    import logging

    args = [
        "run",
        str(ROOT / "dsl" / "gcite_chatflow_code.yml"),
        "--query",
        "会议室怎么预约？",
        "--inputs",
        '{"user_roles": "前台"}',
        "--llm-base-url",
        "http://127.0.0.1:9/v1",
        "--llm-model",
        "m",
    ]
    before = [(logging.getLogger(n).propagate, list(logging.getLogger(n).handlers)) for n in ("graphon", "dify_plugin")]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert captured.err == "" and '"event":"workflow_finished"' in captured.out and '"status":"failed"' in captured.out
    assert [
        (logging.getLogger(n).propagate, logging.getLogger(n).handlers) for n in ("graphon", "dify_plugin")
    ] == before
    assert main([*args, "--verbose"]) == 1
    err = capsys.readouterr().err
    assert "error while executing llm node" in err.lower() and "Traceback" in err  # the engine's own log, on request


def test_run_on_an_unknown_node_type_is_one_line(tmp_path, capsys):
    text = (ROOT / "dsl" / "gcite_chatflow_code.yml").read_text(encoding="utf-8").replace("type: code", "type: bogus")
    (tmp_path / "unknown.yml").write_text(text, encoding="utf-8")
    line = one_error_line(capsys, ["run", str(tmp_path / "unknown.yml"), "--query", "q"])
    assert line == f"error: {tmp_path / 'unknown.yml'}: DslError: Unsupported DSL node type: bogus"


def test_demo_shows_no_role_the_same_way_for_an_empty_list_and_a_lone_delimiter(capsys):
    from gcite.cli.demo import shown_roles

    assert shown_roles("") == shown_roles(",") == shown_roles(" ， ;") == "(none)"
    assert shown_roles("前台, 物业经理") == "前台, 物业经理"
    assert main(["demo", "--roles", ",", "--query", "会议室怎么预约？"]) == 0
    captured = capsys.readouterr()
    assert "user_roles = (none)\n" in captured.out and captured.err == ""


def test_acl_messages_count_in_the_right_number_and_give_the_field_default():
    from types import SimpleNamespace

    from gcite import acl as acl_admin
    from gcite.cli import acl as acl_cli

    assert acl_admin.attempts(1) == "1 attempt" and acl_admin.attempts(3) == "3 attempts"
    one = acl_admin.Report(rows=[SimpleNamespace(found=SimpleNamespace(status="ok"))])
    assert acl_cli.summary(one, "audit")[0].startswith("1 document: 1 follows the convention, 0 without")
    two = acl_admin.Report(rows=[SimpleNamespace(found=SimpleNamespace(status="ok"))] * 2)
    assert "2 documents: 2 follow the convention" in acl_cli.summary(two, "audit")[0]
    for name, parser in parsers():
        if name.startswith("python -m gcite acl "):
            field = next(a for a in parser._actions if "--acl-field" in a.option_strings)
            assert f"(default: {field.default})" in field.help
