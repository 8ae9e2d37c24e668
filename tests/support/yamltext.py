"""YAML as the tests read it: PyYAML's safe loader through libyaml (the C parser, several times faster on a chatflow
DSL), the same documents `yaml.safe_load` gives (tests/cli/test_load_yaml.py compares the two on every DSL)."""

import yaml

from gcite.safeyaml import safe_loader


def safe_load(stream):
    """`yaml.safe_load(stream)`, parsed by libyaml where PyYAML has it (`gcite.safeyaml.safe_loader`)."""
    return yaml.load(stream, Loader=safe_loader())
