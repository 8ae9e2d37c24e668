"""Keeps the merge tool's declared chunk_metadata item schema in step with the UnifiedChunk model."""

import json
import re
from pathlib import Path

from gcite import ROOT
from gcite.models import UnifiedChunk, json_schema_of

MERGE_TOOL_YAML = ROOT / "tools" / "merge_chunks.yaml"
# The one-line `items:` of the chunk_metadata output (JSON is valid YAML, so the schema sits on one line).
ITEMS_LINE = re.compile(r"(?m)^(    chunk_metadata:\n(?:      (?!items:).*\n)*      items: ).*$")


def with_chunk_schema(yaml_text: str) -> str:
    if not ITEMS_LINE.search(yaml_text):
        raise ValueError("no `chunk_metadata:` output with an `items:` line in the tool YAML")
    schema = json.dumps(json_schema_of(UnifiedChunk), ensure_ascii=False)
    return ITEMS_LINE.sub(lambda m: m.group(1) + schema, yaml_text, count=1)


def sync(path: Path = MERGE_TOOL_YAML) -> bool:
    """Rewrite the schema in `path`; True when it changed."""
    before = path.read_text(encoding="utf-8")
    after = with_chunk_schema(before)
    if after != before:
        path.write_text(after, encoding="utf-8")
    return after != before
