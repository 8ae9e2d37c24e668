"""The shared plan every pass reads and writes: the options, the app being rewired, the retrieval → LLM paths found
in it, and the report so far (one line per change, notes). Also what several passes name the same way: the ids of
the nodes retrofit adds (`new_id`), a path (`Target`) and the question it answers (`query_selector`)."""

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from citations.answer_layout import ANSWERS
from gcite.authoring import chatflows as dsl_build
from gcite.authoring.retrofit.graph import Graph

NODES = ("plugin", "code")
WEBS = ("none", "gcite")
LANGS = ("auto", "zh", "en", "ja", "es")  # the citation rules' languages (rules.LANGS)
PREFIX = "gcite_"  # every node id retrofit adds starts with it
GCITE_PLUGIN = "gcite/gcite:"


@dataclass(frozen=True)
class Options:
    nodes: str = "plugin"
    web: str = "none"
    acl: str | None = None  # the document metadata field holding the roles
    slots: int = dsl_build.ROLE_SLOTS
    memory: bool = False
    lang: str = "auto"
    sources_in_answer: bool = False  # the Answer nodes list the cited sources after the LLM's text
    identifier: str | None = None  # the plugin's unique identifier (default: the unsigned package of this checkout)
    enable_context: bool = False  # an LLM whose prompt uses {{#context#}} with context off: wire it to retrieval
    answer: str = "llm-node"  # what the Answer shows (ANSWERS): the LLM's text, cited_answer's, or the clean answer

    def __post_init__(self) -> None:
        if self.nodes not in NODES:
            raise ValueError(f"nodes: {self.nodes!r} is not one of {', '.join(NODES)}")
        if self.web not in WEBS:
            raise ValueError(f"web: {self.web!r} is not one of {', '.join(WEBS)}")
        if self.answer not in ANSWERS:
            raise ValueError(f"answer: {self.answer!r} is not one of {', '.join(ANSWERS)}")
        if self.answer == "cited" and self.nodes != "plugin":
            raise ValueError(
                "answer: cited needs --nodes plugin (cited_answer is a plugin tool: a Code node cannot call a "
                "model); run with --nodes plugin --answer cited, or with --nodes code --answer clean"
            )
        if self.answer != "llm-node" and self.sources_in_answer:
            raise ValueError(
                f"answer: {self.answer} shows the cited sources in the answer itself; leave out --sources-in-answer"
            )
        if self.lang not in LANGS:
            raise ValueError(f"lang: {self.lang!r} is not one of {', '.join(LANGS)}")
        if self.acl is not None and (not self.acl.strip() or not re.fullmatch(r"[^\s{}#]{1,255}", self.acl.strip())):
            raise ValueError(f"acl: {self.acl!r} is not a metadata field name")
        dsl_build.Variant(slots=self.slots)  # validates the slot count with the generator's own message

    @property
    def uses_plugin(self) -> bool:
        return self.nodes == "plugin" or self.web == "gcite"


@dataclass
class Target:
    """One retrieval → LLM path to rewire."""

    llm: str
    source: str  # the node the context came from: a retrieval node or an aggregator of retrieval results
    selector: list[str]  # the context's original selector
    retrievals: list[str]
    formatter: str | None = None  # a Template or Code node that only formatted the retrieval result for the context
    enable: bool = False  # the context was switched off (with {{#context#}} in the prompt): --enable-context


class Plan:
    """The app being rewired and what the passes found and did so far.

    - `document`, `graph` (the same app, the graph through `Graph`), `options`, `mode` (advanced-chat or workflow);
    - `targets`: the paths to rewire, `done`: LLMs retrofitted by an earlier run, `cited`: the `cited_answer` nodes
      an earlier run put in place of an LLM (all three written by `paths.find_paths`);
    - `changes` and `notes`: the report, one line each, in the order the passes made them."""

    def __init__(self, document: dict[str, Any], options: Options) -> None:
        self.graph = Graph(document)
        self.document = document
        self.options = options
        self.mode = document["app"]["mode"]
        self.targets: list[Target] = []
        self.done: list[str] = []
        self.cited: list[str] = []  # cited_answer nodes an earlier run put in place of an LLM (--answer cited)
        self.changes: list[str] = []
        self.notes: list[str] = []
        self.warnings: list[str] = []
        self.cache: dict[str, Any] = {}  # what a pass computes once per app (prompt.searches_web)
        self._identifier = options.identifier

    @property
    def identifier(self) -> str:
        """The plugin's unique identifier the added tool nodes and the dependency name (computed once, if asked)."""
        if self._identifier is None:
            self._identifier = dsl_build.plugin_identifier()
        return self._identifier

    def change(self, line: str) -> None:
        self.changes.append(line)

    def id_of(self, kind: str, owner: str) -> str:
        """The id of the `kind` node G-Cite adds for `owner` (`our_id`)."""
        return our_id(self.graph, kind, owner)

    def warn(self, line: str) -> None:
        """Something the builder should decide (a prompt that contradicts citing): printed as a `warning:` line."""
        if line not in self.warnings:
            self.warnings.append(line)

    def add_node(self, node: dict[str, Any], line: str, inside: str | None = None) -> str:
        """Adds `node` to the graph (inside the iteration or loop `inside`, if given) and reports it (`line`: what
        it does); its id."""
        if inside is not None:
            self.graph.put_inside(node, inside)
        self.graph.add_node(node)
        self.change(f"node added: {node['data']['title']} ({node['id']}, {node['data']['type']}) — {line}")
        return node["id"]


