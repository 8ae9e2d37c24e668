"""nodes/merge_chunks.py is a drop-in superset of the seed's appendix-A node."""

import pytest

from nodes.merge_chunks import main
from tests.fixtures import seed_appendix_a as seed

RAG = [
    {"content": "巡更人员执行巡检计划时，需先进入巡更功能项", "title": "巡更.md",
     "metadata": {"score": 0.73, "dataset_name": "测试知识库20260610", "segment_position": 2, "document_name": "巡更.md",
                  "doc_metadata": {"document_title": "巡更操作指南 v2.1", "document_name": "巡更.md",
                                   "source_file_url": "oss://kb-raw/2026/06/巡更.pdf"}}},
    {"content": "云巡 9 巡检端说明书", "metadata": {"score": 0.65, "dataset_name": "测试知识库20260610",
                                               "doc_metadata": {"document_name": "云巡9.md"}}},
]
REFERENCES = [
    {"title": "物业巡检流程标准 - 知乎", "url": "https://www.zhihu.com/question/123/answer/456",
     "content": "物业巡检一般分为三类", "website": "知乎", "date": "2025-08-12 09:30:00", "authority_score": 0.68},
    {"title": "巡更系统", "url": "https://blog.example.org/p", "snippet": "巡更系统通过点位打卡", "date": "2024-01-02"},
    {"title": "第三条", "url": "https://example.com/x", "content": "被种子节点截掉的第三条", "authority_score": 0.1},
]
SEED_WEB_FORMS = {
    "baidu_list": [{"references": REFERENCES, "request_id": "r"}],
    "json_envelope": {"json": [{"references": REFERENCES}]},
    "plain_list": REFERENCES,
}


@pytest.mark.parametrize("form", sorted(SEED_WEB_FORMS))
def test_same_values_as_the_seed_node_on_its_own_inputs(form):
    web = SEED_WEB_FORMS[form]
    expected = seed.main(RAG, web)
    # the seed passes a document's storage address on as it is: our node does so with show_storage_urls
    got = main(RAG, web, max_web_results=seed.MAX_WEB_RESULTS, show_storage_urls=True)
    assert set(expected) <= set(got)
    assert got["formatted_chunks"] == expected["formatted_chunks"]
    assert got["chunk_count"] == expected["chunk_count"]
    for ours, theirs in zip(got["chunk_metadata"], expected["chunk_metadata"], strict=True):
        assert {k: ours[k] for k in theirs} == theirs


def test_called_with_two_arguments_it_returns_the_seed_keys():
    expected = seed.main(RAG, SEED_WEB_FORMS["baidu_list"])
    got = main(RAG, SEED_WEB_FORMS["baidu_list"])
    assert set(expected) <= set(got)
    assert got["chunk_count"] == 5  # our default keeps five web results, the seed's constant two
    for chunk in got["chunk_metadata"]:
        assert set(expected["chunk_metadata"][0]) <= set(chunk)
