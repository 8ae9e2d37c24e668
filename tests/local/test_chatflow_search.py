"""The chatflows' web search on the runner: the plugin chatflow's own web_search tool against the local provider
server (results depend on the question; `--web-search-fails` refuses the key), the Code-node chatflow's Bocha HTTP
node answered from the same ranking, and the generated Tavily variant keeping the official tool's shape."""

import datetime
import io
import re
import threading
import time

import pytest
import requests

from citations import merge as merge_chunks
from gcite.authoring import chatflows
from gcite.cli import demo
from gcite.cli.main import main as cli
from gcite.local.runner import run_chatflow
from gcite.local.search_server import ranked
from gcite.local.services import local_services
from gcite.local.web_search import TAVILY_OUTAGE, _corpus
from tests.support import ROOT
from tests.support.plugins import shared_plugins
from tests.support.yamltext import safe_load

PATROL, MEETING = demo.DEMO_TURNS


def finished(events: list[dict], node_id: str) -> dict:
    return next(e["data"] for e in events if e["event"] == "node_finished" and e["data"]["node_id"] == node_id)


def expected_urls(query: str, count: int = chatflows.SEARCH_TOP_K) -> list[str]:
    """The local server's ranking, asked directly: what every search of the runner must show."""
    return [page["url"] for _, page in ranked(list(_corpus()), query, count, None, datetime.date.today())]


def web_of(events: list[dict]) -> list[dict]:
    return [c for c in finished(events, "merge")["outputs"]["chunk_metadata"] if c["source_type"] == "web"]


# --- the generated files --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [chatflows.PLUGIN_DSL, chatflows.DSL_DIR / "gcite_chatflow.en.yml"])
def test_the_plugin_chatflow_searches_with_our_web_search_tool(path):
    document = safe_load(path.read_text(encoding="utf-8"))
    nodes = {n["id"]: n["data"] for n in document["workflow"]["graph"]["nodes"]}
    web, merge = nodes["web"], nodes["merge"]
    ours = [d for d in document["dependencies"] if d["type"] == "package"][0]["value"]["plugin_unique_identifier"]
    assert (web["provider_id"], web["tool_name"], web["plugin_unique_identifier"]) == (
        "gcite/gcite/gcite",
        "web_search",
        ours,
    )
    assert web["tool_configurations"] == {
        "provider": "auto",
        "top_k": merge["tool_configurations"]["max_web_results"],
        "timeout_seconds": chatflows.SEARCH_TIMEOUT_SECONDS,
    }
    assert web["tool_parameters"] == {
        "query": {"type": "mixed", "value": "{{#sys.query#}}"},
        "freshness": {"type": "constant", "value": "any"},
    }
    assert web["error_strategy"] == "default-value"
    assert {v["key"]: v["value"] for v in web["default_value"]} == {"json": [], "text": ""}
    assert merge["tool_parameters"]["web_chunks"] == {"type": "variable", "value": ["web", "json"]}
    declared = {p["name"]: p for p in safe_load((ROOT / "tools" / "web_search.yaml").read_text())["parameters"]}
    for name in web["tool_configurations"]:
        assert declared[name]["form"] == "form", name  # settings go where Dify's form puts them
    for name in web["tool_parameters"]:
        assert declared[name]["form"] == "llm", name
    marketplace = [
        d["value"]["marketplace_plugin_unique_identifier"]
        for d in document["dependencies"]
        if d["type"] == "marketplace"
    ]
    assert marketplace == [chatflows.OPENAI]  # no Tavily: one plugin serves the whole flow


def test_the_tavily_variant_keeps_the_official_tool_and_its_dependency():
    document = safe_load(chatflows.chatflow_text(chatflows.Variant(search="tavily")))
    nodes = {n["id"]: n["data"] for n in document["workflow"]["graph"]["nodes"]}
    assert (nodes["web"]["provider_id"], nodes["web"]["tool_name"]) == ("langgenius/tavily/tavily", "tavily_search")
    assert (
        nodes["web"]["tool_configurations"]["max_results"] == nodes["merge"]["tool_configurations"]["max_web_results"]
    )
    assert nodes["web"]["error_strategy"] == "default-value"
    marketplace = [
        d["value"]["marketplace_plugin_unique_identifier"]
        for d in document["dependencies"]
        if d["type"] == "marketplace"
    ]
    assert marketplace == [chatflows.TAVILY, chatflows.OPENAI]
    with pytest.raises(ValueError, match="search: 'bing' is not one of gcite, tavily"):
        chatflows.Variant(search="bing")
    with pytest.raises(ValueError, match="search: the Code-node chatflow"):
        chatflows.Variant(plugin=False, search="tavily")


