"""Differential check: the runner's Service API stream against Dify's, event by event, for the same chatflow,
questions, roles and scripted LLM (the runner through its `--llm-base-url` client, `OpenAICompatibleModel`;
Dify through the stand-in daemon; both answer with `scripted_llm.answer`).

Normalised (`differential.normalise`): ids, timestamps, elapsed times and token counts; parallel branches are
compared node by node (`differential.canonical`). Every other difference must be listed in `KNOWN` below, the ONE
place, each with the reason it cannot vanish; a new one fails with both events printed.
"""

import re
import time

import pytest

from gcite.local.llm import OpenAICompatibleModel
from gcite.local.runner import Services, run_chatflow
from gcite.local.service_api import Conversation
from tests.dify.console import chat
from tests.dify.differential import Difference, Known, stream_differences, unexplained
from tests.dify.harness import DSL_FILES, ROOT, stored_metadata
from tests.dify.scripted_llm import OpenAICompatibleServer

TURNS = (("访客来访需要怎么登记？", "前台"), ("会议室怎么预约？", "前台"))
KB_ITEM = r"\.data\.(inputs\.rag_chunks|outputs\.result|outputs\.chunks)\[\d+\]"


def at(path: str, *, nodes: tuple[str, ...] | None = None, event: str | None = None):
    pattern = re.compile(path)

    def matches(d: Difference) -> bool:
        return (
            bool(pattern.fullmatch(d.path))
            and (nodes is None or d.node_id in nodes)
            and (event is None or d.event == event)
        )

    return matches


KNOWN = [
    # --- cannot vanish: the two runs do not share these facts ---
    Known(
        "retrieval score",
        at(rf"({KB_ITEM}\.metadata|\.data\.(inputs|outputs)\.chunk_metadata\[\d+\])\.score"),
        "Dify's economy index scores by jieba keywords; the runner's local retrieval by character bigrams over "
        "the same documents (same hits for these questions, different numbers)",
    ),
    Known(
        "segment hit count",
        at(rf"{KB_ITEM}\.metadata\.segment_hit_count"),
        "Dify counts a segment's retrievals across every run of the knowledge base; the runner's is per run",
    ),
    Known(
        "index node hash",
        at(rf"{KB_ITEM}\.metadata\.segment_index_node_hash"),
        "the hash of Dify's index node for the segment; the runner's local retrieval has no index",
    ),
    Known(
        "tool icon URL",
        at(r"\.data\.extras\.icon", event="node_started"),
        "Dify prefixes its own CONSOLE_API_URL (the test's port); the runner knows no console URL",
    ),
    Known(
        "LLM provider",
        at(r"\.data\.(inputs|process_data)\.model_provider", nodes=("llm",)),
        "the runner's LLM is its OpenAI-compatible client (--llm-base-url), Dify's the DSL's provider",
    ),
    Known(
        "HTTP request to the search provider",
        at(
            r"\.data\.(outputs\.(body|headers(\..*)?)|process_data\.request|inputs\.web_chunks)", nodes=("web", "merge")
        ),
        "Code variant: Dify sends a real HTTP request to the local search server (its port, Date, log_id); the "
        "runner's HTTP Request node is answered in-process by the same server's answer()",
    ),
    Known(
        "a versioned tool node's form values among its inputs",
        at(r"\.data\.inputs\.(model|insufficient_phrases)", nodes=("cite",), event="node_finished"),
        "Dify 1.16 moves the {type, value} form values of a tool node with tool_node_version into its "
        "tool_parameters before graphon sees it (core/workflow/human_input_adapter."
        "_adapt_tool_node_data_for_graph), so they are logged as inputs; the runner gives graphon the DSL as it "
        "is, where they stay configurations (the tool gets the same values either way)",
    ),
]


@pytest.fixture(scope="module")
def scripted_openai():
    server = OpenAICompatibleServer()
    yield server
    server.close()


def knowledge_as_in_dify(dify) -> dict:
    """The sample knowledge base with each document's metadata as Dify holds it now (acl fix rewrote some)."""
    stored = stored_metadata(dify)
    return {
        **dify.kb,
        "documents": [
            {**d, "doc_metadata": {**d["doc_metadata"], **stored[d["document_id"]]}} for d in dify.kb["documents"]
        ],
    }


def runner_turns(dify, dsl_text: str, scripted_openai) -> list[list[dict]]:
    services = Services(
        llm=OpenAICompatibleModel(scripted_openai.base_url, "gpt-4o-mini"),
        knowledge_base=knowledge_as_in_dify(dify),
        tool_credentials={"gcite/gcite:": dify.search.credentials(("bocha",))},
    )
    conversation = Conversation(user="differential")
    try:
        return [
            list(run_chatflow(dsl_text, query, {"user_roles": roles}, services, conversation)) for query, roles in TURNS
        ]
    finally:
        services.close()


