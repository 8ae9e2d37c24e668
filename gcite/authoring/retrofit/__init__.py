"""`gcite retrofit`: G-Cite citations wired into a builder's own exported Dify app DSL.

For every LLM node whose context comes from Knowledge Retrieval node(s) — directly, or through a variable aggregator
of retrieval results — `retrofit` adds, beside what they join:
- a merge node (our `merge_chunks` tool, or the Code node from nodes/merge_chunks.py) between the retrieval and the
  LLM; with `web="gcite"` our `web_search` tool runs in parallel and feeds it too;
- the LLM's context rewired to the merge node's `formatted_chunks`, and G-Cite's citation rules appended to its
  system prompt in the prompt's own language (the builder's prompt and persona kept; never added twice);
- a validate node after the LLM (the LLM's text, the merge node's `chunk_metadata`, the question), so the cited
  sources, invalid ids and support flags are in its `node_finished`; in a workflow-mode app, each End node after the
  LLM also outputs its `citations`;
- `acl`: the hidden `user_roles` Start input, the pre-filter slots node after Start, the pre-filter conditions on
  each retrieval node and a filter node before the merge, as in our own chatflows; `memory`: the multi-turn memory of
  our chatflows (conversation variables, the remember and save nodes, the history section of the prompt);
  `sources_in_answer`: each Answer node showing the LLM's text (`{{#<llm>.text#}}`) then lists the cited sources, as
  our chatflows' Answer node does (`chatflows.source_list`), and in a workflow each End node after the LLM outputs that
  list as `references`; an Answer showing two retrofitted LLMs' texts is refused (two chunk lists, one numbering).
Everything else (ids, variables, model settings, features, positions of existing nodes) is kept.

The node shapes, prompt text, pre-filter and memory come from `gcite.authoring.chatflows` (our own chatflows' generator) and
`gcite.authoring.prefilter`; nothing of them is repeated here. Every change is reported as one line; a second run on the output
changes nothing. What cannot be done safely is refused with one line (`RetrofitRefusal`).
"""

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from gcite import load_yaml
from gcite.authoring import chatflows as dsl_build
from gcite.authoring.prefilter import templated_conditions

NODES = ("plugin", "code")
WEBS = ("none", "gcite")
LANGS = ("auto", *dsl_build.LANGS)
APP_MODES = ("advanced-chat", "workflow")
PREFIX = "gcite_"  # every node id retrofit adds starts with it
AGGREGATORS = ("variable-aggregator", "variable-assigner")  # "variable-assigner" is the aggregator's old type name
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
LATIN = re.compile(r"[A-Za-z]")
NODE_ID = re.compile(r"[A-Za-z0-9_]{1,50}")
CONTEXT = "{{#context#}}"
GCITE_PLUGIN = "gcite/gcite:"
RULE_HEADINGS = {"zh": "# 引用规则（G-Cite）", "en": "# Citation rules (G-Cite)"}
DEFAULT_SIZE = (244, 90)
GAP = 40
END_SOURCE_LIST = "references"  # the End output name for it in a workflow (Dify: variable names of 30 at most)


class RetrofitRefusal(ValueError):
    """The file is not a Dify app DSL, has nothing to retrofit, or has a shape that cannot be rewired safely."""


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
class Result:
    document: dict[str, Any]
    text: str
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.changes)


# --- reading the file -----------------------------------------------------------------------------------------