def test_build_dsl_search_option_writes_the_tavily_variant(tmp_path, capsys):
    assert cli(["build-dsl", "--search", "tavily", "--lang", "en", "--out", str(tmp_path)]) == 0
    written = (tmp_path / "gcite_chatflow.en.yml").read_text(encoding="utf-8")
    assert written == chatflows.chatflow_text(chatflows.Variant(lang="en", search="tavily"))
    assert "tool_name: tavily_search" in written
    assert cli(["build-dsl", "--search", "tavily"]) == 2
    assert "--search needs --out DIR" in capsys.readouterr().err


# --- the plugin chatflow on the runner --------------------------------------------------------------------------


def test_the_demo_shows_web_results_that_depend_on_the_question():
    out = io.StringIO()
    assert demo.run(out=out) is True
    turns = out.getvalue().split("===== turn ")[1:]
    assert len(turns) == 2
    shown = [re.findall(r"^\d+\s+\| web\s+\|[^|]*\| (.+?)\s+\|", turn, flags=re.M) for turn in turns]
    titles = {page["url"]: page["title"] for page in _corpus()}
    for turn_titles, query in zip(shown, (PATROL, MEETING)):
        assert turn_titles == [titles[url] for url in expected_urls(query)]
    assert shown[0] and shown[1] and shown[0] != shown[1]


def test_the_web_search_tool_feeds_the_merge_node_with_nothing_lost():
    with local_services(shared_plugins=shared_plugins()) as services:
        events = list(
            run_chatflow(chatflows.PLUGIN_DSL.read_text(encoding="utf-8"), PATROL, {"user_roles": "物业经理"}, services)
        )
        asked = services.search_server.requests
    assert [r["body"]["count"] for r in asked if r["path"] == "/v1/web-search"] == [chatflows.SEARCH_TOP_K]
    web = finished(events, "web")
    assert web["status"] == "succeeded"
    results = web["outputs"]["json"][0]["results"]
    assert [r["url"] for r in results] == expected_urls(PATROL)
    expected = merge_chunks.main([], [{"results": results}], max_web_results=chatflows.SEARCH_TOP_K)
    chunks = web_of(events)

    def without_id(items):
        return [{k: v for k, v in c.items() if k != "id"} for c in items]

    assert without_id(chunks) == without_id(expected["chunk_metadata"])  # what merge reads alone from the results
    assert len(chunks) == len(results)
    for chunk, result in zip(chunks, results):
        assert (chunk["url"], chunk["document_title"], chunk["content"]) == (
            result["url"],
            result["title"],
            result["content"],
        )
        assert (
            result["site_name"] in chunk["display_subtitle"] and result["published_date"] in chunk["display_subtitle"]
        )
    assert not [s for s in finished(events, "merge")["outputs"]["skipped"] if s["source"] == "web"]


def test_web_search_fails_refuses_the_key_and_the_answer_falls_back_to_the_knowledge_base():
    with local_services(web_search_fails=True, shared_plugins=shared_plugins()) as services:
        events = list(
            run_chatflow(
                chatflows.PLUGIN_DSL.read_text(encoding="utf-8"),
                PATROL,
                {"user_roles": "物业经理", "citation_style": "markers"},
                services,
            )
        )
        asked = [r["path"] for r in services.search_server.requests]
    assert asked == ["/v1/web-search"]  # the server was asked, and refused the key
    web = finished(events, "web")
    assert web["status"] == "exception"
    assert web["error"].startswith("Bocha refused the API key (HTTP 401")
    assert web["outputs"]["json"] == [] and web["outputs"]["text"] == ""
    chunks = finished(events, "merge")["outputs"]["chunk_metadata"]
    assert chunks and {c["source_type"] for c in chunks} == {"rag"}
    # the failure is the node's error (Dify's error handling), not a provider message in merge's skipped
    assert [s for s in finished(events, "merge")["outputs"]["skipped"] if s["source"] == "web"] == []
    assert re.search(r"\[C:1\]", "".join(e["answer"] for e in events if e["event"] == "message"))
    assert events[-1]["data"]["status"] == "partial-succeeded" and events[-1]["data"]["exceptions_count"] == 1


# --- the Code-node chatflow's HTTP node ---------------------------------------------------------------------------


