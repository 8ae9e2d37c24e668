"""Keeps the tools' declared item schemas in step with the pydantic models in gcite.build.models."""

import json
import re
from pathlib import Path

from pydantic import BaseModel

from gcite import ROOT
from gcite.build.models import Citation, UnifiedChunk, json_schema_of

# (tool YAML, output name, model of its items)
ITEM_SCHEMAS: tuple[tuple[str, str, type[BaseModel]], ...] = (
    ("tools/merge_chunks.yaml", "chunk_metadata", UnifiedChunk),
    ("tools/validate_citations.yaml", "citations", Citation),
)


def items_line(output: str) -> re.Pattern[str]:
    """The one-line `items:` of an output (JSON is valid YAML, so the schema sits on one line)."""
    return re.compile(rf"(?m)^(    {re.escape(output)}:\n(?:      (?!items:).*\n)*      items: ).*$")


def with_item_schema(yaml_text: str, output: str, model: type[BaseModel]) -> str:
    pattern = items_line(output)
    if not pattern.search(yaml_text):
        raise ValueError(f"no `{output}:` output with an `items:` line in the tool YAML")
    schema = json.dumps(json_schema_of(model), ensure_ascii=False)
    return pattern.sub(lambda m: m.group(1) + schema, yaml_text, count=1)


def sync(root: Path = ROOT) -> list[str]:
    """Rewrite every declared item schema; returns the files that changed."""
    changed = []
    for relative, output, model in ITEM_SCHEMAS:
        path = root / relative
        before = path.read_text(encoding="utf-8")
        after = with_item_schema(before, output, model)
        if after != before:
            path.write_text(after, encoding="utf-8")
            changed.append(relative)
    return changed
