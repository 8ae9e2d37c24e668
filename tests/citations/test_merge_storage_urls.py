"""The merge node's `show_storage_urls` setting: internal storage addresses of knowledge-base documents are not
passed on to end users unless an operator turns it on (then they are shown as text, never as links)."""

import pytest

from citations import validate as validate_citations
from citations.merge import main
from tests.support import ROOT, sdk
from tests.support.yamltext import safe_load


def rag(source_file_url):
    return [
        {
            "content": "巡更需先打卡。",
            "metadata": {
                "dataset_name": "知识库",
                "document_id": "d1",
                "segment_id": "s1",
                "doc_metadata": {"document_title": "巡更指南", "source_file_url": source_file_url},
            },
        }
    ]


def urls(source_file_url, **settings):
    chunk = main(rag(source_file_url), None, **settings)["chunk_metadata"][0]
    return chunk["url"], chunk["source_file_url"]


STORAGE = [
    "oss://kb-raw/2026/06/巡更.pdf",
    "s3://bucket/docs/a.pdf",
    "gs://bucket/a.pdf",
    "hdfs://namenode:8020/kb/a.pdf",
    "/mnt/share/docs/a.pdf",
    "docs/a.pdf",
    "C:\\docs\\a.pdf",
    "file:///srv/kb/a.pdf",
    "file:a.pdf",
    "https:///no-host.pdf",
    "javascript:alert(1)",
]


@pytest.mark.parametrize("stored", STORAGE)
def test_by_default_a_storage_address_is_not_passed_on(stored):
    assert urls(stored) == ("", "")
    assert urls(stored, show_storage_urls=False) == ("", "")


@pytest.mark.parametrize(
    "stored,expected",
    [
        ("https://kb.example.com/files/a.pdf", "https://kb.example.com/files/a.pdf"),
        ("http://intranet.example.com/a.pdf", "http://intranet.example.com/a.pdf"),
        ("  https://kb.example.com/a.pdf \n", "https://kb.example.com/a.pdf"),
        ("https://kb.exa\tmple.com/a\n.pdf", "https://kb.example.com/a.pdf"),  # as a browser reads it
        ("HTTPS://KB.example.com/A.pdf", "HTTPS://KB.example.com/A.pdf"),
        ("   ", ""),
    ],
)
def test_an_http_address_is_kept_either_way(stored, expected):
    assert urls(stored) == (expected, expected)
    assert urls(stored, show_storage_urls=True) == (stored.strip(), stored.strip())  # the stored value, trimmed


@pytest.mark.parametrize("stored", STORAGE)
def test_show_storage_urls_keeps_the_stored_address(stored):
    assert urls(stored, show_storage_urls=True) == (stored, stored)
    assert urls(f"  {stored}\n", show_storage_urls=True) == (stored, stored)


def test_a_shown_storage_address_is_text_never_a_link():
    chunks = main(rag("oss://kb-raw/巡更.pdf"), None, show_storage_urls=True)["chunk_metadata"]
    line = validate_citations.main("巡更需先打卡[C:1]。", chunks)["references_markdown"]
    assert "oss://kb-raw/巡更.pdf" in line and "](" not in line
    hidden = main(rag("oss://kb-raw/巡更.pdf"), None)["chunk_metadata"]
    assert "oss://" not in validate_citations.main("巡更需先打卡[C:1]。", hidden)["references_markdown"]


@pytest.mark.parametrize("bad", ["true", 1, None, [True]])
def test_show_storage_urls_must_be_true_or_false(bad):
    with pytest.raises(ValueError, match=r"^show_storage_urls: expected true or false, got "):
        main(rag("oss://a"), None, show_storage_urls=bad)


def test_the_tool_declares_the_setting_in_both_languages_and_passes_it_on():
    declared = {p["name"]: p for p in safe_load((ROOT / "tools" / "merge_chunks.yaml").read_text())["parameters"]}
    setting = declared["show_storage_urls"]
    assert (setting["type"], setting["form"], setting["default"], setting["required"]) == (
        "boolean",
        "form",
        False,
        False,
    )
    for text in (setting["label"], setting["human_description"]):
        assert text["en_US"].strip() and text["zh_Hans"].strip()
    reg = sdk.registration()
    for value, expected in ((None, ""), (False, ""), (True, "s3://bucket/a.pdf")):
        parameters = {"rag_chunks": rag("s3://bucket/a.pdf"), **({} if value is None else {"show_storage_urls": value})}
        chunk = sdk.invoke(reg, "merge_chunks", parameters)["chunk_metadata"][0]
        assert (chunk["url"], chunk["source_file_url"]) == (expected, expected)
