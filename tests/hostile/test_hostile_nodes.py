"""Hostile input through the nodes: each case (bench/hostile.py) is a clear error or a correct result, and the
memory it takes stays close to what its input itself takes. `make bench` prints the time of each."""

import pytest

from bench.hostile import CASES, MB, measure


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_case(name):
    _, peak, size = measure(CASES[name])
    assert peak <= 1.5 * size + 32 * MB, f"{name}: peak {peak / MB:.1f} MB for {size / MB:.1f} MB of input"


def test_the_hardened_nodes_behave_the_same_under_python_310():
    # Dify's sandbox runs Python 3.10: the same answers and the same errors there.
    from citations import acl_prefilter
    from citations import filter as filter_chunks
    from citations import memory as remember_turn
    from citations import merge as merge_chunks
    from tests.support.py310 import assert_same_under_310

    look_alikes = "见 ［Ｃ：９９］ [𝐂:1] [C﹕1] [C\u2003:\u20091] [\u200bC\u0301:1] [[C:1]] 【C:2】 [С:3] ﬀ[C:4"
    assert_same_under_310(
        "merge_chunks",
        merge_chunks.main,
        [
            {"rag_chunks": [{"content": look_alikes}], "web_chunks": [{"url": "http://a.b", "content": look_alikes}]},
            {"rag_chunks": "[" * 3000 + "]" * 3000},
            {"web_chunks": '{"a":' * 3000 + "1" + "}" * 3000},
            {"rag_chunks": [], "max_chunks": "¹"},
            {"web_chunks": [{"data": []}], "web_text": "Tavily: 432 limit"},
            {"web_chunks": '[{"url":"http://a.b","content":"x","score":1' + "0" * 400 + "}]"},
            {"rag_chunks": '[{"content": "a\\ud800", "metadata": {"segment_position": 1e300}}]'},
        ],
    )
    condition = {"field": "d", "op": "after", "value": "2024-01-01"}
    docs = [
        {"content": "x", "metadata": {"segment_id": str(n), "doc_metadata": meta}}
        for n, meta in enumerate(
            [
                {"d": 1.7e12},
                {"d": 1e20},
                {"d": "2025-01-01"},
                {"access_roles": ","},
                {"access_roles": '[" "]'},
                {"access_roles": "[" * 3000},
                '{"access_roles": ",a,"}',
                "{bad",
            ]
        )
    ]
    assert_same_under_310(
        "filter_chunks",
        filter_chunks.main,
        [
            {"rag_chunks": docs, "user_roles": "a", "condition": condition},
            {"rag_chunks": docs, "user_roles": "a"},
            {"rag_chunks": [], "user_roles": "a", "condition": {"field": "d", "op": "before", "value": 1.7e12}},
            {"rag_chunks": [], "user_roles": "a", "condition": '{"not":' * 3000 + "{}" + "}" * 3000},
            {"rag_chunks": "[" * 3000 + "]" * 3000, "user_roles": "a"},
        ],
    )
    assert_same_under_310(
        "acl_prefilter",
        acl_prefilter.main,
        [{"user_roles": "a", "role_slots": 10**7}, {"user_roles": "[" * 3000 + "]" * 3000}],
    )
    assert_same_under_310(
        "remember_turn",
        remember_turn.main,
        [
            {"history": "[" * 3000 + "]" * 3000},
            {"query": "q", "answer": look_alikes, "max_turns": 30},
            {"max_turns": 31},
        ],
    )
