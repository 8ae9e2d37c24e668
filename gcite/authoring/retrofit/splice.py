"""Pass, last but one (`report`): the output as the builder's own text with only the changes spliced in, so a text
diff of IN and IN.gcite.yml shows what retrofit did and nothing else.

The input's YAML is composed once (PyYAML's composer keeps where every key and item starts), and the rewired
document is compared with the document as read, value by value:
- an unchanged value keeps its lines exactly (key order, quoting, block style, comments, blank lines);
- a changed scalar (a prompt, a selector item) is written again in the style the file uses (Dify writes with PyYAML:
  sorted keys, width 80, block style) at its own depth, so a long prompt that only gained lines at its end shows
  only those lines (and its last one) in a diff;
- an added key goes where the sorted keys put it (at the end where the file's keys are not sorted); an added list
  item (a node, an edge) after the list's last item; a removed item (an edge) loses its lines.
Where a shape is not one this can splice (flow style, a value sharing a line with another, aliases), the whole
document is written again by `chatflows.render` instead: the same document, a noisier diff.
"""

from typing import Any

import yaml

from gcite.authoring import chatflows as dsl_build
from gcite.safeyaml import safe_loader


class SpliceError(Exception):
    """A change in a place whose lines cannot be replaced on their own."""


def splice(text: str, before: Any, after: Any) -> str:
    """`text` (the YAML `before` was read from) with the changes that make it `after`; or the rendered `after`."""
    try:
        root = yaml.compose(text, Loader=safe_loader())
        lines = text.splitlines(keepends=True)
        if root is None or "&" in text and "*" in text:  # anchors and aliases: written again whole
            raise SpliceError
        style = Style(text)
        edits: list[tuple[int, int, list[str]]] = []
        Splicer(lines, style, edits).value(before, after, root, 0, len(lines))
        out_lines: list[str] = []
        at = 0
        for start, end, new in sorted(edits, key=lambda e: (e[0], e[1])):  # one pass: O(lines + edits)
            if start < at:
                raise SpliceError  # overlapping edits: not something the walk above makes
            out_lines += lines[at:start]
            out_lines += new
            at = end
        out = "".join(out_lines + lines[at:])
        if (
            yaml.load(out, Loader=safe_loader()) != after
        ):  # never hand out a text that does not read as the rewired document
            raise SpliceError
        return out
    except (SpliceError, yaml.YAMLError, RecursionError, ValueError, TypeError, KeyError, IndexError):
        return dsl_build.render(after)


class Style:
    """How the file writes YAML: PyYAML's defaults as Dify uses them, non-ASCII raw or escaped as the file has it."""

    def __init__(self, text: str) -> None:
        self.unicode = any(ord(c) > 127 for c in text) or "\\u" not in text and "\\U" not in text

    WIDTHS = (80, 120, 100, 4096)  # Dify's (PyYAML's default), then what other writers use

    def dump(self, value: Any, column: int, old: Any = None, original: list[str] | None = None) -> list[str]:
        """`value` (a one-key mapping or a one-item list) as PyYAML writes it with its key (or its item's "- ") at
        `column`: written nested that deep, so that long text folds where it folded in the file; with the width and
        escaping that write `old` as the file has it (`original`), where one does."""
        options = [(self.unicode, 80)]
        if original is not None:
            options = [(u, w) for w in self.WIDTHS for u in (self.unicode, not self.unicode)]
            options = [next((o for o in options if self._dump(old, column, *o) == original), options[0])]
        return self._dump(value, column, *options[0])

    def _dump(self, value: Any, column: int, unicode: bool, width: int) -> list[str]:
        if column % 2:
            raise SpliceError
        levels = column // 2 + (1 if isinstance(value, list) else 0)
        wrapped = value
        for _ in range(levels):
            wrapped = {"_": wrapped}
        dumped = yaml.safe_dump(
            wrapped, allow_unicode=unicode, sort_keys=True, width=width, default_flow_style=False
        ).splitlines(keepends=True)[levels:]
        if not dumped or len(dumped[0]) - len(dumped[0].lstrip(" ")) != column:
            raise SpliceError
        return dumped

    @staticmethod
    def dump_new(value: list, column: int) -> list[str]:
        """What retrofit adds (nodes, edges): as our own chatflows write it (multi-line text as a block)."""
        return [
            (" " * column + line) if line.strip() else line
            for line in dsl_build.render(value).splitlines(keepends=True)
        ]


