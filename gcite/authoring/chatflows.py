"""Generates the chatflow DSL files from one description, with Code nodes bundled from the `citations` package.

`python -m gcite build-dsl` writes, in Chinese (the default) and in English:
- dsl/gcite_chatflow.yml, dsl/gcite_chatflow.en.yml: our plugin's tools, web search by the plugin's own
  `web_search` tool (so one plugin serves the whole flow);
- dsl/gcite_chatflow_code.yml, dsl/gcite_chatflow_code.en.yml: Code nodes only, web search by an HTTP Request node
  to Bocha.
A language variant changes the prompt, the node titles and labels, and the refusal phrase (which the validate node
is told to recognise). Options (`Variant`): the number of role slots of the pre-filter, the assistant's persona, and
for the plugin chatflow the search tool (`search="tavily"`: the official Tavily plugin's `tavily_search`, whose
shape the merge node keeps supporting; `build-dsl --search tavily`), and what the Answer shows (`answer`, see
citations/answer_layout.py): the plugin chatflows' default `cited` (one `cited_answer` tool node writes the answer and
streams clean citations), `llm-node` (the LLM node streams raw markers, the validate node lists the sources) — the
Code-node chatflows' default, a Code node cannot call a model — and `clean` (wait for the validator's clean numbers).
A test fails when the committed files differ from what this module generates with the default options.
"""

import re
from pathlib import Path
from typing import Any

import yaml

from citations.answer_layout import (
    CITED_MEMORY,
    STYLE_INPUT,
    cited_template,
    clean_template,
    source_list,  # the Answer template, named once
    style_reference,
)  # what an Answer shows, named once
from gcite import ROOT
from gcite.authoring.dsl_nodes import (
    FILTER_OUTPUTS,
    MERGE_OUTPUTS,
    VALIDATE_OUTPUTS,
    cited_answer_tool,
    code_node,
    gcite_tool,
    mixed,
    node,
    prefilter_code,
    remember_code,
    variable,
    variable_id,
)
from gcite.authoring.prefilter import templated_conditions
from gcite.authoring.variants import (
    ACL_FIELD,
    DSL_VERSION,
    LANGS,
    MODEL,
    OPENAI,
    PLACEHOLDER_DATASET,
    PLACEHOLDER_SEARCH_KEY,
    ROLE_SLOTS,
    SEARCH_TIMEOUT_SECONDS,
    SEARCH_TOP_K,
    SEARCHES,
    TAVILY,
    Variant,
)
from gcite.release.package import package_entries, unique_identifier

DSL_DIR = ROOT / "dsl"
PLUGIN_DSL = DSL_DIR / "gcite_chatflow.yml"
CODE_DSL = DSL_DIR / "gcite_chatflow_code.yml"


def plugin_identifier(root: Path = ROOT) -> str:
    """The unique identifier `make package` would print for the plugin as it is now."""
    manifest = yaml.safe_load((root / "manifest.yaml").read_text(encoding="utf-8"))
    entries = {name: path.read_bytes() for name, path in package_entries(root).items()}
    return unique_identifier(manifest, entries)


def start_variables(v: Variant) -> list[dict[str, Any]]:
    """The Start node's inputs, all hidden: the user's roles, and for the cited layout the citation style."""
    inputs = [("user_roles", "user_roles", 256)] + (
        [(STYLE_INPUT, "citation_style", 16)] if v.layout == "cited" else []
    )
    return [
        {
            "variable": name,
            "label": v.text[label],
            "type": "text-input",
            "required": False,
            "hide": True,
            "max_length": length,
            "options": [],
        }
        for name, label, length in inputs
    ]


def answer_template(v: Variant) -> str:
    if v.layout == "cited":
        return cited_template("cite")
    if v.layout == "clean":
        return clean_template("validate")
    return "{{#llm.text#}}" + source_list("validate")


