"""gcite.load_yaml: safe_load's documents and errors, faster."""

import pytest
import yaml

from gcite import ROOT, load_yaml


@pytest.mark.parametrize("path", sorted((ROOT / "dsl").glob("*.yml")) + sorted((ROOT / "tools").glob("*.yaml")))
def test_every_shipped_yaml_file_reads_as_safe_load_reads_it(path):
    text = path.read_text(encoding="utf-8")
    assert load_yaml(text) == yaml.safe_load(text)


@pytest.mark.parametrize("text", ["a: [1, 2\nb: 3", "a: b: c", "key: 'unterminated", "- !!python/object:os.system x"])
def test_a_broken_file_raises_safe_loads_own_error(text):
    with pytest.raises(yaml.YAMLError) as expected:
        yaml.safe_load(text)
    with pytest.raises(yaml.YAMLError) as got:
        load_yaml(text)
    assert type(got.value) is type(expected.value) and str(got.value) == str(expected.value)
