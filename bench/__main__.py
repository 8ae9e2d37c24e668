"""`make bench`: every benchmark in one run; exits non-zero when a target is missed."""

import sys

from bench import (
    cited_answer,
    common,  # noqa: F401  (puts the repository root on sys.path)
    endpoint,
    filtering,
    hostile,
    merging,
    node_cost,
    plugin_stdio,
    retrofit,
    streaming,
    support,
    support_hostile,
)


def main() -> int:
    results = [
        merging.run(),
        streaming.run(),
        support.run(),
        node_cost.run(),
        filtering.run(),
        plugin_stdio.run(),
        hostile.run(),
        support_hostile.run(),
        endpoint.run(),
        cited_answer.run(),
        retrofit.run(),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
