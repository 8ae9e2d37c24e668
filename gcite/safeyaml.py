"""Reading a Dify app DSL (or any YAML a command is given) with bounds: every form Dify writes, never a traceback, a
`MemoryError` or a `RecursionError`.

- Forms: YAML as Studio exports it, and the export API's JSON `{"data": "<yaml>"}` (read as JSON, so an emoji the
  JSON escapes as a surrogate pair `\\ud83d\\udcd6` is the one character it stands for, not two lone surrogates).
- Bounds (docs/security.md): at most `MAX_BYTES` of text (Dify's own DSL import limit), `MAX_DEPTH` levels of
  nesting, `MAX_NODES` nodes counted as aliases expand them (an alias to a 1,000-node mapping counts 1,000: an alias
  bomb is refused before anything is built from it).
- Errors: `DslReadError`, one line naming the position (line and column) when there is one.
"""

import json
from typing import Any

import yaml

MAX_BYTES = 10 * 1024 * 1024  # Dify: services/dsl_content.py DSL_MAX_SIZE
MAX_DEPTH = 100  # nesting levels; a Dify DSL has about 12
MAX_NODES = 2_000_000  # YAML nodes, aliases counted as expanded; a 2,000-node chatflow has about 150,000


class DslReadError(yaml.YAMLError, ValueError):
    """The text cannot be read within the bounds: one line, with the position where there is one (a YAMLError too,
    so that a caller catching PyYAML's errors catches it; `problem` is the line)."""

    problem_mark = None

    @property
    def problem(self) -> str:
        return str(self)


def _where(mark: Any) -> str:
    return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def safe_loader() -> type:
    """PyYAML's safe loader through libyaml (the C parser) where PyYAML has it, else in pure Python."""
    return getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader


def check_events(text: str) -> None:
    """Walks the YAML event stream once (no tree built, no recursion): refuses nesting deeper than MAX_DEPTH and
    more than MAX_NODES nodes as aliases expand them."""
    depth, total = 0, 0
    sizes: dict[str, int] = {}
    open_anchors: list[tuple[str | None, int]] = []
    try:
        for event in yaml.parse(text, Loader=safe_loader()):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                total += 1
                depth += 1
                if depth > MAX_DEPTH:
                    raise DslReadError(f"nested more than {MAX_DEPTH} levels deep{_where(event.start_mark)}")
                open_anchors.append((event.anchor, total))
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
                anchor, at = open_anchors.pop()
                if anchor is not None:
                    sizes[anchor] = total - at + 1
            elif isinstance(event, yaml.ScalarEvent):
                total += 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                total += sizes.get(event.anchor, 1)
            if total > MAX_NODES:
                raise DslReadError(
                    f"more than {MAX_NODES:,} YAML nodes once its aliases are expanded (an alias "
                    f"bomb?){_where(getattr(event, 'start_mark', None))}"
                )
    except DslReadError:
        raise
    except (yaml.YAMLError, ValueError):  # ValueError: see load_bounded
        return  # the text up to the error is within bounds; the loader reports the error itself


def yaml_error_text(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or (str(error).splitlines() or [type(error).__name__])[0]
    return f"not valid YAML ({problem}{_where(mark)})"


def surrogate_problem(text: str) -> str | None:
    """Where `text` holds a lone surrogate (it cannot be encoded, stored or sent), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        line = text.count("\n", 0, error.start) + 1
        column = error.start - (text.rfind("\n", 0, error.start) + 1) + 1
        return f"lone surrogate U+{ord(text[error.start]):04X} at line {line}, column {column}"
    return None


def load_bounded(text: str) -> Any:
    """`yaml.safe_load` within the bounds above (libyaml's loader where PyYAML has it), or a DslReadError; a text
    that is not YAML raises safe_load's own error (read again by the pure-Python loader, for its marks)."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise DslReadError(f"larger than {MAX_BYTES // (1024 * 1024)} MiB (Dify's own DSL import limit)")
    if problem := surrogate_problem(text):
        raise DslReadError(f"not valid Unicode text: {problem}")
    check_events(text)
    try:
        try:
            return yaml.load(text, Loader=safe_loader())
        except yaml.YAMLError as error:
            try:
                return yaml.safe_load(text)
            except ValueError:  # see below: libyaml's own error says it, with its position
                raise error from None
    except RecursionError:  # bounded above; kept so that no input ends in a traceback
        raise DslReadError(f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as error:
        # PyYAML's pure-Python scanner calls chr() on a "\U…" escape past U+10FFFF (found by make fuzz)
        raise DslReadError(f"not valid YAML ({str(error)[:200]})") from None


def read_dsl(text: str) -> tuple[Any, str, bool]:
    """`_read_dsl`, every error a DslReadError (one line)."""
    try:
        return _read_dsl(text)
    except DslReadError:
        raise
    except yaml.YAMLError as error:
        raise DslReadError(yaml_error_text(error)) from None


def _read_dsl(text: str) -> tuple[Any, str, bool]:
    """A DSL text in any form Dify writes → (the document, its YAML text, whether it came in the export API's
    `{"data": "<yaml>"}` form). The JSON form is read as JSON first, so surrogate-pair escapes are the characters
    they stand for; its YAML is then read within the same bounds."""
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("{"):
        try:
            wrapper = json.loads(stripped)
        except RecursionError:
            raise DslReadError(f"nested more than {MAX_DEPTH} levels deep (JSON)") from None
        except ValueError:
            wrapper = None  # YAML flow style, perhaps: read as YAML below
        if isinstance(wrapper, dict) and set(wrapper) == {"data"} and isinstance(wrapper["data"], str):
            return load_bounded(wrapper["data"]), wrapper["data"], True
    document = load_bounded(text)
    if isinstance(document, dict) and set(document) == {"data"} and isinstance(document["data"], str):
        return load_bounded(document["data"]), document["data"], True
    return document, text, False
