"""The `gcite` console command (pyproject.toml) and `python -m gcite`: one line, never a traceback, when this Python
lacks the packages the command needs."""

import sys
from importlib.util import find_spec

NEEDED = ("yaml", "requests", "jwt", "dify_plugin", "graphon")


def main() -> int:
    missing = [name for name in NEEDED if find_spec(name) is None]
    if missing:
        hint = (
            "pip install --no-deps -r requirements-engine.txt (graphon, the workflow engine, is installed apart)"
            if missing == ["graphon"]
            else "pip install . in a clone, or make venv and run .venv/bin/python -m gcite "
            "(or source .venv/bin/activate)"
        )
        print(
            f"error: this Python ({sys.executable}) lacks G-Cite's packages ({', '.join(missing)}): {hint}",
            file=sys.stderr,
        )
        return 2
    from gcite.cli.main import main as cli_main

    return cli_main()
