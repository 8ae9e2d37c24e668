"""python -m gcite: the command line lives in gcite/cli/; nothing else imports it."""

import sys
from importlib.util import find_spec

# a Python without the set-up's packages (the system one, not .venv's) gets one line, never a traceback
MISSING = [name for name in ("yaml", "requests", "jwt", "dify_plugin", "graphon") if find_spec(name) is None]
if MISSING:
    print(f"error: this Python ({sys.executable}) lacks G-Cite's packages ({', '.join(MISSING)}): run "
          f".venv/bin/python -m gcite … (or `source .venv/bin/activate` first); `make demo` creates .venv",
          file=sys.stderr)
    sys.exit(2)

from gcite.cli.main import main  # noqa: E402 - only once the packages are known to be there

sys.exit(main())
