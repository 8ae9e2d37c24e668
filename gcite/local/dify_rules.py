"""What Dify's `api/` enforces around graphon, for the local runner, with Dify's own messages.

graphon is only the engine: a chatflow that runs on graphon can still fail in Dify. These checks make the runner fail
where Dify would (the places in Dify's source are named on each function):
- conversation- and environment-variable ids are rows of a PostgreSQL `UUID` column;
- Start-form inputs are validated before the run (`BaseAppGenerator._validate_inputs`), the query too;
- Code-node output limits come from Dify's `CODE_MAX_*` settings (`api/configs/feature/__init__.py`), the same
  environment variable names and defaults; graphon's `CodeNode` checks outputs against them.
"""

import math
import os
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from gcite import unicode_problem
from gcite.local.engine import DslCodeSettings, VariableEntity, VariableEntityType


class DifyRefusal(ValueError):
    """Dify would refuse this DSL, input or setting before the workflow runs."""


class FormInputRejected(DifyRefusal):
    """A Start-form value Dify's `_prepare_user_inputs` rejects (Dify's message). Dify still answers HTTP 200 with a
    stream: ping, `workflow_started`, `workflow_finished` (failed, this message); the runner streams the same."""


# --- variable ids ---------------------------------------------------------------------------------------------

# PostgreSQL's uuid input: 32 hex digits, optionally in braces, with a hyphen allowed after any group of four.
_PG_UUID = re.compile(r"[0-9a-fA-F]{4}(?:-?[0-9a-fA-F]{4}){7}")