def test_the_code_chatflow_web_results_come_from_the_same_ranking():
    with local_services(shared_plugins=shared_plugins()) as services:
        text = chatflows.CODE_DSL.read_text(encoding="utf-8")
        urls = {
            query: [c["url"] for c in web_of(list(run_chatflow(text, query, {"user_roles": "前台"}, services)))]
            for query in (PATROL, MEETING)
        }
    for query, shown in urls.items():
        assert shown == expected_urls(query)
    assert urls[PATROL] and urls[MEETING] and urls[PATROL] != urls[MEETING]


def test_the_code_chatflow_search_is_refused_with_web_search_fails():
    with local_services(web_search_fails=True, shared_plugins=shared_plugins()) as services:
        events = list(
            run_chatflow(chatflows.CODE_DSL.read_text(encoding="utf-8"), PATROL, {"user_roles": "前台"}, services)
        )
    web = finished(events, "web")
    assert web["status"] == "exception" and "401" in web["error"]
    assert len(services.search_http.requests) == 1 and web_of(events) == []
    assert {c["source_type"] for c in finished(events, "merge")["outputs"]["chunk_metadata"]} == {"rag"}


# --- the Tavily variant: the official tool's failure shape ---------------------------------------------------------


def test_the_tavily_variant_reproduces_the_official_tools_failure_and_falls_back():
    with local_services(web_search_fails=True, shared_plugins=shared_plugins()) as services:
        events = list(
            run_chatflow(
                chatflows.chatflow_text(chatflows.Variant(search="tavily")),
                PATROL,
                {"user_roles": "物业经理"},
                services,
            )
        )
    web = finished(events, "web")
    assert web["status"] == "succeeded" and web["error"] is None  # the official tool reports failures as text
    assert web["outputs"]["json"] == [{"data": []}]
    assert web["outputs"]["text"] == f"Error occurred while searching: {TAVILY_OUTAGE}"
    merged = finished(events, "merge")["outputs"]
    assert {c["source_type"] for c in merged["chunk_metadata"]} == {"rag"}
    # the merge node gets the tool's text too (web_text) and reports the failure instead of "no results"
    assert {
        "source": "web",
        "index": -1,
        "reason": f"search provider error: Error occurred while searching: {TAVILY_OUTAGE}",
    } in merged["skipped"]
    assert events[-1]["data"]["status"] == "succeeded"


def test_web_text_is_wired_in_the_tavily_variant_only():
    def merge_inputs(text):
        document = safe_load(text)
        return next(n["data"]["tool_parameters"] for n in document["workflow"]["graph"]["nodes"] if n["id"] == "merge")

    assert merge_inputs(chatflows.chatflow_text(chatflows.Variant(search="tavily")))["web_text"] == {
        "type": "mixed",
        "value": "{{#web.text#}}",
    }
    # our web_search fails the node on an error (its default text is empty); its text on success is a summary
    assert "web_text" not in merge_inputs(chatflows.PLUGIN_DSL.read_text(encoding="utf-8"))


SERVER_THREADS = ("gcite-search-server", "process_request")  # a search server and its connections
PLUGIN_THREADS = ("_read_stdout", "_read_stderr")  # a plugin process's readers


def lingering_threads(before: set[threading.Thread] = frozenset(), kinds=SERVER_THREADS + PLUGIN_THREADS) -> list[str]:
    """Threads of these kinds still alive, but for those alive `before`, after up to 3 s for them to end."""
    deadline = time.monotonic() + 3
    while True:
        names = [
            t.name
            for t in threading.enumerate()
            if t not in before and (t.name in kinds or any(f"({kind}" in t.name for kind in kinds))
        ]
        if not names or time.monotonic() > deadline:
            return names
        time.sleep(0.05)


def test_no_thread_outlives_the_services():
    """Importing dify_plugin (gevent) while another thread is alive breaks that import, so closing the services
    must leave no thread behind: the search server's connections (a keep-alive client here), and one plugin process
    even when two tool nodes (acl_filter and web) start in parallel."""
    # nothing earlier tests started is alive, but the plugin process they may share (tests/support/plugins.py)
    assert lingering_threads(kinds=SERVER_THREADS if shared_plugins() else SERVER_THREADS + PLUGIN_THREADS) == []
    before = set(threading.enumerate())
    with local_services() as services, requests.Session() as session:
        server = services.search_server
        answer = session.post(
            server.base_url + "/v1/web-search",
            json={"query": PATROL},
            headers={"Authorization": f"Bearer {server.api_key}"},
            timeout=10,
        )
        assert answer.status_code == 200 and answer.headers["Connection"] == "close"
        list(run_chatflow(chatflows.PLUGIN_DSL.read_text(encoding="utf-8"), MEETING, {"user_roles": "前台"}, services))
    assert lingering_threads(before) == []
