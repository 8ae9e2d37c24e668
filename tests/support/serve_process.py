"""`python -m gcite serve` as a user starts it: a process of its own, on a port the system picks, read from what it
prints at start, and stopped at the end."""

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gcite import ROOT


def private_secret_file(folder: Path, secret: str) -> Path:
    """A secret file as the docs make one: the secret on one line, readable by its owner alone."""
    path = folder / "gcite-secret"
    path.write_text(secret + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path


@contextmanager
def gcite_serve(
    *options: str, command: tuple[str, ...] = (sys.executable, "-m", "gcite"), cwd: Path = ROOT
) -> Iterator[dict[str, str]]:
    """`gcite serve --port 0 OPTIONS…` (`command` is the gcite command: this checkout's by default, an installed
    one in `cwd` elsewhere); yields what it printed: `page`, `chat` (the endpoint's URL), `origin`
    (http://127.0.0.1:PORT), `base` (…/e/<hook>) and `lines` (every line up to "Ctrl-C stops.")."""
    process = subprocess.Popen(
        [*command, "serve", "--port", "0", *options],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        lines = []
        while not lines or lines[-1] != "Ctrl-C stops.":
            line = process.stdout.readline()
            if not line:
                raise AssertionError("gcite serve stopped: " + "".join(lines) + process.stderr.read())
            lines.append(line.rstrip("\n"))
        printed = dict(line.split(":", 1) for line in lines if ":" in line)
        chat = printed["chat endpoint"].strip()
        yield {
            "page": printed["G-Cite page"].strip(),
            "chat": chat,
            "base": chat.rsplit("/gcite/", 1)[0],
            "origin": chat.split("/e/")[0],
            "lines": lines,
        }
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()
