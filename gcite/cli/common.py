"""What every command shares: the one-line usage error (`gcite.cli.errors`), the chatflow file reader, the engine's log
switch."""

import contextlib
import sys
from collections.abc import Iterator

from gcite import load_yaml
from gcite.cli.errors import CliError
from gcite.safeyaml import MAX_BYTES

ENGINE_LOGGERS = ("graphon", "dify_plugin")


@contextlib.contextmanager
def engine_logs(verbose: bool) -> Iterator[None]:
    """While a command runs, the workflow engine's log records (a failed node logs its traceback) go to stderr with
    --verbose, and nowhere without it: the CLI reports a failure as one `error:` line. Only these loggers, restored
    afterwards."""
    import logging

    if verbose:
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("[%(name)s] %(levelname)s: %(message)s"))
    else:
        handler = logging.NullHandler()  # a handler, so that logging's last resort (stderr) is not used
    saved = []
    for name in ENGINE_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate, list(logger.handlers)))
        logger.propagate = False
        logger.handlers = [handler]
    try:
        yield
    finally:
        for logger, propagate, handlers in saved:
            logger.propagate, logger.handlers = propagate, handlers


def add_llm_arguments(parser) -> None:
    """`--llm-base-url URL --llm-model NAME` (`demo`, `run`; `serve` words its help for the app it serves)."""
    parser.add_argument(
        "--llm-base-url",
        metavar="URL",
        help="an OpenAI-compatible endpoint (key in GCITE_LLM_API_KEY); needs --llm-model; "
        "default: the built-in extractive stand-in",
    )
    parser.add_argument("--llm-model", metavar="NAME", help="model name at --llm-base-url (needs --llm-base-url)")


def add_knowledge_base_argument(parser) -> None:
    """`--knowledge-base FILE` (`demo`, `run`, `serve`): the local Knowledge Retrieval's documents."""
    parser.add_argument(
        "--knowledge-base",
        metavar="FILE",
        help="a knowledge base JSON file in the format of gcite/local/samples/knowledge_base.json (default: that file)",
    )


def llm_options_problem(args) -> str | None:
    """--llm-base-url and --llm-model go together (`demo`, `run`, `serve`): what is wrong, or None."""
    if args.llm_base_url and not args.llm_model:
        return "--llm-base-url needs --llm-model"
    if args.llm_model and not args.llm_base_url:
        return "--llm-model needs --llm-base-url (the built-in stand-in has no models to choose)"
    return None


def os_error_text(error: OSError) -> str:
    """An OSError in one line: what failed and why, without a traceback."""
    reason = error.strerror or str(error) or type(error).__name__
    return f"{error.filename}: {reason}" if error.filename else reason


MAX_DSL_BYTES = MAX_BYTES  # Dify's own DSL import limit, as gcite/safeyaml.py reads it
MAX_KNOWLEDGE_BASE_BYTES = 64 * 1024 * 1024  # a --knowledge-base file (the sample is 40 KB)


def read_capped(path, limit: int, what: str) -> bytes:
    """A file's bytes, read to at most one byte past `limit`; a larger file is a CliError naming the limit (`what`)
    and is never read whole. An OSError is the caller's to report."""
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise CliError(f"{path}: larger than {limit // (1024 * 1024)} MiB ({what}); not read further")
    return data


def read_text(path, kind: str = "a YAML file", limit: int = MAX_DSL_BYTES) -> str:
    """A file's UTF-8 text (newlines as Python's text mode reads them), read to at most `limit` bytes (Dify's DSL
    import limit), or a CliError saying in one line why it cannot be read (`kind`: what it should be)."""
    try:
        text = read_capped(path, limit, "Dify's own DSL import limit").decode("utf-8")
    except UnicodeDecodeError:
        raise CliError(f"{path}: not {kind} (not UTF-8 text)") from None
    except OSError as error:
        raise CliError(f"{path}: cannot read it ({type(error).__name__}: {error.strerror or error})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_chatflow_file(path) -> str:
    """The text of a chatflow DSL file, or a CliError saying in one line why it is not one."""
    import yaml

    text = read_text(path)
    try:
        document = load_yaml(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or type(error).__name__
        raise CliError(f"{path}: not a YAML file ({problem}{where})") from None
    if not isinstance(document, dict):
        raise CliError(
            f"{path}: not a chatflow DSL (expected a mapping at the top, found "
            f"{type(document).__name__ if document is not None else 'an empty file'})"
        )
    if document.get("app") is not None and not isinstance(document["app"], dict):
        raise CliError(f"{path}: not a chatflow DSL (app is {type(document['app']).__name__}, not a mapping)")
    mode = (document.get("app") or {}).get("mode")
    if mode is not None and mode != "advanced-chat":
        raise CliError(f"{path}: not a chatflow DSL (app.mode is {mode!r}; a chatflow has 'advanced-chat')")
    workflow = document.get("workflow")
    if not isinstance(workflow, dict) or not isinstance(workflow.get("graph"), dict):
        raise CliError(f"{path}: not a chatflow DSL (it has no workflow.graph)")
    return text


def load_knowledge_base(path):
    """The knowledge base of `--knowledge-base PATH` (`run`, `demo`, `serve`), read once and no further than its cap,
    or a CliError saying in one line, naming --knowledge-base, why it is not a knowledge base file like
    gcite/local/samples/knowledge_base.json; None for no path (the built-in sample)."""
    import json

    if path is None:
        return None
    try:
        data = json.loads(read_capped(path, MAX_KNOWLEDGE_BASE_BYTES, "the knowledge base limit").decode("utf-8"))
    except CliError as error:
        raise CliError(f"--knowledge-base {error}") from None
    except UnicodeDecodeError:
        raise CliError(f"--knowledge-base {path}: not a JSON file (not UTF-8 text)") from None
    except OSError as error:
        raise CliError(f"--knowledge-base {path}: cannot read it ({error.strerror or type(error).__name__})") from None
    except ValueError as error:
        raise CliError(
            f"--knowledge-base {path}: not a JSON file ({getattr(error, 'msg', error)} at line "
            f"{getattr(error, 'lineno', '?')}, column {getattr(error, 'colno', '?')})"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("documents"), list):
        raise CliError(
            f'--knowledge-base {path}: not a knowledge base (expected a JSON object with a "documents" list, '
            f"as in gcite/local/samples/knowledge_base.json)"
        )
    return data
