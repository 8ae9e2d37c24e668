"""The runner refuses what Dify's api/ refuses around graphon, with Dify's own messages: non-UUID variable ids,
Start-form inputs that fail Dify's validation, Code-node outputs over Dify's limits (settable as Dify's CODE_MAX_*)."""

import re
import uuid

import pytest

from gcite.authoring import chatflows
from gcite.local.dify_rules import DifyRefusal, code_settings, is_postgres_uuid
from gcite.local.runner import Services, run_chatflow
from tests.support.plugins import shared_plugins
from tests.support.runner_dsl import minimal_dsl, text_input
from tests.support.yamltext import safe_load

DSLS = {"plugin": chatflows.PLUGIN_DSL, "code": chatflows.CODE_DSL}


def run(text: str, query: str = "q", inputs: dict | None = None, **services) -> list[dict]:
    svc = Services(**services, shared_plugins=shared_plugins())
    try:
        return list(run_chatflow(text, query, inputs or {}, svc))
    finally:
        svc.close()


def node(events: list[dict], node_id: str) -> dict:
    return next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == node_id)


# --- variable ids ---------------------------------------------------------------------------------------------


def variable_ids(text: str) -> list[str]:
    workflow = safe_load(text)["workflow"]
    return [v["id"] for section in ("conversation_variables", "environment_variables") for v in workflow[section]]


@pytest.mark.parametrize("kind", sorted(DSLS))
def test_both_shipped_dsls_use_uuid_variable_ids_that_are_stable(kind):
    committed = variable_ids(DSLS[kind].read_text(encoding="utf-8"))
    assert committed, "the chatflow keeps its history in conversation variables"
    for value in committed:
        assert str(uuid.UUID(value)) == value  # canonical, lower-case, hyphenated
    assert len(set(committed)) == len(committed)
    first, second = chatflows.generated(), chatflows.generated()
    assert variable_ids(first[DSLS[kind]]) == variable_ids(second[DSLS[kind]]) == committed  # derived, not random


@pytest.mark.parametrize("section", ["conversation_variables", "environment_variables"])
def test_a_non_uuid_variable_id_is_refused_with_postgresqls_message(section):
    variable = {"id": "gcite-history", "name": "history", "value_type": "string", "value": "", "description": ""}
    text = minimal_dsl(**{section: [variable]})
    with pytest.raises(DifyRefusal, match=re.escape('invalid input syntax for type uuid: "gcite-history"')):
        run(text)
    variable["id"] = str(uuid.uuid5(uuid.NAMESPACE_URL, "x"))
    assert run(minimal_dsl(**{section: [variable]}))[-1]["data"]["status"] == "succeeded"


def test_the_uuid_check_takes_what_postgresql_takes():
    value = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    for accepted in (
        value,
        value.upper(),
        "{" + value + "}",
        value.replace("-", ""),
        "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
    ):
        assert is_postgres_uuid(accepted), accepted
    for refused in (
        "gcite-history",
        value[:-1],
        value + "0",
        "urn:uuid:" + value,
        "{" + value,
        value + "}",
        7,
        None,
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g",
    ):
        assert not is_postgres_uuid(refused), refused


