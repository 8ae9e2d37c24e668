"""nodes/merge_chunks.py is a drop-in superset of the seed's appendix-A node."""

import pytest

from citations.merge import main
from tests.support import seed_appendix_a as seed
from tests.support.node_data import RAG, SEED_WEB_FORMS


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
