"""The Code-node bundler: one self-contained file per Code node, made from the `citations` package.

Dify's Code node runs one file with the standard library only, so each node in `nodes/` is the closure of its
entry module (`citations.validate` for the validator, …): the package modules it imports, in dependency order,
with the package's own imports taken out and the standard-library imports gathered at the top. Only the
top-level statements the entry module needs (transitively) are kept, so a node does not pay at every run for
what it never calls. Nothing here runs at the node's run time: no import hook, no temporary file.

The rules that keep a bundle equal to its package (checked here, so a bundle never silently differs):
- the package imports itself only as `from citations.x import a, b` (no `import citations.x`, no `as`, no
  relative import, no `*`), at a module's top level; a standard-library import stands at the top too, or inside
  the function that needs it (paid only when it runs), never in a top-level block or a class body;
- two modules of one closure never define the same top-level name.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PACKAGE = "citations"
ROOT = Path(__file__).resolve().parents[2]

# node file (nodes/<name>.py) -> the package module whose `main` it runs
NODES = {
    "acl_prefilter": "citations.acl_prefilter",
    "filter_chunks": "citations.filter",
    "merge_chunks": "citations.merge",
    "remember_turn": "citations.memory",
    "validate_citations": "citations.validate",
    "web_search_request": "citations.web_request",
}


class BundleError(ValueError):
    """The package breaks a rule the bundler needs (the message names the module, the line and the rule)."""


@dataclass
class Statement:
    module: str
    source: str  # the statement's text, with the comments just above it
    defines: frozenset[str]
    uses: frozenset[str]
    block: bool  # a def or a class (set apart by blank lines)


@dataclass
class Module:
    name: str
    docstring: str | None
    imports: list[ast.stmt]  # standard-library imports
    needs: dict[str, str]  # name imported from the package -> the module defining it
    statements: list[Statement]


def module_path(name: str, root: Path = ROOT) -> Path:
    base = root.joinpath(*name.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _defined(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    names: set[str] = set()
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    for target in targets:
        for leaf in ast.walk(target):
            if isinstance(leaf, ast.Name) and isinstance(leaf.ctx, ast.Store):
                names.add(leaf.id)
    return names


def _used(node: ast.stmt) -> set[str]:
    return {leaf.id for leaf in ast.walk(node) if isinstance(leaf, ast.Name) and isinstance(leaf.ctx, ast.Load)}


def read_module(name: str, root: Path = ROOT) -> Module:
    """The package module `name` as the bundler reads it. Parsed once per text: read again unchanged, it is the same
    Module (which nobody changes), so the tests and the DSL builder, which bundle the nodes many times, parse each
    module once."""
    path = module_path(name, root)
    return parse_module(name, str(path), str(path.relative_to(root)), path.read_text(encoding="utf-8"))


@lru_cache(maxsize=256)
def parse_module(name: str, filename: str, where: str, text: str) -> Module:
    """`read_module` of a module's `text` (`filename`: its path; `where`: that path as an error names it)."""
    tree = ast.parse(text, filename=filename)
    lines = source_lines(text)
    code_lines = docstrings_as_comments(tree, lines)  # what each statement's source is cut from
    body = list(tree.body)
    docstring = ast.get_docstring(tree, clean=False)
    if docstring is not None:
        body = body[1:]
    imports: list[ast.stmt] = []
    needs: dict[str, str] = {}
    statements: list[Statement] = []
    previous_end = tree.body[0].end_lineno if docstring is not None else 0
    for node in body:
        start = node.lineno
        if hasattr(node, "decorator_list") and node.decorator_list:
            start = min(d.lineno for d in node.decorator_list)
        comments = start - 1
        while comments > previous_end and lines[comments - 1].lstrip().startswith("#"):
            comments -= 1
        source = "".join(code_lines[comments : node.end_lineno])
        previous_end = node.end_lineno
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == PACKAGE):
            if node.level:
                raise BundleError(f"{where}:{node.lineno}: a relative import; write `from {PACKAGE}.x import name`")
            for alias in node.names:
                if alias.name == "*" or alias.asname:
                    raise BundleError(f"{where}:{node.lineno}: `{alias.name} as …`/`*`; import names as they are")
                needs[alias.name] = node.module
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    raise BundleError(
                        f"{where}:{node.lineno}: `import {alias.name}`; write `from {alias.name} import …`"
                    )
            imports.append(node)
            continue
        if isinstance(node, ast.ImportFrom):
            if node.module == "__future__":
                continue
            imports.append(node)
            continue
        block = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.If, ast.With))
        statements.append(Statement(name, source, frozenset(_defined(node)), frozenset(_used(node)), block))
    for node, in_function in _nested_imports(tree):
        if _imports_package(node):
            raise BundleError(f"{where}:{node.lineno}: a package import inside a function or class; import at the top")
        if not in_function:  # in a top-level block or a class body: neither gathered at the top nor kept with a use
            raise BundleError(f"{where}:{node.lineno}: an import inside a block or class; import at the top")
    return Module(name, docstring, imports, needs, statements)