def cite_node(v: Variant, identifier: str) -> dict[str, Any]:
    """The `cited_answer` tool node: the LLM node's model and the builder's instructions; the style from the
    hidden Start input (citations/answer_layout.py)."""
    return cited_answer_tool(
        "cite",
        1530,
        300,
        v.text["cite"],
        identifier,
        {
            "query": mixed("{{#sys.query#}}"),
            "context": variable("merge", "formatted_chunks"),
            "chunk_metadata": variable("merge", "chunk_metadata"),
            "history": mixed("{{#conversation.history_text#}}"),
            "instructions": mixed(v.instructions()),
            "style": mixed(style_reference()),
        },
        MODEL,
        v.recognised_refusals,
    )


def common_nodes(v: Variant) -> list[dict[str, Any]]:
    t = v.text
    slots = [f"{{{{#acl_roles.role_{n}#}}}}" for n in range(1, v.slots + 1)]
    memory = ["cite", CITED_MEMORY] if v.layout == "cited" else ["validate", "answer_without_markers"]
    return [
        node("start", 30, 300, {"type": "start", "title": t["start"], "variables": start_variables(v)}),
        code_node(
            "acl_roles",
            330,
            150,
            t["acl_roles"],
            "acl_prefilter",
            {"user_roles": ["start", "user_roles"]},
            {**{f"role_{n}": "string" for n in range(1, v.slots + 1)}, "role_count": "number"},
            code=prefilter_code(v.slots),
        ),
        node(
            "kr",
            630,
            150,
            {
                "type": "knowledge-retrieval",
                "title": t["kr"],
                "query_variable_selector": ["sys", "query"],
                "dataset_ids": [PLACEHOLDER_DATASET],
                "retrieval_mode": "multiple",
                "multiple_retrieval_config": {
                    "top_k": 5,
                    "score_threshold": None,
                    "reranking_enable": False,
                    "reranking_mode": "weighted_score",
                    "weights": {
                        "weight_type": "customized",
                        "vector_setting": {
                            "vector_weight": 0.7,
                            "embedding_provider_name": "langgenius/openai/openai",
                            "embedding_model_name": "text-embedding-3-small",
                        },
                        "keyword_setting": {"keyword_weight": 0.3},
                    },
                },
                "metadata_filtering_mode": "manual",
                "metadata_model_config": {**MODEL, "completion_params": {}},
                "metadata_filtering_conditions": templated_conditions(ACL_FIELD, slots),
            },
        ),
        *(
            []
            if v.layout == "cited"
            else [
                node(
                    "llm",
                    1530,
                    300,
                    {
                        "type": "llm",
                        "title": t["llm"],
                        "model": MODEL,
                        "prompt_template": [
                            {
                                "id": "gcite-system",
                                "role": "system",
                                "edition_type": "basic",
                                "text": v.system_prompt(),
                            },
                            {"id": "gcite-user", "role": "user", "edition_type": "basic", "text": "{{#sys.query#}}"},
                        ],
                        "context": {"enabled": True, "variable_selector": ["merge", "formatted_chunks"]},
                        "vision": {"enabled": False},
                    },
                )
            ]
        ),
        node(
            "answer", 2130, 200, {"type": "answer", "title": t["answer"], "variables": [], "answer": answer_template(v)}
        ),
        code_node(
            "remember",
            2130,
            420,
            t["remember"],
            "remember_turn",
            {"history": ["conversation", "history"], "query": ["sys", "query"], "answer": memory},
            {"history": "array[object]", "history_text": "string"},
            code=remember_code(v.lang),
        ),
        node(
            "save_history",
            2430,
            420,
            {
                "type": "assigner",
                "title": t["save_history"],
                "version": "2",
                "items": [
                    {
                        "variable_selector": ["conversation", "history"],
                        "input_type": "variable",
                        "operation": "over-write",
                        "value": ["remember", "history"],
                    },
                    {
                        "variable_selector": ["conversation", "history_text"],
                        "input_type": "variable",
                        "operation": "over-write",
                        "value": ["remember", "history_text"],
                    },
                ],
            },
        ),
    ]


