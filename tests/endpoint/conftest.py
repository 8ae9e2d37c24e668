"""The browser tests' fixtures: `gcite serve` with a hostile document added (one per session) and Debian's
chromium (one per module: one sync Playwright at a time).

pytest imports this file when it starts, before any test module: it imports only what is light here, the rest
inside the fixtures. Importing the local engine or requests this early, before the plugin SDK applies gevent's
patching in other test modules, leaves locks and sockets unpatched and makes every later chatflow run in the
process several times slower."""

import json

import pytest


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """`python -m gcite serve` with a knowledge base that adds a hostile document, stopped at the end."""
    import requests

    from gcite.local.knowledge import load_json
    from tests.support.page_visit import FAIL_WORD, HOSTILE_TEXT, HOSTILE_TITLE
    from tests.support.serve_process import gcite_serve

    kb = load_json("knowledge_base.json")
    kb["documents"].append(
        {
            "document_id": "doc-hostile",
            "document_name": "hostile.md",
            "doc_metadata": {
                "document_title": HOSTILE_TITLE,
                "source_file_url": "javascript:window.__pwned=4",
                "access_roles": "",
                "updated": "2026-01-01",
            },
            "segments": [{"segment_id": "seg-hostile-1", "content": HOSTILE_TEXT}],
        }
    )
    path = tmp_path_factory.mktemp("serve") / "kb.json"
    path.write_text(json.dumps(kb, ensure_ascii=False), encoding="utf-8")
    with gcite_serve("--pace", "0.01", "--knowledge-base", str(path), "--fail-on", FAIL_WORD) as printed:
        users = {u["id"]: u for u in requests.get(printed["origin"] + "/local/users", timeout=30).json()}
        yield {**printed, "users": users}


@pytest.fixture(scope="module")  # one sync Playwright at a time: other browser test modules start their own
def browser():
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
