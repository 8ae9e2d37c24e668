"""G-Cite outside Dify's sandbox: the client's types, the CLI, the local runner, the packager."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