def web_search_node(v: Variant, identifier: str) -> dict[str, Any]:
    """The plugin chatflow's search: our web_search tool, or the official Tavily plugin's tavily_search. Either
    fails over to an empty result (error strategy default-value), so the answer falls back to the knowledge base."""
    t = v.text
    default = {
        "error_strategy": "default-value",
        "default_value": [
            {"key": "json", "type": "array[object]", "value": []},
            {"key": "text", "type": "string", "value": ""},
        ],
    }
    if v.search == "tavily":
        return node(
            "web",
            630,
            450,
            {
                "type": "tool",
                "title": t["web_tavily"],
                "provider_id": "langgenius/tavily/tavily",
                "provider_name": "langgenius/tavily/tavily",
                "provider_type": "builtin",
                "plugin_unique_identifier": TAVILY,
                "tool_name": "tavily_search",
                "tool_label": t["web_tavily"],
                "is_team_authorization": True,
                "tool_configurations": {
                    "max_results": SEARCH_TOP_K,
                    "search_depth": "basic",
                    "topic": "general",
                    "include_answer": False,
                    "include_images": False,
                    "include_raw_content": False,
                },
                "tool_parameters": {"query": mixed("{{#sys.query#}}")},
                **default,
            },
        )
    web = gcite_tool(
        "web",
        630,
        450,
        t["web_search"],
        "web_search",
        identifier,
        {"query": mixed("{{#sys.query#}}"), "freshness": {"type": "constant", "value": "any"}},
        {"provider": "auto", "top_k": SEARCH_TOP_K, "timeout_seconds": SEARCH_TIMEOUT_SECONDS},
    )
    web["data"].update(default)
    return web


def merge_inputs(v: Variant) -> dict[str, Any]:
    """The merge tool's inputs. The official Tavily tool reports a failed search only as its `text` (with an empty
    `json`), so that variant also gives the merge node `web_text`, which `skipped` then reports as the provider's
    message. Our web_search fails the node instead (its default `text` is empty) and its text on success is only
    a summary, so it is not wired there."""
    inputs = {"rag_chunks": variable("acl_filter", "chunks"), "web_chunks": variable("web", "json")}
    if v.search == "tavily":
        inputs["web_text"] = mixed("{{#web.text#}}")
    return inputs


def plugin_nodes(v: Variant, identifier: str) -> list[dict[str, Any]]:
    t = v.text
    return [
        gcite_tool(
            "acl_filter",
            930,
            150,
            t["acl_filter"],
            "filter_chunks",
            identifier,
            {"rag_chunks": variable("kr", "result"), "user_roles": mixed("{{#start.user_roles#}}")},
            {"acl_field": ACL_FIELD, "condition": "", "case_sensitive": True, "missing_acl": "visible"},
        ),
        web_search_node(v, identifier),
        gcite_tool(
            "merge",
            1230,
            300,
            t["merge"],
            "merge_chunks",
            identifier,
            merge_inputs(v),
            {"max_web_results": SEARCH_TOP_K, "max_chunks": 30},
        ),
        cite_node(v, identifier)
        if v.layout == "cited"
        else gcite_tool(
            "validate",
            1830,
            300,
            t["validate"],
            "validate_citations",
            identifier,
            {
                "answer": mixed("{{#llm.text#}}"),
                "chunk_metadata": variable("merge", "chunk_metadata"),
                "question": mixed("{{#sys.query#}}"),
            },
            {"insufficient_phrases": v.recognised_refusals},
        ),
    ]