def docstrings_as_comments(tree: ast.AST, lines: list[str]) -> list[str]:
    """`lines` (a module's) with the docstrings of the functions and classes in `tree` written as comments
    (a body left without a statement gets `pass`). A Code node is compiled at every run in a fresh process: a
    docstring is a constant the compiler builds (about 4 % of the validator's compile time), a comment costs it
    nothing, and the reader of the node keeps the text. A docstring sharing a line with other code, or holding a
    character a comment cannot show, stays a docstring. (The node's `__doc__`s are None: nothing in the package
    reads one.)"""
    out = None
    for owner in ast.walk(tree):
        if not isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        text = ast.get_docstring(owner, clean=True)
        if text is None:
            continue
        doc = owner.body[0]
        # the offsets count UTF-8 bytes
        first, last = lines[doc.lineno - 1].encode(), lines[doc.end_lineno - 1].encode()  # type: ignore[operator]
        indent = first[: doc.col_offset].decode()
        comment = as_comment(text, indent)
        if indent.strip() or last[doc.end_col_offset :].strip() or comment is None:
            continue
        if len(owner.body) == 1:
            comment += f"{indent}pass\n"
        out = out or list(lines)
        out[doc.lineno - 1] = comment  # the docstring's first line holds the comment, the rest go
        out[doc.lineno : doc.end_lineno] = [""] * (doc.end_lineno - doc.lineno)  # type: ignore[operator]
    return out or lines


def as_comment(text: str, indent: str = "") -> str | None:
    """`text` (a cleaned docstring) as comment lines at `indent`, or None when a line holds a character a comment
    cannot show."""
    lines = text.split("\n")
    if not all(map(str.isprintable, lines)):
        return None
    return "".join(f"{indent}# {line}".rstrip() + "\n" for line in lines)


LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def source_lines(text: str) -> list[str]:
    """`text`'s lines with their ends, split where Python's tokenizer ends a line (\\n, \\r\\n, \\r) and nowhere else
    (`str.splitlines` also splits at a form feed, U+2028 and others, and the lines would no longer be the ones
    the syntax tree numbers)."""
    return LINE.findall(text)