def test_the_cli_refuses_a_non_uuid_variable_id_in_one_line(tmp_path, capsys):
    from gcite.cli.main import main as cli

    text = DSLS["plugin"].read_text(encoding="utf-8")
    (tmp_path / "bad.yml").write_text(text.replace(variable_ids(text)[0], "gcite-history"), encoding="utf-8")
    assert cli(["run", str(tmp_path / "bad.yml"), "--query", "q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and 'invalid input syntax for type uuid: "gcite-history"' in err


# --- Start-form inputs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,message",
    [
        (["物业经理"], "(type 'text-input') user_roles in input form must be a string"),
        (7, "(type 'text-input') user_roles in input form must be a string"),
        ({"roles": "物业经理"}, "(type 'text-input') user_roles in input form must be a string"),
        ("x" * 257, "user_roles in input form must be less than 256 characters"),
    ],
)
def test_the_shipped_hidden_user_roles_field_is_validated_as_dify_validates_it(value, message):
    start = next(
        n["data"]
        for n in safe_load(DSLS["code"].read_text(encoding="utf-8"))["workflow"]["graph"]["nodes"]
        if n["data"]["type"] == "start"
    )
    assert start["variables"][0]["hide"] is True and start["variables"][0]["max_length"] == 256
    assert_rejected_as_dify_streams_it(
        run(DSLS["code"].read_text(encoding="utf-8"), inputs={"user_roles": value}), {"user_roles": value}, message
    )


def assert_rejected_as_dify_streams_it(events: list[dict], inputs: dict, message: str) -> None:
    """Dify answers HTTP 200: ping, workflow_started (the inputs as sent), workflow_finished failed with its
    message; no conversation or message yet (checked in real Dify by tests/dify)."""
    assert [e["event"] for e in events] == ["ping", "workflow_started", "workflow_finished"]
    started, finished = events[1], events[2]
    assert started["data"]["inputs"] == inputs
    assert (finished["data"]["status"], finished["data"]["error"]) == ("failed", message)
    assert (finished["data"]["total_steps"], finished["data"]["outputs"]) == (0, None)
    for event in events[1:]:
        assert set(event) == {"event", "task_id", "workflow_run_id", "data"}


FORM = [
    text_input("name", max_length=5, required=True),
    {"variable": "notes", "label": "notes", "type": "paragraph", "required": False, "max_length": 10},
    {"variable": "size", "label": "size", "type": "select", "required": False, "options": ["S", "M"]},
    {"variable": "count", "label": "count", "type": "number", "required": False},
    text_input("secret", hide=True, max_length=3),
]


@pytest.mark.parametrize(
    "inputs,message",
    [
        ({}, "name is required in input form"),
        ({"name": None}, "name is required in input form"),
        ({"name": "abcdef"}, "name in input form must be less than 5 characters"),
        ({"name": "a", "notes": "x" * 11}, "notes in input form must be less than 10 characters"),
        ({"name": "a", "notes": 3}, "(type 'paragraph') notes in input form must be a string"),
        ({"name": "a", "size": "XL"}, "size in input form must be one of the following: ['S', 'M']"),
        ({"name": "a", "size": 1}, "(type 'select') size in input form must be a string"),
        ({"name": "a", "count": "many"}, "count in input form must be a valid number"),
        (
            {"name": "a", "secret": "abcd"},
            "secret in input form must be less than 3 characters",
        ),  # hidden: still checked
    ],
)
def test_start_form_inputs_are_rejected_with_difys_messages_in_difys_stream(inputs, message):
    assert_rejected_as_dify_streams_it(run(minimal_dsl(FORM), inputs=inputs), inputs, message)


def test_an_input_that_is_not_unicode_text_is_refused_before_any_stream():
    with pytest.raises(DifyRefusal) as refused:
        run(minimal_dsl(FORM), inputs={"name": "a\ud800"})
    assert str(refused.value) == "inputs.name is not valid Unicode text: lone surrogate U+D800 at character 1"


def test_accepted_inputs_are_converted_and_cleaned_as_dify_does():
    events = run(
        minimal_dsl(FORM, answer="{{#start.name#}}|{{#start.count#}}"),
        inputs={"name": "a\x00b", "count": "2.5", "size": "M", "unknown": "dropped"},
    )
    started = next(e for e in events if e["event"] == "workflow_started")["data"]["inputs"]
    assert {k: started[k] for k in ("name", "notes", "size", "count", "secret")} == {
        "name": "ab",
        "notes": None,
        "size": "M",
        "count": 2.5,
        "secret": None,
    }
    assert "unknown" not in started and "sys.conversation_id" not in started and started["sys.query"] == "q"
    assert events[-1]["data"]["outputs"]["answer"] == "ab|2.5"


@pytest.mark.parametrize(
    "query,message",
    [
        ("", "query is required"),
        (["q"], "query must be a string"),
        ("a\udcff", "query is not valid Unicode text: lone surrogate U+DCFF at character 1"),
    ],
)
def test_the_query_is_checked_as_dify_checks_it(query, message):
    with pytest.raises(DifyRefusal) as refused:
        run(minimal_dsl(), query=query)
    assert str(refused.value) == message


# --- Code-node output limits ----------------------------------------------------------------------------------


def code_run(expression: str, output_type: str, environ: dict | None = None) -> list[dict]:
    return run(
        minimal_dsl(code=f"def main():\n    return {{'out': {expression}}}\n", outputs={"out": output_type}),
        code_environ=environ or {},
    )


@pytest.mark.parametrize(
    "expression,output_type,message",
    [
        ("['s'] * 31", "array[string]", "The length of output variable `out` must be less than 30 elements."),
        ("[{'a': 1}] * 31", "array[object]", "The length of output variable `out` must be less than 30 elements."),
        ("[1] * 1001", "array[number]", "The length of output variable `out` must be less than 1000 elements."),
        ("'x' * 400001", "string", "The length of output variable `out` must be less than 400000 characters"),
        (
            "2 ** 63",
            "number",
            "Output variable `out` is out of range, it must be between -9223372036854775807 and 9223372036854775807.",
        ),
        ("1.5e-21", "number", "Output variable `out` has too high precision, it must be less than 20 digits."),
        ("{'a': {'b': {'c': {'d': {}}}}}", "object", "Depth limit 5 reached, object too deep."),
    ],
)
def test_an_output_over_difys_limit_fails_the_code_node_and_the_run(expression, output_type, message):
    events = code_run(expression, output_type)
    code = node(events, "code")
    assert code["status"] == "failed" and code["error"] == message
    assert events[-1]["event"] == "workflow_finished" and events[-1]["data"]["error"] == message
    assert "error" not in [e["event"] for e in events]


@pytest.mark.parametrize(
    "setting,expression,output_type",
    [
        ("CODE_MAX_STRING_ARRAY_LENGTH", "['s'] * 31", "array[string]"),
        ("CODE_MAX_OBJECT_ARRAY_LENGTH", "[{'a': 1}] * 31", "array[object]"),
        ("CODE_MAX_NUMBER_ARRAY_LENGTH", "[1] * 1001", "array[number]"),
        ("CODE_MAX_STRING_LENGTH", "'x' * 400001", "string"),
        ("CODE_MAX_DEPTH", "{'a': {'b': {'c': {'d': {}}}}}", "object"),
        ("CODE_MAX_PRECISION", "1.5e-21", "number"),
        ("CODE_MAX_NUMBER", "2 ** 63", "number"),
    ],
)
def test_the_limits_are_set_with_difys_environment_variables(setting, expression, output_type):
    raised = {
        "CODE_MAX_STRING_ARRAY_LENGTH": "31",
        "CODE_MAX_OBJECT_ARRAY_LENGTH": "31",
        "CODE_MAX_NUMBER_ARRAY_LENGTH": "1001",
        "CODE_MAX_STRING_LENGTH": "400001",
        "CODE_MAX_DEPTH": "6",
        "CODE_MAX_PRECISION": "22",
        "CODE_MAX_NUMBER": str(2**63),
    }[setting]
    assert node(code_run(expression, output_type, {setting: raised}), "code")["status"] == "succeeded"
    lowered = code_run("['s'] * 3", "array[string]", {"CODE_MAX_STRING_ARRAY_LENGTH": "2"})
    assert node(lowered, "code")["error"] == "The length of output variable `out` must be less than 2 elements."


def test_code_min_number_is_set_too():
    assert (
        node(code_run("-5", "number", {"CODE_MIN_NUMBER": "-4"}), "code")["error"]
        == "Output variable `out` is out of range, it must be between -4 and 9223372036854775807."
    )


@pytest.mark.parametrize(
    "environ,message",
    [
        ({"CODE_MAX_DEPTH": "deep"}, "CODE_MAX_DEPTH='deep' is not an integer"),
        ({"CODE_MAX_STRING_ARRAY_LENGTH": "0"}, "CODE_MAX_STRING_ARRAY_LENGTH=0 must be a positive integer"),
        ({"CODE_MIN_NUMBER": "5"}, "CODE_MIN_NUMBER=5 must be a negative integer"),
    ],
)
def test_an_invalid_limit_setting_is_a_clear_error(environ, message):
    with pytest.raises(DifyRefusal) as refused:
        code_settings(environ)
    assert str(refused.value) == message


def test_the_defaults_are_difys():
    settings = code_settings({})
    assert (
        settings.max_string_array_length,
        settings.max_object_array_length,
        settings.max_number_array_length,
        settings.max_string_length,
        settings.max_depth,
        settings.max_number,
        settings.min_number,
        settings.max_precision,
    ) == (30, 30, 1000, 400_000, 5, 9223372036854775807, -9223372036854775807, 20)


def test_a_code_node_input_over_128_kib_runs():
    """The program (inputs inside, base64) goes on stdin as dify-sandbox takes it in a file, never on argv, whose
    single-argument limit is 128 KiB on Linux."""
    text = minimal_dsl(
        [{"variable": "doc", "label": "doc", "type": "paragraph", "required": True}],
        code="def main(doc: str) -> dict:\n    return {'n': len(doc), 'tail': doc[-3:]}\n",
        code_inputs={"doc": ["start", "doc"]},
        outputs={"n": "number", "tail": "string"},
        answer="{{#code.n#}} {{#code.tail#}}",
    )
    events = run(text, inputs={"doc": "文" * 300_000 + "end"})
    assert node(events, "code")["status"] == "succeeded"
    assert events[-1]["data"]["outputs"]["answer"] == "300003 end"