MAX_ID = 50  # a node id in a {{#id.output#}} reference: [a-zA-Z0-9_]{1,50} (Dify's VARIABLE_PATTERN)
DIGEST = 10  # hex digits of the owner's sha256 in an id that cannot carry the owner's id as it is


def new_id(kind: str, owner: str) -> str:
    """The id of a node retrofit adds for `owner` (an LLM or Start node): stable, so a second run finds it, and
    unique by construction, never by truncation: `gcite_<kind>_<owner>` when the owner's id fits as it is, else
    `gcite_<kind>_<head of the owner's id>_<sha256 of the whole owner id>` (two owners sharing a long prefix, or
    differing only in characters a reference cannot hold, get different ids). `check_ids` checks the ids of a run
    against every id in the file."""
    clean = re.sub(r"[^A-Za-z0-9_]", "_", owner)
    plain = f"{PREFIX}{kind}_{clean}"
    if clean == owner and len(plain) <= MAX_ID and not re.search(rf"_[0-9a-f]{{{DIGEST}}}$", owner):
        return plain
    digest = hashlib.sha256(owner.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST]
    head = f"{PREFIX}{kind}_"
    room = MAX_ID - len(head) - len(digest) - 1
    return f"{head}{clean[:room]}_{digest}" if room > 0 else f"{head}{digest}"[:MAX_ID]


def legacy_id(kind: str, owner: str) -> str:
    """The id retrofit gave before ids were unique by construction (cut at 50): found on files it wrote then."""
    return f"{PREFIX}{kind}_{re.sub(r'[^A-Za-z0-9_]', '_', owner)}"[:MAX_ID]


# what each node retrofit adds is (`is_ours`): the G-Cite tool, or the Code node's outputs, or the assigner's type
KINDS = {
    "merge": ("merge_chunks", {"formatted_chunks", "chunk_metadata"}),
    "validate": ("validate_citations", {"citations", "answer_without_markers"}),
    "filter": ("filter_chunks", {"chunks", "kept_count"}),
    "web": ("web_search", None),
    "remember": (None, {"history", "history_text"}),
    "acl_roles": (None, {"role_1", "role_count"}),
    "save_history": (None, None),
    "section": (None, {"output"}),
    "cite": ("cited_answer", None),
}


def is_ours(graph: Graph, node_id: str, kind: str) -> bool:
    """The node is the `kind` node G-Cite adds, by what it is (not only by its id): our tool of that name, a Code
    node with that node's outputs, or (save_history) an assigner writing the conversation history."""
    node = graph.by_id.get(node_id)
    if node is None or not node_id.startswith(PREFIX):
        return False
    data = node["data"]
    tool, outputs = KINDS.get(kind, (None, None))
    if data.get("type") == "tool":
        return (
            str(data.get("provider_id", "")).startswith("gcite/") and tool is not None and data.get("tool_name") == tool
        )
    if data.get("type") == "code":
        declared = data.get("outputs")
        return (
            outputs is not None
            and isinstance(declared, dict)
            and outputs <= set(declared)
            and "def main(" in str(data.get("code") or "")
        )
    if data.get("type") == "template-transform":
        return kind == "section"
    if data.get("type") == "assigner":
        return kind == "save_history" and any(
            list(item.get("variable_selector") or [])[:1] == ["conversation"] for item in data.get("items") or []
        )
    return False


def our_id(graph: Graph, kind: str, owner: str) -> str:
    """The id of the `kind` node for `owner`: the one a run before this gave it when that node is there and ours
    (an id cut at 50 by an older retrofit), else `new_id`."""
    fresh, old = new_id(kind, owner), legacy_id(kind, owner)
    if fresh not in graph.by_id and old != fresh and is_ours(graph, old, kind):
        return old
    return fresh


def template_of(selector: list[str]) -> str:
    return "{{#" + ".".join(selector) + "#}}"


def query_selector(graph: Graph, target: Target) -> list[str]:
    """The question: the first retrieval's query (sys.query in a chatflow, a Start input in a workflow)."""
    selector = graph.by_id[target.retrievals[0]]["data"].get("query_variable_selector") or ["sys", "query"]
    selector = [str(s) for s in selector]
    if len(selector) == 2 and selector[1].startswith("sys."):  # the old form: [start id, "sys.query"]
        return ["sys", selector[1][4:]]
    return selector
