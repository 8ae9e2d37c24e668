"""A built package, unpacked, with a Python that has only its requirements.txt installed."""

import fcntl
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from tests.support import ROOT

VENV = ROOT / ".venv-package"


def package_python(requirements: Path) -> str:
    """A venv (kept between runs, rebuilt when requirements.txt changes) with nothing but the requirements.

    Built under a lock: `make test-fast` runs two pytest processes (scripts/test_fast.sh) that may both need it."""
    stamp = VENV / f".req-{hashlib.sha256(requirements.read_bytes()).hexdigest()[:16]}"
    python = VENV / "bin" / "python"
    lock_path = Path(tempfile.gettempdir()) / f"gcite-venv-package-{hashlib.sha256(bytes(VENV)).hexdigest()[:12]}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
            subprocess.run(
                [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "-r", str(requirements)],
                check=True,
                timeout=900,
            )
            stamp.touch()
    return str(python)


def unpack(package: Path, into: Path) -> Path:
    with zipfile.ZipFile(package) as archive:
        archive.extractall(into)
    return into
