"""The web search's memory and work are bounded (issue 34: "Memory" and the smaller edges): every page is read with
a size cap and a cap on its JSON values, only the results still wanted are mapped, nothing of a page is kept but
those, a kept result's fields are capped, and `timeout_seconds` covers the mapping. The process's peak memory is
measured in a subprocess with the largest pages a provider stand-in on 127.0.0.1 is allowed to serve."""

import json
import os
import subprocess
import sys
import time

import pytest

from tests.support import ROOT
from tests.support.local_http import origin, start_server, stop_server
from tests.support.provider_pages import LargestPages, item
from websearch import client, errors, http_client, mappers, providers, results
from websearch.search import run_search

TAVILY_URL = "https://api.tavily.com/search"
KEY = "sk-BOUNDS-31f0c9a7e2d4b685"
PEAK_LIMIT_MIB = 48  # measured: 16 MiB (most JSON values), 36 MiB (largest text); keeping every page: 64 MiB


def tavily(top_k, seconds=10.0):
    return run_search(
        providers.PROVIDERS["tavily"],
        "patrol",
        top_k,
        "any",
        {"tavily_api_key": KEY},
        http_client.Budget(seconds),
        sleep=lambda s: None,
    )


# --- work: only what is wanted is mapped, within the deadline ---------------------------------------------------


def test_only_the_results_still_wanted_are_mapped(mocked, monkeypatch):
    mapped = []
    real = mappers.MAPPERS["tavily"]
    monkeypatch.setitem(mappers.MAPPERS, "tavily", lambda p, r: mapped.append(r["url"]) or real(p, r))
    mocked.add("POST", TAVILY_URL, json={"results": [item(n) for n in range(20)]})
    found, _, _ = tavily(top_k=3)
    assert [r["url"] for r in found] == [f"https://site.example/{n}" for n in range(3)]
    assert mapped == [f"https://site.example/{n}" for n in range(3)]  # not 20


def test_a_page_with_more_results_than_any_provider_sends_is_read_only_in_part(mocked, monkeypatch):
    mapped = []
    real = mappers.MAPPERS["tavily"]
    monkeypatch.setitem(mappers.MAPPERS, "tavily", lambda p, r: mapped.append(1) or real(p, r))
    duplicates = [item(0)] * 5000
    mocked.add("POST", TAVILY_URL, json={"results": [item(0)] + duplicates})
    found, notes, _ = tavily(top_k=5)
    assert len(found) == 1 and len(mapped) == results.MAX_READ_PER_PAGE
    assert "Tavily sent more than 100 results in one page; only the first 100 of each page were read" in notes


def test_timeout_seconds_covers_mapping_the_results(mocked, monkeypatch):
    real = mappers.MAPPERS["tavily"]

    def slow(p, r):
        time.sleep(0.3)
        return real(p, r)

    monkeypatch.setitem(mappers.MAPPERS, "tavily", slow)
    mocked.add("POST", TAVILY_URL, json={"results": [item(n) for n in range(20)]})
    started = time.monotonic()
    with pytest.raises(errors.SearchError, match=r"^Tavily did not answer within 1 s \(timeout_seconds\)$"):
        tavily(top_k=20, seconds=1.0)
    assert time.monotonic() - started < 1.5  # 20 results would take 6 s to map


def test_a_kept_results_fields_are_capped_above_where_the_merge_node_cuts(mocked):
    from citations import merge

    long = item(0, title="T" * 50_000, content="C" * 1_000_000, published_date="D" * 50_000)
    mocked.add("POST", TAVILY_URL, json={"results": [long]})
    found, _, _ = tavily(top_k=1)
    assert len(found[0]["content"]) == mappers.MAX_CONTENT_CHARS and found[0]["content"].endswith("…")
    assert len(found[0]["title"]) == len(found[0]["published_date"]) == mappers.MAX_LINE_CHARS
    assert mappers.MAX_CONTENT_CHARS > merge.MAX_CONTENT_CHARS and mappers.MAX_LINE_CHARS > merge.MAX_LINE_CHARS
    merged = merge.main(rag_chunks=[], web_chunks=found, max_web_results=1)
    uncut = merge.main(
        rag_chunks=[], web_chunks=[dict(found[0], content="C" * 1_000_000, title="T" * 50_000)], max_web_results=1
    )
    assert merged == uncut  # the merge node makes the same of a capped result


def test_a_page_with_too_many_json_values_is_an_error_before_it_is_parsed(mocked):
    mocked.add("POST", TAVILY_URL, body="[" + "0," * client.MAX_JSON_VALUES + "0]", content_type="application/json")
    with pytest.raises(errors.SearchError, match=r"^Tavily answered with more than 100,000 JSON values in one page$"):
        tavily(top_k=5)


def test_a_page_over_the_size_cap_is_an_error(mocked):
    mocked.add("POST", TAVILY_URL, json={"results": [], "padding": "x" * client.MAX_BODY_BYTES})
    with pytest.raises(errors.SearchError, match=r"^Tavily answered with a body over 4 MiB$"):
        tavily(top_k=5)


# --- memory: the process's peak with the largest pages allowed ----------------------------------------------------


CHILD = (
    """
import json, sys
from websearch import errors, http_client, providers
from websearch.search import run_search

base, name = sys.argv[1], sys.argv[2]
provider = providers.PROVIDERS[name]

def credentials(url):
    return {provider.url_field: url, **({provider.key_field: "%s"} if provider.key_field else {})}

def peak_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))

run_search(provider, "warm up", 1, "any", credentials(base + "/small"), http_client.Budget(20))  # imports, sockets
with open("/proc/self/clear_refs", "w") as refs:
    refs.write("5")  # the peak resident size starts again from now
before = peak_kib()
found, notes, made = run_search(provider, "largest pages", 50, "any", credentials(base), http_client.Budget(90))
print(json.dumps({"before": before, "peak": peak_kib(), "results": len(found), "requests": made}))
"""
    % KEY
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc/self/status")
@pytest.mark.parametrize("provider, shape", [("searxng", "values"), ("brave", "values"), ("searxng", "text")])
def test_the_peak_memory_of_a_search_over_the_largest_pages_is_bounded(provider, shape):
    LargestPages.shape = shape
    server = start_server(LargestPages)
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, origin(server), provider],
            cwd=ROOT,
            timeout=300,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    finally:
        stop_server(server)
    assert done.returncode == 0, done.stderr[-3000:]
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["requests"] == 10 and measured["results"] == 40  # all ten largest pages were read
    grown = (measured["peak"] - measured["before"]) / 1024
    print(f"{provider}/{shape}: peak grew by {grown:.1f} MiB over ten {client.MAX_BODY_BYTES // 2**20} MiB pages")
    assert grown < PEAK_LIMIT_MIB, f"the search's peak grew by {grown:.1f} MiB"