def code_nodes(v: Variant) -> list[dict[str, Any]]:
    t = v.text
    return [
        code_node(
            "acl_filter",
            930,
            150,
            t["acl_filter"],
            "filter_chunks",
            {"rag_chunks": ["kr", "result"], "user_roles": ["start", "user_roles"]},
            FILTER_OUTPUTS,
        ),
        code_node(
            "web_body", 330, 450, t["web_body"], "web_search_request", {"query": ["sys", "query"]}, {"body": "string"}
        ),
        node(
            "web",
            630,
            450,
            {
                "type": "http-request",
                "title": t["web_bocha"],
                "method": "post",
                "url": "https://api.bochaai.com/v1/web-search",
                "authorization": {
                    "type": "api-key",
                    "config": {"type": "bearer", "api_key": PLACEHOLDER_SEARCH_KEY, "header": "Authorization"},
                },
                "headers": "Content-Type:application/json",
                "params": "",
                "body": {"type": "json", "data": [{"key": "", "type": "text", "value": "{{#web_body.body#}}"}]},
                "timeout": {"connect": 5, "read": 15, "write": 15},
                "ssl_verify": True,
                "retry_config": {"retry_enabled": False, "max_retries": 1, "retry_interval": 100},
                "error_strategy": "default-value",
                "default_value": [
                    {"key": "body", "type": "string", "value": ""},
                    {"key": "status_code", "type": "number", "value": 0},
                    {"key": "headers", "type": "object", "value": {}},
                ],
            },
        ),
        code_node(
            "merge",
            1230,
            300,
            t["merge"],
            "merge_chunks",
            {"rag_chunks": ["acl_filter", "chunks"], "web_chunks": ["web", "body"]},
            MERGE_OUTPUTS,
        ),
        # A Code node takes no constant inputs: the refusal phrases come from a conversation variable (a setting
        # an operator edits in Dify's conversation-variable panel), the counterpart of the plugin tool's setting.
        code_node(
            "validate",
            1830,
            300,
            t["validate"],
            "validate_citations",
            {
                "answer": ["llm", "text"],
                "chunk_metadata": ["merge", "chunk_metadata"],
                "insufficient_phrases": ["conversation", "insufficient_phrases"],
                "question": ["sys", "query"],
            },
            VALIDATE_OUTPUTS,
        ),
    ]


EDGES = [
    ("start", "acl_roles"),
    ("acl_roles", "kr"),
    ("kr", "acl_filter"),
    ("acl_filter", "merge"),
    ("web", "merge"),
    ("merge", "llm"),
    ("llm", "validate"),
    ("validate", "answer"),
    ("validate", "remember"),
    ("remember", "save_history"),
]
CITED_EDGES = [
    ("start", "acl_roles"),
    ("acl_roles", "kr"),
    ("kr", "acl_filter"),
    ("acl_filter", "merge"),
    ("web", "merge"),
    ("merge", "cite"),
    ("cite", "answer"),
    ("cite", "remember"),
    ("remember", "save_history"),
]


def edges(nodes: list[dict[str, Any]], web_entry: str, layout: str = "llm-node") -> list[dict[str, Any]]:
    type_of = {n["id"]: n["data"]["type"] for n in nodes}
    pairs = (CITED_EDGES if layout == "cited" else EDGES) + (
        [("start", "web_body"), ("web_body", "web")] if web_entry == "web_body" else [("start", "web")]
    )
    pairs += [] if layout == "cited" else [("llm", "answer")]
    return [
        {
            "id": f"{a}-source-{b}-target",
            "source": a,
            "sourceHandle": "source",
            "target": b,
            "targetHandle": "target",
            "type": "custom",
            "zIndex": 0,
            "data": {"sourceType": type_of[a], "targetType": type_of[b], "isInIteration": False, "isInLoop": False},
        }
        for a, b in pairs
    ]


def conversation_variables(v: Variant) -> list[dict[str, Any]]:
    t = v.text
    variables = [
        {
            "id": variable_id("conversation", "history"),
            "name": "history",
            "value_type": "array[object]",
            "value": [],
            "description": t["history"],
        },
        {
            "id": variable_id("conversation", "history_text"),
            "name": "history_text",
            "value_type": "string",
            "value": "",
            "description": t["history_text"],
        },
    ]
    if not v.plugin:
        variables.append(
            {
                "id": variable_id("conversation", "insufficient_phrases"),
                "name": "insufficient_phrases",
                "value_type": "string",
                "value": v.recognised_refusals,
                "description": t["insufficient_phrases"],
            }
        )
    return variables