def parse(text: str) -> tuple[dict[str, Any], bool]:
    """The DSL document, and whether it came in the export API's `{"data": "<yaml>"}` form."""
    try:
        document = load_yaml(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise RetrofitRefusal(f"not a Dify app DSL: the file is not valid YAML{where}") from None
    wrapped = False
    if isinstance(document, dict) and set(document) == {"data"} and isinstance(document["data"], str):
        wrapped = True
        return parse(document["data"])[0], wrapped
    if not isinstance(document, dict):
        raise RetrofitRefusal("not a Dify app DSL: the file is not a YAML mapping")
    kind = document.get("kind")
    if kind not in (None, "", "app"):
        raise RetrofitRefusal(f"not a Dify app DSL: kind is {kind!r}, not 'app'")
    version = document.get("version")
    if version is not None and not isinstance(version, str):
        # Dify's import: "Invalid version type, expected str"
        raise RetrofitRefusal(f"not a Dify app DSL: version must be a string, got {version!r}")
    app = document.get("app")
    if not isinstance(app, dict):
        raise RetrofitRefusal("not a Dify app DSL: it has no app section")
    mode = app.get("mode")
    if mode not in APP_MODES:
        raise RetrofitRefusal(f"app mode {mode!r} has no workflow graph to rewire: retrofit takes chatflows "
                              f"(advanced-chat) and workflows")
    graph = (document.get("workflow") or {}).get("graph") if isinstance(document.get("workflow"), dict) else None
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise RetrofitRefusal("not a Dify app DSL: it has no workflow.graph.nodes")
    for n, item in enumerate(graph["nodes"]):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not isinstance(item.get("data"), dict):
            raise RetrofitRefusal(f"not a Dify app DSL: workflow.graph.nodes[{n}] has no id or data")
    if not isinstance(graph.get("edges") or [], list):
        raise RetrofitRefusal("not a Dify app DSL: workflow.graph.edges is not a list")
    for n, edge in enumerate(graph.get("edges") or []):
        if not isinstance(edge, dict) or not isinstance(edge.get("source"), str) \
                or not isinstance(edge.get("target"), str):
            raise RetrofitRefusal(f"not a Dify app DSL: workflow.graph.edges[{n}] is not an edge (a mapping with "
                                  f"source and target ids)")
    dependencies = document.get("dependencies")
    if dependencies is not None and not (isinstance(dependencies, list)
                                         and all(isinstance(d, dict) for d in dependencies)):
        raise RetrofitRefusal("not a Dify app DSL: dependencies is not a list of mappings")
    shapes = {"llm": (("context", dict, "a mapping"), ("prompt_template", (list, dict), "a list")),
              "end": (("outputs", list, "a list"),), "start": (("variables", list, "a list"),)}
    for item in graph["nodes"]:  # the node fields retrofit reads, in the shapes Dify writes them
        data = item["data"]
        for field, kind, shape in shapes.get(str(data.get("type")), ()):
            if data.get(field) is not None and not isinstance(data[field], kind):
                raise RetrofitRefusal(f"not a Dify app DSL: node {item['id']}'s {field} is not {shape}")
    return document, wrapped


# --- the graph ------------------------------------------------------------------------------------------------

class Graph:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.workflow = document["workflow"]
        self.graph = self.workflow["graph"]
        self.graph.setdefault("edges", [])
        self.nodes: list[dict[str, Any]] = self.graph["nodes"]
        self.by_id = {n["id"]: n for n in self.nodes}

    def type_of(self, node_id: str) -> str:
        return str(self.by_id[node_id]["data"].get("type", "")) if node_id in self.by_id else ""

    def title(self, node_id: str) -> str:
        title = str(self.by_id[node_id]["data"].get("title") or self.type_of(node_id)).strip()
        return f'"{title}" ({node_id})'

    @property
    def edges(self) -> list[dict[str, Any]]:
        return self.graph["edges"]

    def has_edge(self, source: str, target: str) -> bool:
        return any(e.get("source") == source and e.get("target") == target for e in self.edges)

    def add_edge(self, source: str, target: str, handle: str = "source") -> None:
        self.edges.append({
            "id": f"{source}-{handle}-{target}-target", "source": source, "sourceHandle": handle, "target": target,
            "targetHandle": "target", "type": "custom", "zIndex": 0,
            "data": {"sourceType": self.type_of(source), "targetType": self.type_of(target), "isInIteration": False,
                     "isInLoop": False}})

    def remove_edge(self, source: str, target: str) -> None:
        self.graph["edges"] = [e for e in self.edges if not (e.get("source") == source and e.get("target") == target)]

    def children(self, node_id: str) -> list[str]:
        return [e["target"] for e in self.edges if e.get("source") == node_id]

    def downstream(self, node_id: str) -> set[str]:
        seen: set[str] = set()
        todo = self.children(node_id)
        while todo:
            current = todo.pop()
            if current not in seen:
                seen.add(current)
                todo += self.children(current)
        return seen

    def start_id(self) -> str:
        starts = [n["id"] for n in self.nodes if n["data"].get("type") == "start" and not n.get("parentId")]
        if len(starts) != 1:
            raise RetrofitRefusal(f"cannot rewire safely: the graph has {len(starts)} Start nodes, not one")
        return starts[0]

    # the canvas: a new node goes beside what it joins, on a free spot
    def box(self, node: dict[str, Any]) -> tuple[float, float, float, float]:
        position = node.get("positionAbsolute") or node.get("position") or {}
        x, y = float(position.get("x") or 0), float(position.get("y") or 0)
        return x, y, float(node.get("width") or DEFAULT_SIZE[0]), float(node.get("height") or DEFAULT_SIZE[1])

    def free_spot(self, x: float, y: float) -> tuple[int, int]:
        width, height = DEFAULT_SIZE
        boxes = [self.box(n) for n in self.nodes]
        for step in range(0, 60):
            candidate_y = y + (step // 2 + step % 2) * (height + GAP) * (1 if step % 2 else -1) if step else y
            if not any(cx - GAP < x + width and x < cx + cw + GAP and cy - GAP < candidate_y + height
                       and candidate_y < cy + ch + GAP for cx, cy, cw, ch in boxes):
                return round(x), round(candidate_y)
        return round(x), round(max(b[1] + b[3] for b in boxes) + GAP)

    def position_near(self, *anchors: str, dx: float = 0, dy: float = 0) -> tuple[int, int]:
        points = [self.box(self.by_id[a]) for a in anchors if a in self.by_id]
        x = sum(p[0] for p in points) / len(points) + dx
        y = sum(p[1] for p in points) / len(points) + dy
        return self.free_spot(x, y)

    def add_node(self, node: dict[str, Any]) -> None:
        self.nodes.append(node)
        self.by_id[node["id"]] = node


def new_id(kind: str, owner: str) -> str:
    """The id of a node retrofit adds for `owner` (an LLM or retrieval node): stable, so a second run finds it."""
    clean = re.sub(r"[^A-Za-z0-9_]", "_", owner)
    return f"{PREFIX}{kind}_{clean}"[:50]


# --- language and prompt --------------------------------------------------------------------------------------

def prompt_messages(data: dict[str, Any]) -> list[dict[str, Any]]:
    template = data.get("prompt_template")
    if isinstance(template, list):
        return [m for m in template if isinstance(m, dict)]
    if isinstance(template, dict):
        return [template]
    return []


def detect_lang(texts: Iterable[str]) -> str:
    text = "".join(texts)
    return "zh" if len(CJK.findall(text)) * 3 >= len(LATIN.findall(text)) and CJK.search(text) else "en"


def prompt_parts(lang: str) -> dict[str, str]:
    """Our own chatflows' system prompt (gcite.authoring.chatflows) cut at its `# ` headings into the parts retrofit
    adds: `sources` (where the chunks come from), `rules` (the answering rules), `history` (the earlier
    conversation), `chunks` (the numbered chunks). The first part, the persona, stays the builder's."""
    parts = [p.strip() for p in re.split(r"(?m)^(?=# )", dsl_build.Variant(lang=lang).system_prompt())
             if p.startswith("# ")]
    named = dict(zip(("persona", "sources", "rules", "history", "chunks"), parts, strict=True))
    if CONTEXT not in named["chunks"] or "{{#conversation.history_text#}}" not in named["history"] \
            or "[C:N]" not in named["rules"]:
        raise RuntimeError("gcite/authoring/chatflows.py's prompt no longer has the sections retrofit takes from it: "
                           "persona, sources, rules, history, chunks")
    return named


# Our own prompt puts the chunks below its rules; a builder's prompt may hold its context above them, so the rules
# retrofit adds say "the numbered chunks" without saying where
POSITION_FREE = {"en": (("The numbered chunks below come from", "The numbered chunks come from"),
                        ("strictly on the numbered chunks below.", "strictly on the numbered chunks.")),
                 "zh": (("下方检索片段可能来自", "检索片段可能来自"),
                        ("严格基于下方编号的检索片段", "严格基于编号的检索片段"))}


def citation_rules(lang: str) -> str:
    """The citation rules of our own chatflows' prompt, one heading level down under G-Cite's heading, with no word
    on where the chunks stand (POSITION_FREE)."""
    parts = prompt_parts(lang)
    rules = RULE_HEADINGS[lang] + "\n" + "\n\n".join("#" + parts[k] for k in ("sources", "rules"))
    for placed, free in POSITION_FREE[lang]:
        if placed not in rules:
            raise RuntimeError(f"gcite/authoring/chatflows.py's prompt no longer says {placed!r} (POSITION_FREE)")
        rules = rules.replace(placed, free)
    return rules


def history_section(lang: str) -> str:
    return prompt_parts(lang)["history"]


def chunks_section(lang: str) -> str:
    return prompt_parts(lang)["chunks"]


# --- the retrofit ---------------------------------------------------------------------------------------------

@dataclass
class Target:
    llm: str
    source: str  # the node the context came from: a retrieval node or an aggregator of retrieval results
    selector: list[str]  # the context's original selector
    retrievals: list[str]


def context_source(graph: Graph, llm_id: str) -> tuple[Target | None, str]:
    """The retrieval behind an LLM's context, or None and why not."""
    data = graph.by_id[llm_id]["data"]
    context = data.get("context") or {}
    selector = context.get("variable_selector") or []
    if not context.get("enabled") or not selector:
        return None, "context disabled"
    source = str(selector[0])
    if source not in graph.by_id:
        return None, f"context reads {'.'.join(map(str, selector))}, which no node outputs"
    kind = graph.type_of(source)
    if source.startswith(PREFIX) and selector[1:] == ["formatted_chunks"]:
        return None, "already retrofitted"
    if kind == "knowledge-retrieval":
        return Target(llm_id, source, list(selector), [source]), ""
    if kind in AGGREGATORS:
        aggregated = aggregator_inputs(graph.by_id[source]["data"], selector)
        retrievals = [s[0] for s in aggregated if s and graph.type_of(str(s[0])) == "knowledge-retrieval"]
        if aggregated and len(retrievals) == len(aggregated):
            return Target(llm_id, source, list(selector), retrievals), ""
        if retrievals:
            others = [".".join(map(str, s)) for s in aggregated if s and s[0] not in retrievals]
            raise RetrofitRefusal(f"cannot rewire safely: the context of LLM {graph.title(llm_id)} comes from "
                                  f"aggregator {graph.title(source)}, which also aggregates {', '.join(others)} "
                                  f"(not Knowledge Retrieval results)")
        return None, f"context is {'.'.join(map(str, selector))} (an aggregator of no retrieval result)"
    return None, f"context is {'.'.join(map(str, selector))} (a {kind or 'missing'} node)"


def aggregator_inputs(data: dict[str, Any], selector: list[str]) -> list[list[str]]:
    """The selectors an aggregator's output (`output`, or a group's `<group>.output`) is chosen from."""
    settings = data.get("advanced_settings") or {}
    if settings.get("group_enabled"):
        group = selector[1] if len(selector) > 2 else None
        for g in settings.get("groups") or []:
            if g.get("group_name") == group:
                return [list(s) for s in g.get("variables") or []]
        return []
    return [list(s) for s in data.get("variables") or []]


def query_selector(graph: Graph, target: Target) -> list[str]:
    """The question: the first retrieval's query (sys.query in a chatflow, a Start input in a workflow)."""
    selector = graph.by_id[target.retrievals[0]]["data"].get("query_variable_selector") or ["sys", "query"]
    selector = [str(s) for s in selector]
    if len(selector) == 2 and selector[1].startswith("sys."):  # the old form: [start id, "sys.query"]
        return ["sys", selector[1][4:]]
    return selector


def own_line_context(text: str) -> str:
    """`{{#context#}}` on a line of its own, so the merge node's `[C:N]` header lines stay header lines."""
    text = re.sub(r"(?<=[^\n])\{\{#context#\}\}", "\n" + CONTEXT, text)
    return re.sub(r"\{\{#context#\}\}(?=[^\n])", CONTEXT + "\n", text)


def template_of(selector: list[str]) -> str:
    return "{{#" + ".".join(selector) + "#}}"


class Retrofitter:
    def __init__(self, document: dict[str, Any], options: Options) -> None:
        self.graph = Graph(document)
        self.document = document
        self.options = options
        self.mode = document["app"]["mode"]
        self.changes: list[str] = []
        self.notes: list[str] = []
        self._identifier = options.identifier

    @property
    def identifier(self) -> str:
        if self._identifier is None:
            self._identifier = dsl_build.plugin_identifier()
        return self._identifier

    def change(self, line: str) -> None:
        self.changes.append(line)

    # -- entry -----------------------------------------------------------------------------------------------
    def run(self) -> None:
        g = self.graph
        if self.options.memory and self.mode != "advanced-chat":
            raise RetrofitRefusal("--memory: a workflow-mode app has no conversation variables to remember turns in")
        llms = [n["id"] for n in g.nodes if n["data"].get("type") == "llm"]
        targets: list[Target] = []
        looked: list[str] = []
        done: list[str] = []
        for llm_id in llms:
            target, why = context_source(g, llm_id)
            if target is not None:
                targets.append(target)
            elif why == "already retrofitted":
                done.append(llm_id)
            else:
                looked.append(f"{g.title(llm_id)}: {why}")
        if not targets and not done:
            names = "; ".join(looked) if looked else "none (the app has no LLM node)"
            raise RetrofitRefusal(f"no Knowledge Retrieval → LLM context path; LLM nodes looked at: {names}")
        if looked:
            self.notes.append("left as they are (their context is not retrieval results): " + "; ".join(looked))
        for target in targets:
            self.check_shape(target)
        if self.options.sources_in_answer:
            self.check_answers([t.llm for t in targets] + done)
        for target in targets:
            self.wire(target)
        for llm_id in done:
            self.complete(llm_id)
        self.dependencies()

    def check_shape(self, target: Target) -> None:
        g = self.graph
        llm = g.by_id[target.llm]
        if llm.get("parentId") or llm["data"].get("isInIteration") or llm["data"].get("isInLoop"):
            raise RetrofitRefusal(f"cannot rewire safely: LLM {g.title(target.llm)} is inside an iteration or loop")
        for r in target.retrievals:
            if g.by_id[r].get("parentId"):
                raise RetrofitRefusal(f"cannot rewire safely: retrieval {g.title(r)} is inside an iteration or loop")
            mode = g.by_id[r]["data"].get("metadata_filtering_mode") or "disabled"
            if self.options.acl and mode != "disabled" and not self._our_conditions(r):
                raise RetrofitRefusal(f"cannot rewire safely: --acl would replace the {mode} metadata filter of "
                                      f"retrieval {g.title(r)}")
        for message in prompt_messages(llm["data"]):
            if message.get("edition_type") == "jinja2":
                raise RetrofitRefusal(f"cannot rewire safely: LLM {g.title(target.llm)} has a Jinja2 prompt; "
                                      f"add the rules by hand (docs/retrofit.md)")
        if not prompt_messages(llm["data"]):
            raise RetrofitRefusal(f"cannot rewire safely: LLM {g.title(target.llm)} has no prompt_template")
        for kind in ("merge", "validate", "filter", "web", "remember", "save_history"):
            node_id = new_id(kind, target.llm)
            if node_id in g.by_id and not self._ours(node_id):
                raise RetrofitRefusal(f"cannot rewire safely: node id {node_id} is taken by a node G-Cite did not add")

    def _ours(self, node_id: str) -> bool:
        data = self.graph.by_id[node_id]["data"]
        return node_id.startswith(PREFIX) and (data.get("type") in ("code", "assigner")
                                               or str(data.get("provider_id", "")).startswith("gcite/"))

    def _our_conditions(self, retrieval: str) -> bool:
        conditions = (self.graph.by_id[retrieval]["data"].get("metadata_filtering_conditions") or {}).get("conditions")
        return bool(conditions) and all(str(c.get("id", "")).startswith("acl-") for c in conditions)

    # -- one LLM ---------------------------------------------------------------------------------------------
    def lang_of(self, llm_id: str) -> str:
        if self.options.lang != "auto":
            return self.options.lang
        messages = prompt_messages(self.graph.by_id[llm_id]["data"])
        system = [m.get("text") or "" for m in messages if m.get("role") == "system"]
        return detect_lang(system or [m.get("text") or "" for m in messages])

    def wire(self, target: Target) -> None:
        g, o = self.graph, self.options
        llm, lang = target.llm, self.lang_of(target.llm)
        v = dsl_build.Variant(plugin=o.nodes == "plugin", lang=lang, slots=o.slots)
        rag = [target.source, target.selector[1]] if len(target.selector) == 2 else list(target.selector)
        upstream = target.source
        if o.acl:
            self.acl(target, v)
            rag, upstream = self.filter_node(target, v, rag)
        merge = self.merge_node(target, v, rag, upstream)
        if g.has_edge(target.source, llm) and upstream == target.source:
            g.remove_edge(target.source, llm)
            self.change(f"edge removed: {g.title(target.source)} → {g.title(llm)} (now through {merge})")
        if not g.has_edge(merge, llm):
            g.add_edge(merge, llm)
            self.change(f"edge added: {merge} → {g.title(llm)}")
        context = g.by_id[llm]["data"]["context"]
        old = ".".join(map(str, context["variable_selector"]))
        context["variable_selector"] = [merge, "formatted_chunks"]
        self.change(f"selector rewired: LLM {g.title(llm)} context {old} → {merge}.formatted_chunks")
        self.prompt(llm, lang)
        validate = self.validate_node(target, v, merge)
        if o.sources_in_answer:
            self.source_list(llm, validate)
        if o.memory:
            self.memory(target, v, validate)
        if (g.by_id[llm]["data"].get("memory") or {}).get("window") is not None:
            self.notes.append(f"LLM {g.title(llm)} keeps Dify's built-in memory, whose earlier answers carry their "
                              f"[C:N] markers into the prompt; "
                              + ("G-Cite's marker-free memory is added too: turn the built-in one off in Dify"
                                 if o.memory else "--memory gives the marker-free memory of G-Cite's chatflows"))

    def complete(self, llm_id: str) -> None:
        """An LLM retrofitted before: add what the options ask for and the first run did not (nothing by default)."""
        g = self.graph
        merge = g.by_id[llm_id]["data"]["context"]["variable_selector"][0]
        lang = self.lang_of(llm_id)
        v = dsl_build.Variant(plugin=self.options.nodes == "plugin", lang=lang, slots=self.options.slots)
        self.prompt(llm_id, lang)
        validate = new_id("validate", llm_id)
        if validate not in g.by_id:
            validate = self.validate_node(Target(llm_id, merge, [merge, "formatted_chunks"], []), v, merge)
        if self.options.sources_in_answer:
            self.source_list(llm_id, validate)
        if self.options.memory:
            self.memory(Target(llm_id, merge, [], []), v, validate)
        if self.options.acl and new_id("filter", llm_id) not in g.by_id:
            # access control asked for and absent: written without it, the app would show every chunk to everyone
            raise RetrofitRefusal(f"--acl: LLM {g.title(llm_id)} was retrofitted before without access control, "
                                  f"which retrofit adds on a first run only: run it with --acl on the app as "
                                  f"exported before G-Cite (not on its .gcite.yml)")

    def prompt(self, llm_id: str, lang: str) -> None:
        g = self.graph
        data = g.by_id[llm_id]["data"]
        messages = prompt_messages(data)
        system = next((m for m in messages if m.get("role") == "system"), None)
        if system is None and isinstance(data.get("prompt_template"), list):
            system = {"id": new_id("system", llm_id), "role": "system", "text": ""}
            data["prompt_template"].insert(0, system)
            self.change(f"prompt extended: LLM {g.title(llm_id)} gains a system prompt")
        elif system is None:
            system = messages[0]  # completion mode: one prompt
        text = system.get("text") or ""
        history = self.options.memory and not any(
            "{{#conversation.history_text#}}" in (m.get("text") or "") for m in messages)
        if any(h in text for h in RULE_HEADINGS.values()):
            if history:
                system["text"] = text.rstrip() + "\n\n" + history_section(lang)
                self.change(f"prompt extended: LLM {g.title(llm_id)} system prompt gains the earlier conversation")
            return
        for message in messages:
            spaced = own_line_context(message.get("text") or "")
            if spaced != (message.get("text") or ""):
                message["text"] = spaced
                self.change(f"prompt: LLM {g.title(llm_id)} {{{{#context#}}}} put on a line of its own (each "
                            f"numbered chunk starts with its [C:N] line)")
        text = system.get("text") or ""
        chunks = not any(CONTEXT in (m.get("text") or "") for m in messages)
        added = [citation_rules(lang)] + ([history_section(lang)] if history else []) \
            + ([chunks_section(lang)] if chunks else [])
        system["text"] = (text.rstrip() + "\n\n" if text.strip() else "") + "\n\n".join(added)
        extras = [name for name, wanted in (("the earlier conversation", history), ("the chunks", chunks)) if wanted]
        self.change(f"prompt extended: LLM {g.title(llm_id)} system prompt gains G-Cite's citation rules ({lang})"
                    + (f" and {' and '.join(extras)}" if extras else ""))

    def _node(self, node: dict[str, Any], line: str) -> str:
        self.graph.add_node(node)
        self.change(f"node added: {node['data']['title']} ({node['id']}, {node['data']['type']}) — {line}")
        return node["id"]

    def merge_node(self, target: Target, v: dsl_build.Variant, rag: list[str], upstream: str) -> str:
        g, o = self.graph, self.options
        node_id = new_id("merge", target.llm)
        if node_id in g.by_id:
            return node_id
        web = self.web_node(target, v) if o.web == "gcite" else None
        x, y = g.position_near(upstream, target.llm, dy=DEFAULT_SIZE[1] + 2 * GAP)
        if o.nodes == "plugin":
            inputs = {"rag_chunks": dsl_build.variable(*rag)}
            if web:
                inputs["web_chunks"] = dsl_build.variable(web, "json")
            node = dsl_build.gcite_tool(node_id, x, y, v.text["merge"], "merge_chunks", self.identifier, inputs,
                                        {"max_web_results": dsl_build.SEARCH_TOP_K, "max_chunks": 30})
        else:
            variables = {"rag_chunks": rag, **({"web_chunks": [web, "json"]} if web else {})}
            node = dsl_build.code_node(node_id, x, y, v.text["merge"], "merge_chunks", variables,
                                       dsl_build.MERGE_OUTPUTS)
        self._node(node, f"numbers the chunks of {'.'.join(rag)}" + (" and the web results" if web else ""))
        g.add_edge(upstream, node_id)
        self.change(f"edge added: {g.title(upstream)} → {node_id}")
        if web:
            g.add_edge(web, node_id)
            self.change(f"edge added: {web} → {node_id}")
        return node_id

    def web_node(self, target: Target, v: dsl_build.Variant) -> str:
        g = self.graph
        node_id = new_id("web", target.llm)
        if node_id in g.by_id:
            return node_id
        query = query_selector(g, target)
        node = dsl_build.web_search_node(dsl_build.Variant(lang=v.lang), self.identifier)
        x, y = g.position_near(target.retrievals[0], dy=DEFAULT_SIZE[1] + 2 * GAP)
        node.update(dsl_build.node(node_id, x, y, {}), data=node["data"])
        node["data"]["tool_parameters"]["query"] = dsl_build.mixed(template_of(query))
        self._node(node, f"searches the web for {'.'.join(query)}")
        # the search runs when the LLM's retrievals do: on their incoming edges, branch handles included, so on
        # whichever of their branches is taken (wired from Start instead, it would run on every branch and wake the
        # merge node of a skipped one; from one retrieval's edges only, it would miss the other branches)
        incoming = list(dict.fromkeys((str(e["source"]), str(e.get("sourceHandle") or "source")) for e in g.edges
                                      if e.get("target") in target.retrievals and e.get("source") in g.by_id))
        if not incoming:  # retrievals nothing leads to: after what the query comes from
            incoming = [(g.start_id() if query[0] == "sys" else query[0], "source")]
        for source, handle in incoming:
            g.add_edge(source, node_id, handle)
            branch = "" if handle == "source" else f" (branch {handle})"
            self.change(f"edge added: {g.title(source)} → {node_id}{branch}")
        return node_id

    def validate_node(self, target: Target, v: dsl_build.Variant, merge: str) -> str:
        g, o = self.graph, self.options
        node_id = new_id("validate", target.llm)
        if node_id in g.by_id:
            return node_id
        question = query_selector(g, target) if target.retrievals else self._question_of(merge)
        x, y = g.position_near(target.llm, dy=DEFAULT_SIZE[1] + 2 * GAP)
        if o.nodes == "plugin":
            node = dsl_build.gcite_tool(node_id, x, y, v.text["validate"], "validate_citations", self.identifier,
                                        {"answer": dsl_build.mixed(template_of([target.llm, "text"])),
                                         "chunk_metadata": dsl_build.variable(merge, "chunk_metadata"),
                                         "question": dsl_build.mixed(template_of(question))},
                                        {"insufficient_phrases": v.recognised_refusals})
        else:
            # the Code node takes no constant: the validator's default refusal phrases (both languages) apply
            node = dsl_build.code_node(node_id, x, y, v.text["validate"], "validate_citations",
                                       {"answer": [target.llm, "text"], "chunk_metadata": [merge, "chunk_metadata"],
                                        "question": question}, dsl_build.VALIDATE_OUTPUTS)
        self._node(node, f"checks the markers of {g.title(target.llm)}")
        g.add_edge(target.llm, node_id)
        self.change(f"edge added: {g.title(target.llm)} → {node_id}")
        if self.mode == "workflow":
            self.end_outputs(target.llm, node_id)
        return node_id

    def _question_of(self, merge: str) -> list[str]:
        node = self.graph.by_id[merge]["data"]
        source = (node.get("tool_parameters") or {}).get("rag_chunks", {}).get("value") \
            or next((v["value_selector"] for v in node.get("variables") or [] if v["variable"] == "rag_chunks"), None)
        kr = self.graph.by_id.get(str(source[0])) if source else None
        if kr is not None and kr["data"].get("type") == "knowledge-retrieval":
            return query_selector(self.graph, Target("", "", [], [kr["id"]]))
        return ["sys", "query"]

    def end_outputs(self, llm_id: str, validate: str, output: str = "citations", value_type: str = "array[object]",
                    name: str = "citations") -> None:
        """Each End node after the LLM outputs the validate node's `output` (as `name`, or `name_2`, … when taken)."""
        g = self.graph
        for end in sorted(n for n in g.downstream(llm_id) if g.type_of(n) == "end"):
            outputs = g.by_id[end]["data"].setdefault("outputs", [])
            if any(list(o.get("value_selector") or []) == [validate, output] for o in outputs):
                continue
            names = {o.get("variable") for o in outputs}
            name = next(n for n in (f"{name}{'' if k == 1 else f'_{k}'}" for k in range(1, 100)) if n not in names)
            outputs.append({"variable": name, "value_selector": [validate, output], "value_type": value_type})
            self.change(f"output added: End {g.title(end)} outputs {name} = {validate}.{output}")
            if not g.has_edge(validate, end):
                g.add_edge(validate, end)
                self.change(f"edge added: {validate} → {g.title(end)}")

    # -- the source list in the answer -----------------------------------------------------------------------
    def answers_showing(self, llm_id: str) -> list[str]:
        """The Answer nodes whose template shows the LLM's own text (`{{#<llm>.text#}}`)."""
        g, shown = self.graph, template_of([llm_id, "text"])
        return [n["id"] for n in g.nodes if g.type_of(n["id"]) == "answer" and shown in str(n["data"].get("answer") or "")]

    def check_answers(self, llms: list[str]) -> None:
        """An Answer showing the text of two retrofitted LLMs would list two sources under one marker: each LLM's
        merge node numbers its own chunks from 1."""
        g = self.graph
        shown: dict[str, list[str]] = {}
        for llm_id in llms:
            for answer in self.answers_showing(llm_id):
                shown.setdefault(answer, []).append(llm_id)
        for answer, of in shown.items():
            if len(of) > 1:
                raise RetrofitRefusal(f"--sources-in-answer: Answer {g.title(answer)} shows the text of LLMs "
                                      f"{' and '.join(g.title(x) for x in of)}, whose [C:N] markers number different "
                                      f"chunk lists, so one source list cannot serve both; split the Answer node or "
                                      f"leave the option out")

    def source_list(self, llm_id: str, validate: str) -> None:
        """--sources-in-answer: each Answer node showing the LLM's text then lists the cited sources, wired as in our
        own chatflows (`dsl_build.source_list`); in a workflow, each End node after the LLM outputs the list."""
        g = self.graph
        if self.mode == "workflow":
            self.end_outputs(llm_id, validate, dsl_build.SOURCE_LIST, "string", END_SOURCE_LIST)
            return
        answers = self.answers_showing(llm_id)
        appended = dsl_build.source_list(validate)
        if not answers:
            self.notes.append(f"--sources-in-answer: no Answer node shows {template_of([llm_id, 'text'])} (the text "
                              f"of LLM {g.title(llm_id)} reaches the answer through other nodes): no source list "
                              f"added; append {appended.strip()} to the Answer by hand where it fits")
            return
        for answer in answers:
            node = g.by_id[answer]
            template = str(node["data"]["answer"])
            if f"{{{{#{validate}.references" in template:  # listed already (by an earlier run, or by hand)
                continue
            if node.get("parentId"):
                self.notes.append(f"--sources-in-answer: Answer {g.title(answer)} is inside an iteration or loop: "
                                  f"no source list added")
                continue
            node["data"]["answer"] = template.rstrip() + appended
            self.change(f"answer extended: Answer {g.title(answer)} lists the cited sources after its text "
                        f"({validate}.{dsl_build.SOURCE_LIST})")
            if not g.has_edge(validate, answer):
                g.add_edge(validate, answer)
                self.change(f"edge added: {validate} → {g.title(answer)}")

    # -- access control --------------------------------------------------------------------------------------
    def acl(self, target: Target, v: dsl_build.Variant) -> None:
        g, o = self.graph, self.options
        start = g.start_id()
        variables = g.by_id[start]["data"].setdefault("variables", [])
        if not any(x.get("variable") == "user_roles" for x in variables):
            variables.append({"variable": "user_roles", "label": v.text["user_roles"], "type": "text-input",
                              "required": False, "hide": True, "max_length": 256, "options": []})
            self.change(f"input added: Start {g.title(start)} gains the hidden user_roles input")
        roles = new_id("acl_roles", start)
        if roles not in g.by_id:
            x, y = g.position_near(start, dy=DEFAULT_SIZE[1] + 2 * GAP)
            node = dsl_build.code_node(roles, x, y, v.text["acl_roles"], "acl_prefilter",
                                       {"user_roles": [start, "user_roles"]},
                                       {**{f"role_{n}": "string" for n in range(1, o.slots + 1)},
                                        "role_count": "number"}, code=dsl_build.prefilter_code(o.slots))
            self._node(node, "fills the pre-filter's role slots")
            # after Start, before everything Start led to: every retrieval sees its slots
            for edge in [e for e in g.edges if e.get("source") == start]:
                edge["source"] = roles
                edge["id"] = f"{roles}-{edge.get('sourceHandle') or 'source'}-{edge['target']}-target"
                edge.setdefault("data", {})["sourceType"] = "code"
                self.change(f"edge moved: {g.title(start)} → {g.title(edge['target'])} now leaves {roles}")
            g.add_edge(start, roles)
            self.change(f"edge added: {g.title(start)} → {roles}")
        slots = [f"{{{{#{roles}.role_{n}#}}}}" for n in range(1, o.slots + 1)]
        for r in target.retrievals:
            data = g.by_id[r]["data"]
            if self._our_conditions(r):
                continue
            data["metadata_filtering_mode"] = "manual"
            data["metadata_filtering_conditions"] = templated_conditions(o.acl, slots)
            self.change(f"pre-filter added: retrieval {g.title(r)} admits only documents whose {o.acl} "
                        f"names one of the user's roles (or none)")

    def filter_node(self, target: Target, v: dsl_build.Variant, rag: list[str]) -> tuple[list[str], str]:
        g, o = self.graph, self.options
        node_id = new_id("filter", target.llm)
        start = g.start_id()
        if node_id not in g.by_id:
            x, y = g.position_near(target.source, dy=-(DEFAULT_SIZE[1] + 2 * GAP))
            if o.nodes == "plugin":
                node = dsl_build.gcite_tool(node_id, x, y, v.text["acl_filter"], "filter_chunks", self.identifier,
                                            {"rag_chunks": dsl_build.variable(*rag),
                                             "user_roles": dsl_build.mixed(template_of([start, "user_roles"]))},
                                            {"acl_field": o.acl, "condition": "", "case_sensitive": True,
                                             "missing_acl": "visible"})
            else:
                node = dsl_build.code_node(node_id, x, y, v.text["acl_filter"], "filter_chunks",
                                           {"rag_chunks": rag, "user_roles": [start, "user_roles"]},
                                           dsl_build.FILTER_OUTPUTS)
                # a Code node takes no constant: the field is the node's own default, or set here in its code
                if o.acl != "access_roles":
                    node["data"]["code"] = node["data"]["code"].replace(
                        'acl_field="access_roles"', f"acl_field={json.dumps(o.acl, ensure_ascii=False)}", 1)
            self._node(node, f"drops chunks whose {o.acl} the user's roles do not match")
            g.add_edge(target.source, node_id)
            self.change(f"edge added: {g.title(target.source)} → {node_id}")
            if g.has_edge(target.source, target.llm):
                g.remove_edge(target.source, target.llm)
                self.change(f"edge removed: {g.title(target.source)} → {g.title(target.llm)} (now through "
                            f"{node_id})")
        return [node_id, "chunks"], node_id

    # -- memory ----------------------------------------------------------------------------------------------
    def memory(self, target: Target, v: dsl_build.Variant, validate: str) -> None:
        g = self.graph
        variables = self.document["workflow"].setdefault("conversation_variables", [])
        have = {x.get("name") for x in variables}
        for variable in dsl_build.conversation_variables(dsl_build.Variant(plugin=True, lang=v.lang)):
            if variable["name"] in have:
                continue
            variables.append(variable)
            self.change(f"conversation variable added: {variable['name']} ({variable['value_type']})")
        remember = new_id("remember", target.llm)
        if remember in g.by_id:
            return
        question = query_selector(g, target) if target.retrievals else ["sys", "query"]
        x, y = g.position_near(validate, dy=DEFAULT_SIZE[1] + 2 * GAP)
        node = dsl_build.code_node(remember, x, y, v.text["remember"], "remember_turn",
                                   {"history": ["conversation", "history"], "query": question,
                                    "answer": [validate, "answer_without_markers"]},
                                   {"history": "array[object]", "history_text": "string"},
                                   code=dsl_build.remember_code(v.lang))
        self._node(node, "keeps the turn without its markers")
        g.add_edge(validate, remember)
        self.change(f"edge added: {validate} → {remember}")
        save = new_id("save_history", target.llm)
        x, y = g.position_near(remember, dx=DEFAULT_SIZE[0] + 2 * GAP)
        generated = next(n for n in dsl_build.common_nodes(v) if n["id"] == "save_history")
        node = dsl_build.node(save, x, y, {**generated["data"], "items": [
            {**item, "value": [remember, item["value"][1]]} for item in generated["data"]["items"]]})
        self._node(node, "saves the history in the conversation variables")
        g.add_edge(remember, save)
        self.change(f"edge added: {remember} → {save}")

    # -- dependencies ----------------------------------------------------------------------------------------
    def dependencies(self) -> None:
        tools = [n for n in self.graph.nodes
                 if n["data"].get("type") == "tool" and str(n["data"].get("provider_id", "")).startswith("gcite/")]
        if not tools:
            return
        refresh = self.options.identifier is not None  # --package given: an earlier run's nodes name that build
        for node in tools if refresh else ():
            if node["data"].get("plugin_unique_identifier") != self.identifier:
                node["data"]["plugin_unique_identifier"] = self.identifier
                self.change(f"plugin identifier updated: {self.graph.title(node['id'])} now names {self.identifier}")
        dependencies = self.document.get("dependencies")
        if dependencies is None:
            dependencies = self.document["dependencies"] = []
        ours = [d for d in dependencies if str(((d or {}).get("value") or {}).get("plugin_unique_identifier")
                                               or "").startswith(GCITE_PLUGIN)]
        for dependency in ours if refresh else ():
            if dependency["value"]["plugin_unique_identifier"] != self.identifier:
                dependency["value"]["plugin_unique_identifier"] = self.identifier
                self.change(f"dependency updated: the G-Cite plugin package is now {self.identifier}")
        if ours:
            return
        if not dependencies:
            providers = sorted({p for p in (self._provider(n) for n in self.graph.nodes) if p})
            if providers:
                self.notes.append("the file listed no plugin dependencies, so Dify derived them from the graph; "
                                  "with G-Cite listed it no longer does: install " + ", ".join(providers)
                                  + " in Dify yourself if they are not installed")
        dependencies.append({"current_identifier": None, "type": "package",
                             "value": {"plugin_unique_identifier": self.identifier, "version": None}})
        self.change(f"dependency added: {self.identifier.split('@')[0]} (the G-Cite plugin package)")

    @staticmethod
    def _provider(node: dict[str, Any]) -> str | None:
        model = node["data"].get("model") or {}
        provider = str(model.get("provider") or "")
        parts = provider.split("/")
        return "/".join(parts[:2]) if len(parts) == 3 else (f"langgenius/{provider}" if provider else None)


def retrofit(text: str, options: Options | None = None) -> Result:
    """Retrofit one DSL text. Raises RetrofitRefusal (one line) for what it must refuse."""
    options = options or Options()
    document, wrapped = parse(text)
    worker = Retrofitter(document, options)
    try:
        worker.run()
    except RetrofitRefusal:
        raise
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as error:
        # a value of a shape `parse` does not check: one line, never a traceback
        raise RetrofitRefusal(f"cannot rewire safely: a value in the DSL has an unexpected shape "
                              f"({type(error).__name__}: {str(error)[:120]})") from None
    rendered = dsl_build.render(document)
    notes = worker.notes
    if wrapped:
        notes = ["read the export API's {\"data\": …} form; the output is the plain YAML Dify imports", *notes]
    return Result(document, rendered, worker.changes, notes)