def is_postgres_uuid(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    inner = value[1:-1] if value.startswith("{") and value.endswith("}") else value
    return _PG_UUID.fullmatch(inner) is not None


def check_variable_ids(workflow: Mapping[str, Any]) -> None:
    """Every conversation / environment variable id must be a UUID: Dify inserts one row per variable into a table
    whose `id` column is a PostgreSQL UUID, on the first message (`AdvancedChatAppRunner`). A missing id is fine
    (Dify generates one)."""
    for section in ("conversation_variables", "environment_variables"):
        variables = workflow.get(section) or []
        if not isinstance(variables, list):
            raise DifyRefusal(f"workflow.{section} must be a list")
        for n, variable in enumerate(variables):
            if not isinstance(variable, Mapping):
                raise DifyRefusal(f"workflow.{section}[{n}] must be a mapping")
            if "id" not in variable or variable["id"] is None:
                continue
            if not is_postgres_uuid(variable["id"]):
                raise DifyRefusal(
                    f"workflow.{section}[{n}] ({variable.get('name')!r}): invalid input syntax for type "
                    f'uuid: "{variable["id"]}" (Dify stores variable ids in a UUID column; every chat '
                    f"run would fail on its first message)"
                )


# --- query and Start-form inputs ------------------------------------------------------------------------------


def check_text(value: str, where: str) -> str:
    """A clear error for text that is not valid Unicode (`gcite.unicode_problem`)."""
    problem = unicode_problem(value, where)
    if problem:
        raise DifyRefusal(problem)
    return value


def validate_query(query: Any) -> str:
    """`AdvancedChatAppGenerator.generate`: the query must be a non-empty string; NUL characters are removed."""
    if not query:
        raise DifyRefusal("query is required")
    if not isinstance(query, str):
        raise DifyRefusal("query must be a string")
    return check_text(query, "query").replace("\x00", "")


def start_variables(graph: Mapping[str, Any], root: str) -> list[VariableEntity]:
    node = next((n for n in graph.get("nodes") or [] if n.get("id") == root), None)
    raw = ((node or {}).get("data") or {}).get("variables") or []
    if not isinstance(raw, list):
        raise DifyRefusal(f"the Start node's variables are not valid: expected a list, got {type(raw).__name__}")
    variables = []
    for n, value in enumerate(raw):
        try:
            variables.append(VariableEntity.model_validate(value))
        except ValueError as error:
            raise DifyRefusal(
                f"the Start node's variables are not valid: variables[{n}]: {validation_text(error)}"
            ) from error
    return variables


def validation_text(error: Exception) -> str:
    """A pydantic ValidationError as one line naming each field (`variables.0: Input should be …`; at most three),
    any other error as its first line."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        try:
            found = errors()
        except Exception:  # noqa: BLE001 - not pydantic's after all: its first line below
            found = None
        if found:
            parts = [f"{'.'.join(map(str, e.get('loc') or ())) or 'value'}: {e.get('msg')}" for e in found[:3]]
            more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
            return "; ".join(parts) + more
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def check_nested_text(value: Any, where: str, depth: int = 0) -> None:
    if depth > 100:
        raise DifyRefusal(f"{where} is nested more than 100 levels deep")
    if isinstance(value, str):
        check_text(value, where)
    elif isinstance(value, float) and not math.isfinite(value):
        raise DifyRefusal(f"{where} is {value}, which is not a JSON number")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            check_text(str(key), f"{where} (a key)")
            check_nested_text(item, f"{where}.{key}", depth + 1)
    elif isinstance(value, (list, tuple)):
        for n, item in enumerate(value):
            check_nested_text(item, f"{where}[{n}]", depth + 1)


def validate_input(variable: VariableEntity, value: Any) -> Any:
    """One Start-form value, as `BaseAppGenerator._validate_inputs` checks and converts it (Dify's messages)."""
    if value is None:
        if variable.required:
            raise FormInputRejected(f"{variable.variable} is required in input form")
        value = variable.default
        if value is None:
            return None
    kind = variable.type
    if kind in (VariableEntityType.FILE, VariableEntityType.FILE_LIST):
        if not variable.required and isinstance(value, str) and not value:
            return None
        raise DifyRefusal(f"{variable.variable}: the local runner has no file storage, so it takes no file inputs")
    if kind in (
        VariableEntityType.TEXT_INPUT,
        VariableEntityType.SELECT,
        VariableEntityType.PARAGRAPH,
    ) and not isinstance(value, str):
        raise FormInputRejected(f"(type '{kind}') {variable.variable} in input form must be a string")
    if kind == VariableEntityType.NUMBER:
        if isinstance(value, (int, float)):
            return value
        if isinstance(value, str):
            if not value.strip():
                return None
            try:
                return float(value) if "." in value else int(value)
            except ValueError:
                raise FormInputRejected(f"{variable.variable} in input form must be a valid number") from None
        raise FormInputRejected(f"expected value type int, float or str, got {type(value)}, value: {value}")
    if kind == VariableEntityType.SELECT:
        if value not in variable.options:
            raise FormInputRejected(
                f"{variable.variable} in input form must be one of the following: {variable.options}"
            )
    elif kind in (VariableEntityType.TEXT_INPUT, VariableEntityType.PARAGRAPH):
        if variable.max_length and len(value) > variable.max_length:
            raise FormInputRejected(
                f"{variable.variable} in input form must be less than {variable.max_length} characters"
            )
    elif kind == VariableEntityType.CHECKBOX:
        if isinstance(value, str):
            value = {
                "true": True,
                "1": True,
                "yes": True,
                "on": True,
                "false": False,
                "0": False,
                "no": False,
                "off": False,
            }.get(value.strip().lower(), value)
        elif isinstance(value, (int, float)) and value in (0, 1):
            value = bool(value)
    elif kind == VariableEntityType.JSON_OBJECT:
        if value and not isinstance(value, dict):
            raise FormInputRejected(f"{variable.variable} in input form must be a dict")
    return value


def validate_start_inputs(variables: list[VariableEntity], inputs: Mapping[str, Any]) -> dict[str, Any]:
    """`BaseAppGenerator._prepare_user_inputs`: every declared variable, validated (a hidden field too); values of
    undeclared names are dropped; NUL characters are removed from strings."""
    prepared: dict[str, Any] = {}
    for variable in variables:
        value = validate_input(variable, inputs.get(variable.variable))
        check_nested_text(value, f"inputs.{variable.variable}")
        prepared[variable.variable] = value.replace("\x00", "") if isinstance(value, str) else value
    kinds = {v.variable: v.type for v in variables}
    wrong = [
        k
        for k, v in prepared.items()
        if isinstance(v, dict) and kinds[k] not in (VariableEntityType.FILE, VariableEntityType.JSON_OBJECT)
    ]
    if wrong:
        raise FormInputRejected(f"Invalid input type for {wrong}")
    wrong = [
        k
        for k, v in prepared.items()
        if isinstance(v, list) and any(isinstance(i, dict) for i in v) and kinds[k] != VariableEntityType.FILE_LIST
    ]
    if wrong:
        raise FormInputRejected(f"Invalid input type for {wrong}")
    return prepared


# --- Code-node limits -----------------------------------------------------------------------------------------

# Dify's setting → graphon's CodeNodeLimits field. Defaults are Dify's (and graphon's DslCodeSettings').
CODE_LIMIT_SETTINGS = {
    "CODE_MAX_NUMBER": "max_number",
    "CODE_MIN_NUMBER": "min_number",
    "CODE_MAX_DEPTH": "max_depth",
    "CODE_MAX_PRECISION": "max_precision",
    "CODE_MAX_STRING_LENGTH": "max_string_length",
    "CODE_MAX_STRING_ARRAY_LENGTH": "max_string_array_length",
    "CODE_MAX_OBJECT_ARRAY_LENGTH": "max_object_array_length",
    "CODE_MAX_NUMBER_ARRAY_LENGTH": "max_number_array_length",
}


def code_settings(environ: Mapping[str, str] | None = None) -> DslCodeSettings:
    """The Code-node limits, read from Dify's environment variables when set (each a positive integer, or a
    negative one for CODE_MIN_NUMBER, as Dify's settings require)."""
    environ = os.environ if environ is None else environ
    values: dict[str, int] = {}
    for name, limit in CODE_LIMIT_SETTINGS.items():
        raw = environ.get(name)
        if raw is None or raw.strip() == "":
            continue
        try:
            number = int(raw.strip())
        except ValueError:
            raise DifyRefusal(f"{name}={raw[:40]!r} is not an integer") from None
        if name == "CODE_MIN_NUMBER" and number >= 0:
            raise DifyRefusal(f"{name}={number} must be a negative integer")
        if name != "CODE_MIN_NUMBER" and number <= 0:
            raise DifyRefusal(f"{name}={number} must be a positive integer")
        values[limit] = number
    return DslCodeSettings(**values)


# --- encodings of the stream ----------------------------------------------------------------------------------


def decimal_encoded(value: Any) -> Any:
    """Dify's `jsonable_encoder` for numbers: a Decimal becomes an int when it has no fraction digits, else a float."""
    if isinstance(value, Decimal):
        return int(value) if value.as_tuple().exponent >= 0 else float(value)  # type: ignore[operator]
    if isinstance(value, Mapping):
        return {str(k): decimal_encoded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [decimal_encoded(v) for v in value]
    return value


def pydantic_json(value: Any, decimal: Callable[[Decimal], Any] = str) -> Any:
    """What pydantic's `model_dump(mode="json")` makes of a stream field's value: a Decimal becomes its text,
    a non-finite float null, a segment its object. The one JSON encoder for Dify's values: the runner's conversation
    memory keeps numbers as numbers (`decimal=float`)."""
    if hasattr(value, "to_object"):
        value = value.to_object()
    if isinstance(value, Mapping):
        return {str(getattr(k, "value", k)): pydantic_json(v, decimal) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [pydantic_json(v, decimal) for v in value]
    if isinstance(value, Decimal):
        return decimal(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "model_dump"):
        return pydantic_json(value.model_dump(mode="json"), decimal)
    if value is None or isinstance(value, (str, int, float, bool)):
        return getattr(value, "value", value) if not isinstance(value, bool) else value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "model_dump"):
        return pydantic_json(value.model_dump(mode="json"))
    if value is None or isinstance(value, (str, int, float, bool)):
        return getattr(value, "value", value) if not isinstance(value, bool) else value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
