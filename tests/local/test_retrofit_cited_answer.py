"""A builder's chatflow after `gcite retrofit --answer cited --memory` (tests/fixtures/retrofit/
svcvit-image-knowledge-base.zh.yml) on the local runner: the real plugin process runs the merge node and
`cited_answer` in the LLM node's place, its model call answered by a model that cites out of order, repeats and
groups ids, writes unknown ids and splits markers across deltas (tests/support/cited.py). Two turns, read as a client
reads the stream. `--answer clean` (Code nodes) too: nothing streams before the clean answer."""

import re
import time

import pytest

from citations.answer_layout import cited_template
from gcite.authoring.retrofit import Options, retrofit
from gcite.local.llm import message_text
from gcite.local.runner import run_chatflow
from gcite.local.service_api import Conversation
from gcite.local.services import local_services
from tests.support import ROOT
from tests.support.cited import UNKNOWN_IDS, TrickyModel, displayed, first_appearance, stream_problems
from tests.support.plugins import shared_plugins
from tests.support.yamltext import safe_load

APP = ROOT / "tests" / "fixtures" / "retrofit" / "svcvit-image-knowledge-base.zh.yml"
LLM = "1743994891832"
CITE, MERGE = f"gcite_cite_{LLM}", f"gcite_merge_{LLM}"
QUERIES = ("访客来访需要怎么登记？", "会议室怎么预约？")
MARKER_FREE = ("[C:", "<sup", "gcite-")


def finished(events, node):
    return next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == node)


@pytest.fixture(scope="module")
def turns():
    result = retrofit(APP.read_text(encoding="utf-8"), Options(answer="cited", memory=True))
    assert safe_load(result.text)["workflow"]["graph"]["nodes"]  # retrofit's output as written, nothing edited
    model, conversation, out = TrickyModel(pause=0.01), Conversation(), []
    with local_services(model, shared_plugins=shared_plugins()) as services:
        for query in QUERIES:
            start, timed = time.perf_counter(), []
            for event in run_chatflow(result.text, query, {}, services, conversation):
                timed.append((time.perf_counter() - start, event))
            out.append(timed)
    return result, model, out


@pytest.mark.parametrize("n", [0, 1], ids=["turn 1", "turn 2"])
def test_each_turn_streams_clean_citations_numbered_by_first_appearance(turns, n):
    result, model, both = turns
    timed = both[n]
    events = [e for _, e in timed]
    assert events[-1]["event"] == "workflow_finished" and events[-1]["data"]["status"] == "succeeded", events[-1]
    assert cited_template(CITE) in result.text
    messages = [(at, e["answer"]) for at, e in timed if e["event"] == "message"]
    assert stream_problems([text for _, text in messages]) == []
    first_text = next(at for at, text in messages if text)
    cite_done = next(at for at, e in timed if e["event"] == "node_finished" and e["data"]["node_id"] == CITE)
    assert cite_done - first_text > 0.1, (first_text, cite_done)  # the answer streamed while the model wrote
    answer = "".join(text for _, text in messages)
    numbers, titles, items = displayed(answer)
    cited = model.cited[n]
    assert cited and first_appearance(numbers) == list(range(1, len(cited) + 1))
    assert sorted(items) == list(range(1, len(cited) + 1))  # the list holds exactly the cited chunks
    outputs = finished(events, CITE)["outputs"]
    assert [c["id"] for c in outputs["citations"]] == cited
    assert outputs["invalid_ids"] == list(UNKNOWN_IDS) and not any(i in answer for i in UNKNOWN_IDS)
    chunks = {str(c["id"]): c for c in finished(events, MERGE)["outputs"]["chunk_metadata"]}
    for number, chunk_id in enumerate(cited, start=1):
        assert (
            chunks[chunk_id]["document_title"] in titles[number] and chunks[chunk_id]["document_title"] in items[number]
        )


def test_the_model_gets_the_builders_prompt_and_the_second_turn_the_first_without_markers(turns):
    _, model, _ = turns
    first, second = model.prompts[0], model.prompts[1]
    system = message_text(first[0])
    assert system.startswith("你是一个AI聊天助手，请参考<info></info>中的内容") and "[C:1]" in system
    assert message_text(first[-1]) == QUERIES[0] and message_text(second[-1]) == QUERIES[1]
    history = message_text(second[0]).split("# 之前的对话", 1)[1].split("# 检索片段", 1)[0]
    assert QUERIES[0] in history and not any(m in history for m in MARKER_FREE)


def test_clean_shows_only_the_clean_answer_after_the_llm_has_written():
    result = retrofit(APP.read_text(encoding="utf-8"), Options(answer="clean", nodes="code"))
    with local_services(TrickyModel(), shared_plugins=shared_plugins()) as services:
        events = list(run_chatflow(result.text, QUERIES[0], {}, services))
    assert events[-1]["data"]["status"] == "succeeded", events[-1]
    done = next(i for i, e in enumerate(events) if e["event"] == "node_finished" and e["data"]["node_id"] == LLM)
    messages = [(i, e["answer"]) for i, e in enumerate(events) if e["event"] == "message"]
    assert messages and all(i > done for i, _ in messages)  # nothing while the LLM writes: the clean answer after
    answer = "".join(text for _, text in messages)
    assert "[C:" not in answer and not any(i in answer for i in UNKNOWN_IDS)
    numbers = [int(x) for x in re.findall(r"\[(\d+)\]", answer.split("\n\n")[0])]
    assert numbers and first_appearance(numbers) == list(range(1, max(numbers) + 1))