def _nested_imports(tree: ast.Module):
    """(import, whether a function encloses it) for each import below a module's top level. A standard-library
    import may wait inside a function until it is needed: it stays where it is written, with the code using it."""

    def walk(node: ast.AST, in_function: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            yield from walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    for statement in tree.body:
        if not isinstance(statement, (ast.Import, ast.ImportFrom)):
            yield from walk(statement, isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _imports_package(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return bool(node.level) or (node.module or "").split(".")[0] == PACKAGE
    return any(alias.name.split(".")[0] == PACKAGE for alias in node.names)


def closure(entry: str, root: Path = ROOT) -> list[Module]:
    """The entry module and every package module it imports, dependencies first."""
    order: list[Module] = []
    seen: dict[str, Module | None] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in seen:
            if seen[name] is None:
                raise BundleError(f"import cycle: {' -> '.join(chain + (name,))}")
            return
        seen[name] = None
        module = read_module(name, root)
        for dependency in dict.fromkeys(module.needs.values()):
            visit(dependency, chain + (name,))
        seen[name] = module
        order.append(module)

    visit(entry, ())
    owner: dict[str, str] = {}
    for module in order:
        for statement in module.statements:
            for defined in statement.defines:
                if owner.setdefault(defined, module.name) != module.name:
                    raise BundleError(
                        f"{module.name} and {owner[defined]} both define {defined!r} at the top level; "
                        f"rename one (the bundle of {entry} holds both)"
                    )
        for imported, source in module.needs.items():
            if not any(imported in s.defines for s in seen[source].statements):  # type: ignore[union-attr]
                raise BundleError(f"{module.name} imports {imported!r} from {source}, which does not define it")
    return order


def kept_statements(modules: list[Module]) -> list[Statement]:
    """The statements the entry module (the last) needs: all of its own, and those defining what they use,
    transitively; a statement that defines nothing (a loop filling a table) is kept when it touches a kept name."""
    entry = modules[-1]
    statements = [s for m in modules for s in m.statements]
    kept = {id(s) for s in entry.statements}
    wanted = set().union(*(s.uses for s in entry.statements)) if entry.statements else set()
    changed = True
    while changed:
        changed = False
        for statement in statements:
            if id(statement) in kept:
                continue
            if statement.defines & wanted or (not statement.defines and statement.uses & wanted):
                kept.add(id(statement))
                wanted |= statement.uses | statement.defines
                changed = True
    return [s for s in statements if id(s) in kept]


def _import_lines(modules: list[Module], used: set[str]) -> list[str]:
    plain: dict[str, None] = {}
    names: dict[str, dict[str, None]] = {}
    for module in modules:
        for node in module.imports:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if (alias.asname or alias.name.split(".")[0]) in used:
                        plain[alias.name if not alias.asname else f"{alias.name} as {alias.asname}"] = None
            else:
                for alias in node.names:
                    if (alias.asname or alias.name) in used:
                        names.setdefault(node.module, {})[
                            alias.name if not alias.asname else f"{alias.name} as {alias.asname}"
                        ] = None
    lines = [f"import {name}" for name in sorted(plain)]
    lines += [f"from {module} import {', '.join(sorted(found))}" for module, found in sorted(names.items())]
    return lines


def header(node: str, entry: str, modules: list[Module]) -> str:
    sources = ", ".join(module_path(m.name, Path(".")).as_posix() for m in modules)
    return (
        f"# GENERATED by `make dsl` from the package `{PACKAGE}` (entry: {entry}.main); do not edit this file.\n"
        f"# Edit {sources} and run `make dsl`. A Dify Code node: standard library only, Python 3.10.\n"
    )


def module_comment(docstring: str) -> str:
    """The entry module's docstring as the node's opening comment (as `docstrings_as_comments` does), or as a
    docstring when a line holds a character a comment cannot show."""
    comment = as_comment(inspect.cleandoc(docstring))
    return repr(docstring) + "\n" if comment is None else comment


def bundle(node: str, root: Path = ROOT) -> str:
    """The self-contained source of the Code node `node` (a key of NODES)."""
    entry = NODES[node]
    modules = closure(entry, root)
    kept = kept_statements(modules)
    used = set().union(*(s.uses for s in kept)) if kept else set()
    parts = [header(node, entry, modules)]
    docstring = modules[-1].docstring
    if docstring is not None:
        parts.append(module_comment(docstring))
    imports = _import_lines(modules, used)
    if imports:
        parts.append("\n" + "\n".join(imports) + "\n")
    current, previous_block = None, True
    for statement in kept:
        if statement.module != current:
            current = statement.module
            parts.append(f"\n\n# --- {module_path(current, Path('.')).as_posix()} " + "-" * 40 + "\n")
            previous_block = False
        elif statement.block or previous_block:
            parts.append("\n\n")
        parts.append(statement.source.strip("\n") + "\n")
        previous_block = statement.block
    return "".join(parts)


def bundles(root: Path = ROOT) -> dict[str, str]:
    """nodes/<name>.py -> its generated source, for every node."""
    return {f"nodes/{name}.py": bundle(name, root) for name in NODES}


def write_nodes(root: Path = ROOT) -> list[Path]:
    """Write nodes/*.py as `bundles` makes them; returns the files that changed."""
    changed = []
    for name, text in bundles(root).items():
        path = root / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