def chatflow(v: Variant, identifier: str) -> dict[str, Any]:
    nodes = common_nodes(v) + (plugin_nodes(v, identifier) if v.plugin else code_nodes(v))
    marketplace = ([TAVILY] if v.search == "tavily" else []) + [OPENAI]
    dependencies = (
        [
            {
                "current_identifier": None,
                "type": "package",
                "value": {"plugin_unique_identifier": identifier, "version": None},
            },
            *(
                {
                    "current_identifier": None,
                    "type": "marketplace",
                    "value": {"marketplace_plugin_unique_identifier": plugin, "version": None},
                }
                for plugin in marketplace
            ),
        ]
        if v.plugin
        else []
    )
    return {
        "app": {
            "name": v.text["app_plugin" if v.plugin else "app_code"],
            "mode": "advanced-chat",
            "icon": "📚",
            "icon_type": "emoji",
            "icon_background": "#E4FBCC",
            "description": v.text["description"],
            "use_icon_as_answer_icon": False,
        },
        "kind": "app",
        "version": DSL_VERSION,
        "dependencies": dependencies,
        "workflow": {
            "conversation_variables": conversation_variables(v),
            "environment_variables": [],
            "features": {
                "file_upload": {"enabled": False},
                "opening_statement": "",
                "retriever_resource": {"enabled": False},
                "sensitive_word_avoidance": {"enabled": False},
                "speech_to_text": {"enabled": False},
                "suggested_questions": [],
                "suggested_questions_after_answer": {"enabled": False},
                "text_to_speech": {"enabled": False},
            },
            "graph": {
                "nodes": nodes,
                "edges": edges(nodes, "start" if v.plugin else "web_body", v.layout),
                "viewport": {"x": 0, "y": 0, "zoom": 0.7},
            },
        },
    }


def chatflow_text(v: Variant, identifier: str | None = None) -> str:
    """One variant's DSL text (e.g. `chatflow_text(Variant(search="tavily"))` for the official Tavily search)."""
    return render(chatflow(v, identifier or plugin_identifier()))


class _Dumper(yaml.SafeDumper):
    pass


class _LibyamlDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # PyYAML's emitter in C, about 10 times faster
    astral: dict[str, str] = {}  # an astral character -> its stand-in (set per document by `render`)


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _text_libyaml(dumper: _LibyamlDumper, value: str) -> yaml.Node:
    if dumper.astral and not value.isascii():
        for char in ASTRAL.findall(value):
            value = value.replace(char, dumper.astral[char])
    return _text(dumper, value)


_Dumper.add_representer(str, _text)
_LibyamlDumper.add_representer(str, _text_libyaml)

# What libyaml's emitter writes exactly as PyYAML's own does (tests/authoring/test_render.py): text without a tab, a
# line break other than \n or a BOM, and multi-line text PyYAML writes as a block, not double-quoted (the two break a
# long double-quoted line differently). An astral character too, but libyaml escapes it (an emoji as "\U0001F4DA")
# where PyYAML writes it as it is: in a line of text, `render` hands libyaml a private-use character in its place
# (both write those as they are and count them as one column), then puts it back.
LIBYAML_ALIKE = re.compile("[\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010fffe]*")
ASTRAL = re.compile("[\U00010000-\U0010fffe]")
STAND_INS = re.compile("[\ue000-\uefff]")  # a private-use character, the stand-in of an astral one


