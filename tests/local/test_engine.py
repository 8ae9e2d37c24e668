"""gcite/local/engine.py is the one module that imports graphon: each name it takes, its private names included,
must still be where this graphon version has it; an upgrade that moves one fails here, naming it."""

import ast
import importlib

import pytest

from tests.support import ROOT

ENGINE = ROOT / "gcite" / "local" / "engine.py"


def engine_imports() -> list[tuple[str, str]]:
    tree = ast.parse(ENGINE.read_text(encoding="utf-8"))
    return [(node.module, alias.name) for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names]


def test_the_engine_imports_only_from_graphon_and_names_private_ones():
    imports = engine_imports()
    assert imports and all(module.split(".")[0] == "graphon" for module, _ in imports)
    assert any(name.startswith("_") for _, name in imports)  # the private names are here, not spread about


@pytest.mark.parametrize("module,name", engine_imports())
def test_each_graphon_name_is_where_the_engine_takes_it_from(module, name):
    assert hasattr(importlib.import_module(module), name), f"graphon moved {name} out of {module}"