class Splicer:
    def __init__(self, lines: list[str], style: Style, edits: list[tuple[int, int, list[str]]]) -> None:
        self.lines, self.style, self.edits = lines, style, edits

    def value(self, old: Any, new: Any, node: yaml.Node, start: int, end: int) -> None:
        if old == new and type(old) is type(new):
            return
        if (
            isinstance(node, yaml.MappingNode)
            and isinstance(old, dict)
            and isinstance(new, dict)
            and not node.flow_style
        ):
            self.mapping(old, new, node, end)
        elif (
            isinstance(node, yaml.SequenceNode)
            and isinstance(old, list)
            and isinstance(new, list)
            and not node.flow_style
        ):
            self.sequence(old, new, node, end)
        else:
            raise SpliceError  # a scalar: its key (or item) is written again by the caller

    def mapping(self, old: dict, new: dict, node: yaml.MappingNode, end: int) -> None:
        keys = [k.value for k, _ in node.value]
        if set(keys) - set(new) or len(set(keys)) != len(keys):
            raise SpliceError  # a removed key: not something retrofit does
        starts = [k.start_mark.line for k, _ in node.value]
        column = node.value[0][0].start_mark.column if node.value else None
        for n, (knode, vnode) in enumerate(node.value):
            key = knode.value
            span_end = starts[n + 1] if n + 1 < len(starts) else end
            if old.get(key) == new[key] and type(old.get(key)) is type(new[key]):
                continue
            try:
                self.value(old[key], new[key], vnode, starts[n], span_end)
            except SpliceError:
                original = self.lines[starts[n] : self.last_line(span_end)]
                self.replace(
                    starts[n],
                    span_end,
                    column,
                    self.style.dump({key: new[key]}, column, {key: old[key]}, self.plain(original, column)),
                )
        added = [k for k in new if k not in old]
        if added:
            if column is None:
                raise SpliceError
            for key in added:
                later = [starts[i] for i, k in enumerate(keys) if isinstance(k, str) and str(k) > str(key)]
                at = min(later) if later and keys == sorted(keys) else self.last_line(end)
                self.edits.append((at, at, self.style.dump({key: new[key]}, column)))

    def sequence(self, old: list, new: list, node: yaml.SequenceNode, end: int) -> None:
        items = node.value
        if len(items) != len(old) or not items:
            raise SpliceError
        starts = [i.start_mark.line for i in items]
        column = items[0].start_mark.column - 2
        if column < 0 or any(self.lines[s][column : column + 2] != "- " for s in starts):
            raise SpliceError
        keyed = all(isinstance(x, dict) and "id" in x for x in old + new)
        if keyed:
            new_by_id = {}
            for x in new:
                new_by_id.setdefault(x["id"], []).append(x)
            old_ids = [x["id"] for x in old]
            if len(set(old_ids)) != len(old_ids) or any(len(v) > 1 for v in new_by_id.values()):
                raise SpliceError
            old_set = set(old_ids)
            kept = [x["id"] for x in new if x["id"] in old_set]
            if kept != [i for i in old_ids if i in new_by_id]:
                raise SpliceError  # reordered
            pairs = [(n, new_by_id.get(x["id"], [None])[0]) for n, x in enumerate(old)]
            appended = [x for x in new if x["id"] not in old_set]
            if appended and new[-len(appended) :] != appended:
                raise SpliceError
        else:
            if len(new) < len(old) or new[: len(old)] != old and len(new) != len(old):
                raise SpliceError
            pairs = [(n, new[n]) for n in range(len(old))]
            appended = new[len(old) :]
        for n, item in pairs:
            span_end = starts[n + 1] if n + 1 < len(starts) else end
            if item is None:  # removed
                self.edits.append((starts[n], span_end, []))
                continue
            if item == old[n]:
                continue
            try:
                self.value(old[n], item, items[n], starts[n], span_end)
            except SpliceError:
                original = self.lines[starts[n] : self.last_line(span_end)]
                self.replace(
                    starts[n], span_end, column, self.style.dump([item], column, [old[n]], self.plain(original, column))
                )
        if appended:
            at = self.last_line(end)
            self.edits.append((at, at, self.style.dump_new(appended, column)))

    def last_line(self, end: int) -> int:
        """Where an item added at the end of a block goes: after its last line that is not blank or a comment
        belonging to what follows."""
        at = end
        while at > 0 and not self.lines[at - 1].strip():
            at -= 1
        return at

    @staticmethod
    def plain(original: list[str], column: int) -> list[str]:
        """The original lines as a dump at `column` starts them (a sequence item's "- " before a key: spaces)."""
        if original and original[0][:column].strip() == "-":
            return [" " * column + original[0][column:]] + original[1:]
        return original

    def replace(self, start: int, end: int, column: int | None, rendered: list[str]) -> None:
        """Lines [start, end) (less the blank lines at their end) become `rendered` (already at `column`), the first
        keeping what stood before the column on its line (a sequence item's "- ")."""
        if column is None:
            raise SpliceError
        prefix = self.lines[start][:column]
        if prefix.strip() not in ("", "-"):
            raise SpliceError
        at = self.last_line(end)
        if at <= start:
            at = end
        self.edits.append((start, at, [prefix + rendered[0][column:]] + rendered[1:]))
