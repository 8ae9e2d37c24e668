"""Inputs shared by the node tests and the Python 3.10 check (kept here so that no test imports another)."""

from hypothesis import strategies as st


def chunk(acl="__unset__", segment_id="s", field="access_roles", **meta):
    doc_meta = dict(meta)
    if acl != "__unset__":
        doc_meta[field] = acl
    return {"content": "x", "title": "t", "metadata": {"segment_id": segment_id, "doc_metadata": doc_meta}}


DOC = {
    "dept": "ops",
    "tags": '["电梯","消防"]',
    "tag_list": ["电梯", "消防"],
    "level": 3,
    "level_text": "3",
    "updated": "2026-05-20",
    "stamp": 1767225600,
    "title": "电梯维保手册",
    "empty_text": "",
}


CHUNKS = [
    {
        "id": str(i),
        "document_title": f"Doc {i}",
        "source_type": "rag" if i < 20 else "web",
        "url": f"https://e.com/{i}",
        "display_subtitle": f"sub {i}",
        "site_name": "",
        "published_date": "",
    }
    for i in range(1, 31)
]


MARKERISH = st.sampled_from(
    [
        "[",
        "]",
        "【",
        "】",
        "［",
        "］",
        "C",
        "c",
        ":",
        "：",
        ",",
        "，",
        "、",
        ";",
        "-",
        "–",
        " ",
        "`",
        "```",
        "\n",
        "1",
        "2",
        "3",
        "12",
        "99",
        "x",
        "文",
        "[C:1]",
        "[C:2,3]",
        "【C：1-3】",
    ]
)


FORGED = [
    "[C:9]",
    "【C:2】",
    "[ c：1 ]",
    "［C:3］",
    "[C:1,2]",
    "[C: 1-3]",
    "[C:1, C:2]",
    "[[C:1]]",
    "【 c : 4 】",
    "[C:1",
    "[\u3000C\u3000:\u30001]",
]


RAG = [
    {
        "content": "巡更人员执行巡检计划时，需先进入巡更功能项",
        "title": "巡更.md",
        "metadata": {
            "score": 0.73,
            "dataset_name": "测试知识库20260610",
            "segment_position": 2,
            "document_name": "巡更.md",
            "doc_metadata": {
                "document_title": "巡更操作指南 v2.1",
                "document_name": "巡更.md",
                "source_file_url": "oss://kb-raw/2026/06/巡更.pdf",
            },
        },
    },
    {
        "content": "云巡 9 巡检端说明书",
        "metadata": {
            "score": 0.65,
            "dataset_name": "测试知识库20260610",
            "doc_metadata": {"document_name": "云巡9.md"},
        },
    },
]


REFERENCES = [
    {
        "title": "物业巡检流程标准 - 知乎",
        "url": "https://www.zhihu.com/question/123/answer/456",
        "content": "物业巡检一般分为三类",
        "website": "知乎",
        "date": "2025-08-12 09:30:00",
        "authority_score": 0.68,
    },
    {"title": "巡更系统", "url": "https://blog.example.org/p", "snippet": "巡更系统通过点位打卡", "date": "2024-01-02"},
    {"title": "第三条", "url": "https://example.com/x", "content": "被种子节点截掉的第三条", "authority_score": 0.1},
]


SEED_WEB_FORMS = {
    "baidu_list": [{"references": REFERENCES, "request_id": "r"}],
    "json_envelope": {"json": [{"references": REFERENCES}]},
    "plain_list": REFERENCES,
}
