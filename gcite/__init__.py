"""G-Cite outside Dify's sandbox: the client's types, the CLI, the local runner, the packager."""

from pathlib import Path

_HERE = Path(__file__).resolve().parent
_DATA = _HERE / "_plugin"
# the plugin tree: inside an installed wheel, its package data (pyproject.toml puts the plugin's files there); in a
# clone (and an editable install, which reads the clone), the repository itself. Never the current folder.
INSTALLED = (_DATA / "manifest.yaml").is_file()
ROOT = _DATA if INSTALLED else _HERE.parent


def unicode_problem(value: str, where: str) -> str | None:
    """Why `value` is not valid Unicode text (a lone surrogate, as bytes that are not UTF-8 on a command line arrive,
    cannot be encoded, stored or sent), or None."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        return (
            f"{where} is not valid Unicode text: lone surrogate U+{ord(value[error.start]):04X} at character "
            f"{error.start}"
        )
    return None


def load_yaml(text):
    """`yaml.safe_load` within bounds (gcite/safeyaml.py: size, nesting depth, nodes as aliases expand them), through
    libyaml's C loader where PyYAML has it; what cannot be read is a `yaml.YAMLError` with a one-line `problem`."""
    from gcite.safeyaml import load_bounded

    return load_bounded(text)