def dify_turns(dify, dsl: str) -> list[list[dict]]:
    out, conversation = [], ""
    for query, roles in TURNS:
        if conversation:
            # Dify counts sys.dialogue_count from the conversation's messages ordered by created_at (whole
            # seconds): a turn started in the same second as the one before may count itself too
            time.sleep(1.1)
        status, events = chat(
            dify.base_url,
            dify.apps[dsl].key,
            query,
            {"user_roles": roles},
            user="differential",
            conversation_id=conversation,
        )
        assert status == 200, events
        conversation = next(e["conversation_id"] for e in events if e.get("conversation_id"))
        out.append(events)
    return out


@pytest.mark.parametrize("dsl", DSL_FILES)
def test_the_runner_streams_what_dify_streams(dify, dsl, scripted_openai):
    ours = runner_turns(dify, (ROOT / "dsl" / dsl).read_text(encoding="utf-8"), scripted_openai)
    theirs = dify_turns(dify, dsl)
    new = []
    for number, (a, b) in enumerate(zip(theirs, ours), start=1):
        new += [f"turn {number}: {d}" for d in unexplained(stream_differences(a, b), KNOWN)]
    assert not new, "differences between Dify and the runner not in KNOWN:\n" + "\n".join(new[:40])


# --- the runner fails where Dify fails, in Dify's way ------------------------------------------------------------

FRAME = re.compile(r"^  .*$\n?", re.MULTILINE)


def without_frames(events: list[dict]) -> list[dict]:
    """A traceback's frames must differ: the stand-in sandbox runs the program from a file (frames with its path and
    source lines), dify-sandbox exec()s it in its own prescript, the runner reads it from stdin. What the code
    raised (the last lines) is compared; the frames become one marker."""

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()}
        if isinstance(value, list):
            return [strip(v) for v in value]
        if isinstance(value, str) and value.startswith("Traceback (most recent call last):\n"):
            head, _, rest = value.partition("\n")
            return f"{head}\n<frames>\n{FRAME.sub('', rest)}"
        return value

    return strip(events)


def one_turn_both(dify, dsl: str, roles: str, scripted_openai) -> tuple[int, list[dict], list[dict]]:
    status, theirs = chat(dify.base_url, dify.apps[dsl].key, TURNS[0][0], {"user_roles": roles}, user="differential")
    services = Services(
        llm=OpenAICompatibleModel(scripted_openai.base_url, "gpt-4o-mini"),
        knowledge_base=knowledge_as_in_dify(dify),
        tool_credentials={"gcite/gcite:": dify.search.credentials(("bocha",))},
    )
    try:
        ours = list(
            run_chatflow(
                (ROOT / "dsl" / dsl).read_text(encoding="utf-8"),
                TURNS[0][0],
                {"user_roles": roles},
                services,
                Conversation(user="differential"),
            )
        )
    finally:
        services.close()
    return status, theirs, ours


def test_a_start_input_over_its_max_length_streams_as_dify_streams_it(dify, scripted_openai):
    status, theirs, ours = one_turn_both(dify, "gcite_chatflow.yml", "x" * 300, scripted_openai)
    assert status == 200
    for events in (theirs, ours):
        assert [e["event"] for e in events] == ["ping", "workflow_started", "workflow_finished"], events
        assert events[-1]["data"]["error"] == "user_roles in input form must be less than 256 characters"
    new = unexplained(stream_differences(theirs, ours), KNOWN)
    assert not new, "\n".join(map(str, new))


FAILED_RUN_STEPS = Known(
    "steps of a failed run",
    at(r"\.data\.total_steps", event="workflow_finished"),
    "when a node fails, a parallel branch already running finishes (and counts) or not "
    "depending on its timing, in Dify as in the runner",
)


@pytest.mark.parametrize("dsl", ["gcite_chatflow.yml", "gcite_chatflow_code.yml"])
def test_a_code_node_error_fails_the_run_as_in_dify(dify, dsl, scripted_openai):
    status, theirs, ours = one_turn_both(dify, dsl, 'a"b', scripted_openai)  # a role the pre-filter refuses
    assert status == 200
    for events in (theirs, ours):
        names = [e["event"] for e in events]
        assert names[-1] == "workflow_finished" and events[-1]["data"]["status"] == "failed", names
        assert "error" not in names and "message_end" not in names, names
        failed = next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["status"] == "failed")
        assert failed["node_id"] == "acl_roles" and failed["error"].startswith("Traceback (most recent call last)")
        assert events[-1]["data"]["error"] == failed["error"]  # the sandbox's whole stderr, in both places

    def settled(events: list[dict]) -> list[dict]:  # the nodes whose events do not depend on branch timing
        return [
            e
            for e in events
            if e["event"] not in ("node_started", "node_finished") or e["data"]["node_id"] in ("start", "acl_roles")
        ]

    found = stream_differences(without_frames(settled(theirs)), without_frames(settled(ours)))
    new = unexplained(found, [*KNOWN, FAILED_RUN_STEPS])
    assert not new, "\n".join(map(str, new))
