"""The shape of the code, held by reading its imports (ast): no import circle; `citations/` imports only the
standard library and itself (and `nodes/`, generated from it, only the standard library); nothing imports
`gcite/cli/` but `python -m gcite`; the library at the top (`gcite/*.py`) imports neither `gcite.local` nor the
CLI; no source folder is named `build`; argparse only in `gcite/cli/`; graphon only in `gcite/local/engine.py`; no
test imports another test or conftest, and a conftest imports only the standard library and pytest at its top; and
no block of six or more lines repeats in the code unless a comment in place says why (`nodes/` is generated, so it
is not read: tests/authoring/test_bundle.py holds it to the package)."""

import ast
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.support import ROOT

OURS = ("citations", "gcite", "nodes", "tools", "websearch", "endpoints", "provider", "bench", "fuzz", "main")
CODE_DIRS = ("citations", "gcite", "nodes", "tools", "websearch", "endpoints", "provider", "bench", "fuzz")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def code_files() -> list[Path]:
    files = [ROOT / "main.py"]
    for folder in CODE_DIRS:
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


def imports_of(path: Path) -> list[tuple[str, int]]:
    """Every module `path` imports (at any depth of the file), with the line; `from a import b` also names `a.b`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
            found += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names]
    return found


MODULES = {module_name(p): p for p in code_files()}


def our_imports(path: Path) -> set[str]:
    return {name for name, _ in imports_of(path) if name in MODULES}


def test_no_import_circle():
    graph = {name: our_imports(path) - {name} for name, path in MODULES.items()}
    for name in graph:  # a package imports its parent package implicitly: not an edge of ours
        graph[name] = {m for m in graph[name] if not name.startswith(m + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                pytest.fail("import circle: " + " → ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


def test_nodes_import_only_the_standard_library_and_the_package_only_itself():
    for path in sorted((ROOT / "nodes").glob("*.py")):
        for name, line in imports_of(path):
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names, f"{path.relative_to(ROOT)}:{line} imports {name}"
    for path in sorted((ROOT / "citations").rglob("*.py")):
        for name, line in imports_of(path):
            top = name.split(".")[0]
            assert top in sys.stdlib_module_names or top == "citations", (
                f"{path.relative_to(ROOT)}:{line} imports {name}"
            )


def test_nothing_imports_the_cli_but_python_m_gcite():
    for name, path in MODULES.items():
        if name.startswith("gcite.cli") or name == "gcite.__main__":
            continue
        for imported, line in imports_of(path):
            assert not imported.startswith("gcite.cli"), f"{path.relative_to(ROOT)}:{line} imports {imported}"


def top_level_library() -> list[str]:
    return sorted(name for name, path in MODULES.items() if path.parent == ROOT / "gcite" and name != "gcite.__main__")


@pytest.mark.parametrize("name", top_level_library())
def test_the_library_at_the_top_imports_neither_the_local_dify_nor_the_cli(name):
    """gcite/*.py (the client, the protocol, …) is what others import: it stands on its own, never on Dify played
    locally (`gcite.local`, graphon behind it) or on the command line (`gcite.cli`)."""
    for imported, line in imports_of(MODULES[name]):
        for below in ("gcite.local", "gcite.cli"):
            assert imported != below and not imported.startswith(below + "."), (
                f"{MODULES[name].relative_to(ROOT)}:{line} imports {imported}"
            )


def test_no_source_folder_named_build():
    """Python tooling skips folders named `build` as build output (GitHub's Python .gitignore, black's and pytest's
    defaults): release tooling is in gcite/release/, builder features in gcite/authoring/."""
    found = []
    for folder, names, _ in os.walk(ROOT):
        names[:] = [n for n in names if not n.startswith(".") and n not in ("__pycache__", "node_modules")]
        if Path(folder).name == "build":
            found.append(str(Path(folder).relative_to(ROOT)))
    assert not found, f"folders named build: {found}"
    for path in MODULES.values():
        for imported, line in imports_of(path):
            assert not imported.startswith("gcite.build"), f"{path.relative_to(ROOT)}:{line} imports {imported}"


def test_release_tooling_never_uses_the_builder_features():
    """gcite/release/ ships what is authored; gcite/authoring/ may name the package (a DSL's dependency), never the
    other way round."""
    for name, path in MODULES.items():
        if name.startswith("gcite.release"):
            for imported, line in imports_of(path):
                assert not imported.startswith("gcite.authoring"), f"{path.relative_to(ROOT)}:{line} imports {imported}"


def test_argparse_only_in_the_cli():
    for name, path in MODULES.items():
        if name.startswith("gcite") and not name.startswith("gcite.cli"):
            for imported, line in imports_of(path):
                assert imported != "argparse", f"{path.relative_to(ROOT)}:{line} imports argparse"


def test_graphon_only_in_the_engine_module():
    files = code_files() + sorted((ROOT / "tests").rglob("*.py"))
    for path in files:
        if path == ROOT / "gcite" / "local" / "engine.py":
            continue
        for imported, line in imports_of(path):
            assert imported.split(".")[0] != "graphon", f"{path.relative_to(ROOT)}:{line} imports {imported}"


def test_no_test_imports_another_test_or_conftest():
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for imported, line in imports_of(path):
            leaf = imported.split(".")[-1]
            assert not (imported.startswith("tests.") and (leaf.startswith("test_") or leaf == "conftest")), (
                f"{path.relative_to(ROOT)}:{line} imports {imported}: shared helpers go in tests/support/"
            )
            assert "conftest" not in imported.split("."), f"{path.relative_to(ROOT)}:{line} imports {imported}"


def test_a_conftest_of_make_test_imports_only_the_standard_library_and_pytest_at_its_top():
    """pytest imports every conftest.py it is given before any test module: one importing the local engine or
    requests there does it before the plugin SDK applies gevent's patching, and every chatflow run after it in the
    process was five times slower. tests/dify/ runs in `make test-dify` alone."""
    for path in sorted((ROOT / "tests").rglob("conftest.py")):
        if path.parent.name == "dify":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for name in names:
                    top = name.split(".")[0]
                    assert top == "pytest" or top in sys.stdlib_module_names, (
                        f"{path.relative_to(ROOT)}:{node.lineno} imports {name} at its top: import it in the fixture"
                    )


# --- repeated blocks ------------------------------------------------------------------------------------------

WINDOW = 6
SKIPPED = re.compile(r"^(#.*|[()\[\]{},:;]*|(from|import) .*|\"\"\"|'''|)$")
# one parameter or argument per line, as the formatter splits a long signature or call (`name: type = default,`,
# `*,`, `) -> T:`): the same parameters in two signatures are not a repeated block of logic
PARAMETER = re.compile(r"^(\*{0,2}\w+(: [^=]+?)?( ?= ?.+?)?,|\*,|\)( -> .+)?:)$")
EXPLAINED = re.compile(r"#.*\b(repeat|repeated|same as|copy of|mirrors)\b", re.IGNORECASE)


def meaningful_lines(path: Path) -> list[tuple[int, str]]:
    lines = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = " ".join(line.split())
        if not SKIPPED.match(text) and not PARAMETER.match(text):
            lines.append((number, text))
    return lines


def explained(path: Path, first: int, last: int) -> bool:
    """A comment in the block or in the three lines above it says why it repeats."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return any(EXPLAINED.search(line) for line in lines[max(0, first - 4) : last])


def test_no_block_of_six_lines_repeats_unless_a_comment_says_why():
    places = defaultdict(list)
    for path in code_files():
        if path.is_relative_to(ROOT / "nodes"):
            continue
        lines = meaningful_lines(path)
        for i in range(len(lines) - WINDOW + 1):
            window = lines[i : i + WINDOW]
            places[tuple(t for _, t in window)].append((path, window[0][0], window[-1][0]))
    repeats = []
    for where in places.values():
        distinct = {(p, a) for p, a, _ in where}
        if len(distinct) > 1 and not all(explained(p, a, b) for p, a, b in where):
            repeats.append(" ~ ".join(f"{p.relative_to(ROOT)}:{a}-{b}" for p, a, b in where))
    assert not repeats, "repeated blocks:\n" + "\n".join(sorted(repeats)[:20])


def test_the_web_search_library_imports_only_itself_citations_and_third_party_packages():
    """`websearch/` is a library: the tool, the provider and `gcite acl` import it; it imports no tool, node,
    endpoint, provider, CLI or other `gcite` module."""
    forbidden = ("tools", "nodes", "endpoints", "provider", "gcite", "bench", "fuzz", "main")
    for path in sorted((ROOT / "websearch").glob("*.py")):
        for imported, line in imports_of(path):
            assert imported.split(".")[0] not in forbidden, f"{path.relative_to(ROOT)}:{line} imports {imported}"


def test_gcite_acl_imports_no_tool_node_builder_or_local_stand_in():
    """`gcite/acl.py` is library code: its HTTP client comes from `websearch`, its filter logic from `citations`,
    and the pre-filter's conditions and Dify's SQL semantics are handed in by the CLI (`gcite.acl.Stages`)."""
    for imported, line in imports_of(ROOT / "gcite" / "acl.py"):
        assert imported.split(".")[0] not in ("tools", "nodes") and not imported.startswith(
            ("gcite.local", "gcite.build", "gcite.cli")
        ), f"gcite/acl.py:{line} imports {imported}"


def test_the_web_search_library_reads_no_private_attribute():
    """The HTTP client uses public APIs of requests and urllib3 only (it once shortened a socket timeout through
    `response.raw._fp.fp.raw._sock`): no `._name` is read in `websearch/` but on the module's own `self`."""
    for path in sorted((ROOT / "websearch").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                assert isinstance(node.value, ast.Name) and node.value.id == "self", (
                    f"{path.relative_to(ROOT)}:{node.lineno} reads .{node.attr}"
                )
