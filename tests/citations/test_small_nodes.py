"""The chatflow's helper nodes: the search request body and the conversation memory."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citations import memory as remember_turn
from citations import validate as validate_citations
from citations import web_request as web_search_request
from tests.support.node_data import MARKERISH
from tests.support.py310 import assert_same_under_310


@pytest.mark.parametrize("query", ['a "quoted" query', '", "count": 50, "x": "', "}{][", "巡更\n异常", ""])
def test_search_body_keeps_the_query_one_string(query):
    body = json.loads(web_search_request.main(query)["body"])
    assert body == {"query": query.strip(), "count": 5, "summary": True, "freshness": "noLimit"}


@pytest.mark.parametrize(
    "kwargs,field",
    [({"query": 3}, "query"), ({"query": "q", "count": 0}, "count"), ({"query": "q", "count": True}, "count")],
)
def test_search_body_rejects_bad_input(kwargs, field):
    with pytest.raises(ValueError, match=field):
        web_search_request.main(**kwargs)


def test_memory_keeps_the_last_turns_without_markers():
    history = None
    for n in range(5):
        out = remember_turn.main(history, f"问题{n}", f"回答{n}，见 [C:{n}")
        history = out["history"]
    assert [t["query"] for t in history] == ["问题2", "问题3", "问题4"]
    assert history[-1]["answer"] == "回答4，见 (C:4"
    assert out["history_text"].startswith("用户：问题2\n助手：回答2") and "[C:" not in out["history_text"]
    assert remember_turn.main(json.dumps(history), "q", "a", max_turns=1)["history"] == [{"query": "q", "answer": "a"}]
    assert remember_turn.main(None, "q", "a", max_turns=0) == {"history": [], "history_text": ""}


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"history": "{bad"}, "history"),
        ({"history": [{"query": 1}]}, r"history\[0\]"),
        ({"answer": 5}, "answer"),
        ({"max_turns": -1}, "max_turns"),
    ],
)
def test_memory_rejects_bad_input(kwargs, field):
    with pytest.raises(ValueError, match=field):
        remember_turn.main(**kwargs)


@settings(max_examples=300, deadline=None)
@given(st.lists(MARKERISH | st.sampled_from(["\u3000", "\u00a0", "\t"]), max_size=40).map("".join))
def test_memory_leaves_nothing_the_validator_would_read_as_a_marker(text):
    turn = remember_turn.main(None, text, text)["history"][0]
    for value in (turn["query"], turn["answer"]):
        assert validate_citations.main(value, None)["citations"] == []


def test_helper_nodes_behave_the_same_under_python_310():
    assert_same_under_310("web_search_request", web_search_request.main, [{"query": 'a "b"'}, {"query": 1}])
    assert_same_under_310(
        "remember_turn",
        remember_turn.main,
        [{"history": [{"query": "q", "answer": "a"}], "query": "q2", "answer": "a2 [C:1"}, {"history": "{"}],
    )


# --- hostile input (issue: hardening) -------------------------------------------------------------------


def test_memory_rejects_deep_json_and_an_unbounded_turn_count_naming_the_field():
    with pytest.raises(ValueError, match="history: not valid JSON"):
        remember_turn.main("[" * 5000 + "]" * 5000, "q", "a")
    for turns in (31, 10**7, 10**400):
        with pytest.raises(ValueError, match="max_turns: expected a whole number from 0 to 30"):
            remember_turn.main(None, "q", "a", max_turns=turns)


def test_memory_output_fits_a_code_node_whatever_history_comes_in():
    history = [{"query": "q" * 10_000, "answer": f"[C:{n}] " + "a" * 10_000} for n in range(500)]
    out = remember_turn.main(history, "q", "a", max_turns=30)
    assert len(out["history"]) == 30 and all(len(t["answer"]) <= 2000 for t in out["history"])
    assert "[C:" not in out["history_text"] and len(out["history_text"]) < 400_000


def test_memory_neutralises_look_alike_markers_too():
    answer = remember_turn.main(None, "q", "见 ［Ｃ：９］ 与 [C\u200b:1]")["history"][0]["answer"]
    assert answer == "见 （Ｃ：９） 与 (C\u200b:1)"


def test_search_body_replaces_a_lone_surrogate():
    body = web_search_request.main("a\ud800b")["body"]
    body.encode("utf-8")  # sendable
    assert json.loads(body)["query"] == "a\ufffdb"
    with pytest.raises(ValueError, match="count"):
        web_search_request.main("q", 10**400)
