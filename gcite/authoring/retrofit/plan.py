"""The shared plan every pass reads and writes: the options, the app being rewired, the retrieval → LLM paths found
in it, and the report so far (one line per change, notes). Also what several passes name the same way: the ids of
the nodes retrofit adds (`new_id`), a path (`Target`) and the question it answers (`query_selector`)."""

import re
from dataclasses import dataclass
from typing import Any

from gcite.authoring import chatflows as dsl_build
from gcite.authoring.retrofit.graph import Graph

NODES = ("plugin", "code")
WEBS = ("none", "gcite")
LANGS = ("auto", *dsl_build.LANGS)
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

    def __post_init__(self) -> None:
        if self.nodes not in NODES:
            raise ValueError(f"nodes: {self.nodes!r} is not one of {', '.join(NODES)}")
        if self.web not in WEBS:
            raise ValueError(f"web: {self.web!r} is not one of {', '.join(WEBS)}")
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


class Plan:
    """The app being rewired and what the passes found and did so far.

    - `document`, `graph` (the same app, the graph through `Graph`), `options`, `mode` (advanced-chat or workflow);
    - `targets`: the paths to rewire, `done`: LLMs retrofitted by an earlier run (both written by `paths.find_paths`);
    - `changes` and `notes`: the report, one line each, in the order the passes made them."""

    def __init__(self, document: dict[str, Any], options: Options) -> None:
        self.graph = Graph(document)
        self.document = document
        self.options = options
        self.mode = document["app"]["mode"]
        self.targets: list[Target] = []
        self.done: list[str] = []
        self.changes: list[str] = []
        self.notes: list[str] = []
        self._identifier = options.identifier

    @property
    def identifier(self) -> str:
        """The plugin's unique identifier the added tool nodes and the dependency name (computed once, if asked)."""
        if self._identifier is None:
            self._identifier = dsl_build.plugin_identifier()
        return self._identifier

    def change(self, line: str) -> None:
        self.changes.append(line)

    def add_node(self, node: dict[str, Any], line: str) -> str:
        """Adds `node` to the graph and reports it (`line`: what it does); its id."""
        self.graph.add_node(node)
        self.change(f"node added: {node['data']['title']} ({node['id']}, {node['data']['type']}) — {line}")
        return node["id"]


def new_id(kind: str, owner: str) -> str:
    """The id of a node retrofit adds for `owner` (an LLM or retrieval node): stable, so a second run finds it."""
    clean = re.sub(r"[^A-Za-z0-9_]", "_", owner)
    return f"{PREFIX}{kind}_{clean}"[:50]


def template_of(selector: list[str]) -> str:
    return "{{#" + ".".join(selector) + "#}}"


def query_selector(graph: Graph, target: Target) -> list[str]:
    """The question: the first retrieval's query (sys.query in a chatflow, a Start input in a workflow)."""
    selector = graph.by_id[target.retrievals[0]]["data"].get("query_variable_selector") or ["sys", "query"]
    selector = [str(s) for s in selector]
    if len(selector) == 2 and selector[1].startswith("sys."):  # the old form: [start id, "sys.query"]
        return ["sys", selector[1][4:]]
    return selector
