"""The chunk and citation types, and the tools' declared item schemas kept in step with them (`sync-schema`):
UnifiedChunk is the source of the merge tool's `output_schema`, Citation of the validator's."""

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gcite import ROOT


class UnifiedChunk(BaseModel):
    """One numbered chunk, as the merge node puts it in `chunk_metadata`."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Global number as text, '1'..'N'; the LLM cites it as [C:N]")
    source_type: Literal["rag", "web"] = Field(description="rag = knowledge base, web = web search")
    content: str = Field(description="The chunk's text, as the LLM saw it")
    document_title: str = Field(description="Title to show: document title or web page title")
    url: str = Field(description="Link to the source: source_file_url for rag, an http(s) URL or '' for web")
    score: float = Field(description="Retrieval or search relevance score; 0 when unknown")
    display_subtitle: str = Field(description="The one subtitle line to show (knowledge base name, or site · date)")
    document_name: str = Field(description="File name (rag) or URL (web)")
    dataset_name: str = Field(description="Knowledge base name (rag only)")
    site_name: str = Field(description="Site display name (web only)")
    site_host: str = Field(description="Host of the URL without www. (web only)")
    source_file_url: str = Field(description="Original file link (rag) or URL (web)")
    segment_position: int = Field(description="Position of the segment in its document (rag only)")
    published_date: str = Field(
        description="Publication date, YYYY-MM-DD when the provider gave an ISO date (web only)"
    )
    dataset_id: str = Field(description="Dify dataset id (rag only)")
    document_id: str = Field(description="Dify document id (rag only)")
    segment_id: str = Field(description="Dify segment id (rag only)")
    provider: str = Field(description="Search provider, when the result names one (web only)")


class Citation(BaseModel):
    """One cited source, as the validator reports it in `citations`."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(description="Display number, 1..K in order of first appearance")
    id: str = Field(description="The chunk id the LLM cited ([C:id])")
    count: int = Field(description="How many markers cite it")
    document_title: str = Field(description="Title of the cited chunk ('' when the chunk list is unknown)")
    source_type: str = Field(description="rag or web ('' when the chunk list is unknown)")
    url: str = Field(description="Link to the source, as in the chunk list")
    display_subtitle: str = Field(description="The subtitle line to show")
    site_name: str = Field(description="Site display name (web)")
    published_date: str = Field(description="Publication date (web)")
    support: float | None = Field(
        description="How well the cited chunk backs the sentences citing it, 0..1 (the "
        "lowest over those sentences); null when the chunk's text is unknown"
    )
    weak: bool = Field(description="support is below the validator's threshold: the chunk may not back the claim")
    reasons: list[dict[str, Any]] = Field(
        description="What lowered support (docs/support-check.md): objects with "
        "kind missing (items), negation, antonym, number, roles or "
        "scope (claim, source); [] when nothing did"
    )
    reason: str = Field(description="The reasons as one line, e.g. 'missing: [\"460 mm\"]; number: 60 ≠ 40'")


def json_schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """A compact JSON Schema of `model` (types, enums, descriptions), as a tool's output_schema carries it."""
    full = model.model_json_schema()
    properties = {}
    for name, spec in full["properties"].items():
        prop: dict[str, Any] = {}
        if "enum" in spec:
            prop["type"] = spec.get("type", "string")
            prop["enum"] = list(spec["enum"])
        elif "const" in spec:
            prop["type"] = spec.get("type", "string")
            prop["enum"] = [spec["const"]]
        elif "anyOf" in spec:  # an optional field: its type (null is said in the description)
            prop["type"] = next(s["type"] for s in spec["anyOf"] if s.get("type") != "null")
        else:
            prop["type"] = spec["type"]
        if "description" in spec:
            prop["description"] = spec["description"]
        properties[name] = prop
    return {"type": "object", "properties": properties, "required": list(full.get("required", []))}


# --- the tools' item schemas ---------------------------------------------------------------------------------------

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
