"""A test chatflow with the `cited_answer` tool and a fixed style, made from a shipped plugin chatflow (which has one)
or from an `llm-node` one (`build-dsl --answer llm-node`), which gets one as follows:
Start → role slots → Knowledge Retrieval → role filter → (web search) → merge → cited_answer → Answer
`{{#cite.answer#}}{{#cite.sources#}}`, and the memory node reading `cite.answer_without_markers`.

The LLM node and the validate node are replaced by one `cited_answer` node (`cite`), which gets the LLM node's
model and its persona (the first section of its system prompt) as `instructions`; everything else is as shipped.

Also here: a model answer that tries every way to break the stream (`tricky_answer`, streamed in irregular pieces:
`TrickyModel` for the runner, `tricky_script` for the Dify daemon stand-in), and what a client must never see."""

import html
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from gcite.local.llm import ExtractiveModel, message_text, numbered_chunks
from tests.support.yamltext import safe_load

CITE = "cite"
REPLACED = ("llm", "validate")
ANSWER = "{{#cite.answer#}}{{#cite.sources#}}"


def persona(system_prompt: str) -> str:
    """The first `# ` section of our chatflows' system prompt: the role the builder writes."""
    return system_prompt.split("\n\n# ", 1)[0].strip()


def cited_chatflow(dsl_text: str, style: str = "html") -> str:
    """The chatflow `dsl_text` with a `cited_answer` node whose style is the constant `style`: the shipped plugin
    chatflows already have one (it reads its style from the hidden `citation_style` input: fixed here); an
    `llm-node` chatflow gets one in place of its LLM node and validator."""
    dsl = safe_load(dsl_text)
    graph = dsl["workflow"]["graph"]
    nodes = {n["id"]: n for n in graph["nodes"]}
    if CITE in nodes:
        nodes[CITE]["data"]["tool_parameters"]["style"] = {"type": "constant", "value": style}
        dsl["app"]["name"] = dsl["app"]["name"] + " (cited_answer)"
        return yaml.safe_dump(dsl, allow_unicode=True, sort_keys=False)
    llm, validate = nodes["llm"]["data"], nodes["validate"]["data"]
    model = {
        "provider": llm["model"]["provider"],
        "model": llm["model"]["name"],
        "model_type": "llm",
        "mode": llm["model"].get("mode") or "chat",
        "completion_params": dict(llm["model"]["completion_params"]),
    }
    system = next(m["text"] for m in llm["prompt_template"] if m["role"] == "system")
    merge = nodes["merge"]
    cite: dict[str, Any] = {
        "id": CITE,
        "type": "custom",
        "position": dict(nodes["llm"]["position"]),
        "positionAbsolute": dict(nodes["llm"]["position"]),
        "width": 244,
        "height": 90,
        "selected": False,
        "sourcePosition": "right",
        "targetPosition": "left",
        "data": {
            **{
                k: merge["data"][k]
                for k in (
                    "provider_id",
                    "provider_name",
                    "provider_type",
                    "plugin_unique_identifier",
                    "is_team_authorization",
                )
            },
            "type": "tool",
            "title": "Cited answer",
            "desc": "",
            "selected": False,
            "tool_name": "cited_answer",
            "tool_label": "Cited answer",
            # As Dify's editor writes a tool node today. A model selector must be read with the variable pool,
            # which graphon gives a tool node only when it has a `tool_node_version` (ToolNode._run): Dify moves
            # the selector to tool_parameters as a constant (human_input_adapter._adapt_tool_node_data_for_graph),
            # and without the pool the plugin would get {type, value}. With the pool, form values are inputs.
            "tool_node_version": "2",
            "tool_configurations": {
                "model": model,
                "style": {"type": "constant", "value": style},
                "insufficient_phrases": {
                    "type": "constant",
                    "value": validate["tool_configurations"]["insufficient_phrases"],
                },
            },
            "tool_parameters": {
                "query": {"type": "mixed", "value": "{{#sys.query#}}"},
                "context": {"type": "variable", "value": ["merge", "formatted_chunks"]},
                "chunk_metadata": {"type": "variable", "value": ["merge", "chunk_metadata"]},
                "history": {"type": "mixed", "value": "{{#conversation.history_text#}}"},
                "instructions": {"type": "mixed", "value": persona(system)},
            },
        },
    }
    graph["nodes"] = [n for n in graph["nodes"] if n["id"] not in REPLACED] + [cite]
    nodes["answer"]["data"]["answer"] = ANSWER
    remember = nodes["remember"]["data"]
    for variable in remember["variables"]:
        if variable["variable"] == "answer":
            variable["value_selector"] = [CITE, "answer_without_markers"]
    edges = [e for e in graph["edges"] if e["source"] not in REPLACED and e["target"] not in REPLACED]
    for source, target in (("merge", CITE), (CITE, "answer"), (CITE, "remember")):
        edges.append(
            {
                "id": f"{source}-source-{target}-target",
                "source": source,
                "target": target,
                "sourceHandle": "source",
                "targetHandle": "target",
                "type": "custom",
                "zIndex": 0,
                "data": {
                    "sourceType": nodes[source]["data"]["type"] if source in nodes else "tool",
                    "targetType": nodes[target]["data"]["type"] if target in nodes else "tool",
                    "isInIteration": False,
                    "isInLoop": False,
                },
            }
        )
    graph["edges"] = edges
    dsl["app"]["name"] = dsl["app"]["name"] + " (cited_answer)"
    return yaml.safe_dump(dsl, allow_unicode=True, sort_keys=False)


