"""python -m gcite: the same command as the installed `gcite` (gcite/cli/entry.py); nothing else imports it."""

import sys

from gcite.cli.entry import main

sys.exit(main())
