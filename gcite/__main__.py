"""python -m gcite: the command line lives in gcite/cli/; nothing else imports it."""

import sys

from gcite.cli.main import main

sys.exit(main())