# --- a model answer that tries every way to break the stream --------------------------------------------------------

UNKNOWN_IDS = ("901", "902")  # ids no chunk list holds
SPLITS = (1, 3, 2, 5, 4, 2, 1, 6)  # irregular delta sizes: markers split across deltas at every offset


def first_sentence(text: str) -> str:
    sentence = re.split(r"(?<=[。！？!?；;])|(?<=\.)\s", text.strip(), maxsplit=1)[0].strip()
    return sentence.rstrip("。.!！?？;；") or text.strip()


def tricky_answer(chunks: list[tuple[str, str]], question: str) -> tuple[str, list[str]]:
    """An answer over the prompt's numbered chunks ((id, text) in context order) that cites out of order (the last
    chunk first), repeats ids, groups them, writes a full-width marker, and cites ids no chunk has; returns it with
    the valid ids in order of first citation."""
    zh = re.search(r"[\u4e00-\u9fff]", question) is not None
    end = "。" if zh else ". "
    if not chunks:
        return ("根据现有资料无法确定。" if zh else "The available sources do not answer this question."), []
    a, b = chunks[-1], chunks[0]
    c = chunks[1] if len(chunks) > 2 else chunks[0]
    parts = [
        f"{first_sentence(a[1])}[C:{a[0]}][C:{b[0]}]{end}",
        f"{first_sentence(b[1])} [C:{b[0]}]【C：{c[0]}】{end}",
        f"{first_sentence(a[1])}[C:{a[0]},C:{UNKNOWN_IDS[0]}]{end}",
        f"{'这句只引用了不存在的片段' if zh else 'This sentence cites only a missing chunk'}[C:{UNKNOWN_IDS[1]}]{end}",
        f"{first_sentence(c[1])}[C:{c[0]}]{end}",
    ]
    return "".join(parts).strip(), list(dict.fromkeys([a[0], b[0], c[0]]))


def tricky_pieces(text: str) -> list[str]:
    pieces, at, n = [], 0, 0
    while at < len(text):
        size = SPLITS[n % len(SPLITS)]
        pieces.append(text[at : at + size])
        at, n = at + size, n + 1
    return pieces


# --- what a client receives -----------------------------------------------------------------------------------------

SUP = re.compile(r'<sup(?: title="([^"]*)")?>\[(\d+)\]\(#gcite-(\d+)\)</sup>')
HALF_TAG = re.compile(r"<(?:s(?:u(?:p)?)?)?$|</(?:s(?:u(?:p)?)?)?$")
RAW_MARKER = re.compile(r"[\[【［]\s*[Cc]\s*[:：]")
SOURCE_ITEM = re.compile(r'^(\d+)\. <span id="gcite-(\d+)"></span>(.*)$', re.MULTILINE)


def stream_problems(messages: list[str]) -> list[str]:
    """What is wrong in a stream of `message` answers: a raw marker, half a tag, a `<sup>` split across events."""
    problems = []
    for n, text in enumerate(messages):
        if RAW_MARKER.search(text):
            problems.append(f"message {n} holds a marker: {text!r}")
        if text.count("<sup") != text.count("</sup>") or HALF_TAG.search(text):
            problems.append(f"message {n} holds half a tag: {text!r}")
    return problems


def displayed(answer: str) -> tuple[list[int], dict[int, str], dict[int, str]]:
    """(superscript numbers in order, number -> hover title, number -> source item text) of a cited answer."""
    numbers, titles = [], {}
    for title, number, anchor in SUP.findall(answer):
        assert number == anchor, (number, anchor)
        numbers.append(int(number))
        titles[int(number)] = html.unescape(title)
    items = {}
    for index, anchor, line in SOURCE_ITEM.findall(answer):
        assert index == anchor, (index, anchor)
        items[int(index)] = line
    return numbers, titles, items


def first_appearance(numbers: list[int]) -> list[int]:
    return list(dict.fromkeys(numbers))


def tricky_script(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The Dify daemon stand-in's answer for a model call ({role, content} dicts): the tricky answer, in pieces."""
    system = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
    question = str(next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "") or "")
    return tricky_pieces(tricky_answer(numbered_chunks(system), question)[0])


class TrickyModel(ExtractiveModel):
    """The runner's LLM giving the tricky answer in irregular pieces, `pause` seconds apart."""

    def __init__(self, pause: float = 0.0) -> None:
        super().__init__()
        self.pause = pause
        self.cited: list[list[str]] = []  # the valid ids each answer cited, in order

    def invoke_llm(self, *, prompt_messages, model_parameters, tools=None, stop=None, stream=True):
        self.prompts.append(list(prompt_messages))
        system = "\n".join(message_text(m) for m in prompt_messages if m.role.value == "system")
        text, cited = tricky_answer(numbered_chunks(system), message_text(prompt_messages[-1]))
        self.cited.append(cited)

        def paced():
            for piece in tricky_pieces(text):
                time.sleep(self.pause)
                yield piece

        return self._chunks(prompt_messages, paced())