def astral_stand_ins(document: Any) -> dict[str, str] | None:
    """{astral character: stand-in} for every astral character in `document`'s strings (keys too), or None when
    libyaml would write some string differently from PyYAML (or the document holds a stand-in already, or a list or
    mapping twice: PyYAML writes it once with an anchor, and a document holding itself never ends this walk)."""
    found: set[str] = set()
    stand_in_held = False
    seen: set[int] = set()
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if not LIBYAML_ALIKE.fullmatch(value) or value == "\n" or value.endswith("\n\n"):
                return None  # a block kept open ("|+"): libyaml ends the whole document with "..." then
            if "\n" in value and (" \n" in value or value.endswith(" ")):
                return None  # PyYAML writes it double-quoted, and breaks a long line of it otherwise than libyaml
            if not value.isascii():
                astral = ASTRAL.findall(value)
                if astral and "\n" in value:  # in case PyYAML writes it double-quoted: \U escapes, as libyaml
                    return None
                found.update(astral)
                stand_in_held = stand_in_held or STAND_INS.search(value) is not None
        elif isinstance(value, (dict, list)):
            if id(value) in seen:
                return None
            seen.add(id(value))
            if isinstance(value, list):
                stack.extend(value)
                continue
            for key in value:  # a key both write simply: "? key" for an empty or long one (PyYAML counts a long
                # one's characters, libyaml its UTF-8 bytes)
                if not isinstance(key, str) or not 0 < len(key) <= (100 if key.isascii() else 31) or "\n" in key:
                    return None
            stack.extend(value.keys())
            stack.extend(value.values())
    if not found:
        return {}
    if stand_in_held or len(found) > 0x1000:
        return None
    return {char: chr(0xE000 + n) for n, char in enumerate(sorted(found))}


def render(document: Any) -> str:
    """A DSL document as our chatflows write it (PyYAML, multi-line text as a block), through libyaml's emitter
    where that writes the same text."""
    # a lone scalar: PyYAML ends the document with "...", libyaml does not
    astral = astral_stand_ins(document) if isinstance(document, (dict, list)) else None
    if astral is None:
        return yaml.dump(document, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=120)
    dumper = type("_LibyamlDumper", (_LibyamlDumper,), {"astral": astral})
    text = yaml.dump(document, Dumper=dumper, allow_unicode=True, sort_keys=False, width=120)
    for char, stand_in in astral.items():
        text = text.replace(stand_in, char)
    return text


def variants(
    langs: tuple[str, ...] = LANGS,
    slots: int = ROLE_SLOTS,
    persona: str | None = None,
    search: str = SEARCHES[0],
    answer: str | None = None,
) -> list[Variant]:
    """The plugin and the Code-node chatflow in each language (`search` applies to the plugin one; `answer` to both,
    except `cited`, which only the plugin one can do: the Code-node one then keeps its default)."""
    return [
        Variant(
            plugin,
            lang,
            slots,
            persona,
            search if plugin else SEARCHES[0],
            answer if plugin or answer != "cited" else None,
        )
        for lang in langs
        for plugin in (True, False)
    ]


def generated(
    identifier: str | None = None,
    out_dir: Path = DSL_DIR,
    langs: tuple[str, ...] = LANGS,
    slots: int = ROLE_SLOTS,
    persona: str | None = None,
    search: str = SEARCHES[0],
    answer: str | None = None,
) -> dict[Path, str]:
    """{path: text} of every file; with no arguments, exactly what `make dsl` writes into dsl/."""
    chosen = variants(langs, slots, persona, search, answer)  # validates the options before the (slower) identifier
    identifier = identifier or plugin_identifier()
    return {out_dir / v.file_name: render(chatflow(v, identifier)) for v in chosen}


def write(
    identifier: str | None = None,
    out_dir: Path = DSL_DIR,
    langs: tuple[str, ...] = LANGS,
    slots: int = ROLE_SLOTS,
    persona: str | None = None,
    search: str = SEARCHES[0],
    answer: str | None = None,
) -> list[Path]:
    files = generated(identifier, out_dir, langs, slots, persona, search, answer)
    out_dir.mkdir(parents=True, exist_ok=True)
    changed = []
    for path, text in files.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
