"""`make bench`: every benchmark in one run; exits non-zero when a target is missed."""

import sys

from bench import common  # noqa: F401  (puts the repository root on sys.path)
from bench import endpoint, filtering, hostile, merging, plugin_stdio, retrofit, streaming, support


def main() -> int:
    results = [merging.run(), streaming.run(), support.run(), filtering.run(), plugin_stdio.run(), hostile.run(),
               endpoint.run(), retrofit.run()]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
