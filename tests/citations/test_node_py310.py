import ast

from citations import merge as merge_chunks
from tests.support import ROOT
from tests.support.node_data import FORGED, RAG, SEED_WEB_FORMS
from tests.support.py310 import assert_same_under_310
from tests.support.web_shapes import WEB_SHAPES


def test_nodes_import_only_the_standard_library_and_nothing_from_the_repo():
    import sys

    for path in sorted((ROOT / "nodes").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path.name}: relative import"
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in sys.stdlib_module_names, f"{path.name} imports {name}"


def test_merge_node_behaves_the_same_under_python_310():
    cases = [{"rag_chunks": RAG, "web_chunks": web} for web in SEED_WEB_FORMS.values()]
    cases += [{"rag_chunks": None, "web_chunks": shape} for shape, _ in WEB_SHAPES.values()]
    cases += [{"rag_chunks": str(RAG), "web_chunks": "", "max_chunks": 1}]
    cases += [{"rag_chunks": [{"content": f"x {f} y"}], "web_chunks": None} for f in FORGED]
    cases += [{"rag_chunks": "{bad", "web_chunks": None}, {"web_chunks": {"odd": 1}}, {"max_web_results": -2}]
    assert_same_under_310("merge_chunks", merge_chunks.main, cases)


def test_validator_behaves_the_same_under_python_310():
    from citations import validate as validate_citations
    from tests.support.node_data import CHUNKS

    answers = [
        "a[C:1] b【C：2-4】 c[C:99] `[C:1]`\n```\n[C:2]\n```\n[[C:3]] [C:1",
        "根据现有资料无法确定",
        "",
        "[C:1][C:2][C:1-20] [C:1,c：2]",
    ]
    cases = [{"answer": a, "chunk_metadata": CHUNKS} for a in answers]
    cases += [{"answer": answers[0], "chunk_metadata": None}, {"answer": 3}, {"answer": "x", "chunk_metadata": "{"}]
    assert_same_under_310("validate_citations", validate_citations.main, cases)


def test_access_nodes_behave_the_same_under_python_310():
    import json

    from citations import acl_prefilter
    from citations import filter as filter_chunks
    from tests.support.node_data import DOC, chunk

    items = [
        chunk(acl, str(n), **DOC)
        for n, acl in enumerate(
            [["运维工程师"], '["运维工程师","物业经理"]', "前台；物业经理", '["bad', None, "", "[]", ",a,b,"]
        )
    ]
    conditions = [
        "",
        json.dumps(
            {
                "all": [
                    {"field": "level", "op": "gte", "value": 3},
                    {"not": {"field": "updated", "op": "before", "value": "2026-01-01"}},
                    {
                        "any": [
                            {"field": "tags", "op": "contains", "value": "电梯"},
                            {"field": "stamp", "op": "after", "value": 0},
                        ]
                    },
                ]
            }
        ),
        json.dumps({"field": "updated", "op": "after", "value": "soon"}),
    ]
    cases = [
        {"rag_chunks": items, "user_roles": roles, "condition": c}
        for roles in ("物业经理", '["a"]', None)
        for c in conditions
    ]
    cases += [{"rag_chunks": items, "user_roles": "Admin", "case_sensitive": False, "missing_acl": "hidden"}]
    assert_same_under_310("filter_chunks", filter_chunks.main, cases)
    assert_same_under_310(
        "acl_prefilter",
        acl_prefilter.main,
        [{"user_roles": "a,b"}, {"user_roles": "a,b,c,d"}, {"user_roles": '["x", 2]', "role_slots": 4}],
    )
