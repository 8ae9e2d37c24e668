"""The plugin process stays within the memory manifest.yaml declares (issue 34, "Memory within the declared limit").

The real plugin process (`python -m main` over stdio, as the daemon runs it) gets 50 streams at once: web searches
reading the largest pages a provider may send (a SearXNG and a Brave stand-in on 127.0.0.1, every page at the size
and JSON-value caps, 10 pages a search), cited answers streamed by a model, validations of long answers, and
request lines of 10 MB. Its peak resident memory (VmHWM, its own and any child's) must stay under
`resource.memory` as manifest.yaml declares it. docs/security.md gives the figure measured."""

import json
import sys

import pytest

from gcite.local.plugin_process import PluginProcess, Session
from tests.support import ROOT
from tests.support.local_http import serving
from tests.support.plugin_memory import declared_memory, peak_rss
from tests.support.provider_pages import LargestPages
from tests.support.sdk import model_chunk

MB = 1024 * 1024
PROVIDER = "gcite"
REQUEST_LINE_BYTES = 10 * MB
KEY = "sk-MEMORY-7d1e0b94c2a6f358"
MODEL = {"provider": "langgenius/openai/openai", "model": "gpt-4o-mini", "model_type": "llm", "mode": "chat"}
CHUNK_TEXT = "Night patrols cover every floor of building A twice, at 22:00 and 02:00 (巡更每晚两次)。"
ANSWER = "Night patrols cover every floor twice [C:1], at 22:00 and 02:00 [C:2]. 巡更每晚两次 [C:3]。 "


def chunks(count: int, size: int) -> list[dict]:
    """`count` chunks of about `size` characters each, in the shape the merge node writes them."""
    text = (CHUNK_TEXT * (size // len(CHUNK_TEXT) + 1))[:size]
    return [
        {
            "id": str(n),
            "document_title": f"Patrol rules {n}",
            "source_type": "rag",
            "dataset_name": "Building KB",
            "url": f"https://kb.example.com/{n}.pdf",
            "content": text,
        }
        for n in range(1, count + 1)
    ]


def rag_chunks_of(line_bytes: int) -> list[dict]:
    """Knowledge-retrieval chunks whose request line is about `line_bytes` (UTF-8, as the daemon writes it)."""
    one = {"content": CHUNK_TEXT * 200, "metadata": {"segment_id": "s", "doc_metadata": {"access_roles": ",a,"}}}
    size = len(json.dumps(one, ensure_ascii=False).encode())
    return [one] * (line_bytes // size + 1)


def model(_request: dict):
    """A model writing a 12,000-character cited answer in 16-character deltas."""
    answer = ANSWER * (12_000 // len(ANSWER))
    for index in range(0, len(answer), 16):
        yield model_chunk(index // 16, answer[index : index + 16])


def line_bytes(data: dict) -> int:
    return len(json.dumps(data, ensure_ascii=False).encode())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc/<pid>/status")
def test_fifty_streams_with_the_largest_inputs_stay_within_the_declared_memory():
    declared = declared_memory()
    with serving(LargestPages) as base, PluginProcess(ROOT, sys.executable) as plugin:
        pid = plugin._process.pid  # noqa: SLF001 - the process whose memory is measured
        idle = peak_rss(pid)
        searches: list[tuple[Session, str]] = []
        for n in range(21):  # SearXNG at the value cap, SearXNG at the text cap, Brave at the value cap
            shape = "values" if n % 3 != 1 else "text"
            provider = "brave" if n % 3 == 2 else "searxng"
            credentials = (
                {"brave_api_key": KEY, "brave_base_url": f"{base}/{shape}"}
                if provider == "brave"
                else {"searxng_base_url": f"{base}/{shape}"}
            )
            parameters = {"query": f"patrol {n}", "provider": provider, "top_k": 50, "timeout_seconds": 100}
            searches.append((plugin.start_tool(PROVIDER, "web_search", parameters, credentials=credentials), provider))
        metadata = chunks(50, 16_000)
        context = "\n\n".join(f"[C:{c['id']}]\n{c['content']}" for c in metadata)
        answers = [
            plugin.start_tool(
                PROVIDER,
                "cited_answer",
                {"model": MODEL, "query": "When are the patrols?", "context": context, "chunk_metadata": metadata},
                llm_handler=model,
            )
            for _ in range(20)
        ]
        long_answer = ANSWER * (1 * MB // len(ANSWER))
        validations = [
            plugin.start_tool(PROVIDER, "validate_citations", {"answer": long_answer, "chunk_metadata": metadata})
            for _ in range(6)
        ]
        rag = rag_chunks_of(REQUEST_LINE_BYTES)
        large = [
            ("merge_chunks", {"rag_chunks": rag}),
            ("filter_chunks", {"rag_chunks": rag, "user_roles": "a"}),
            ("merge_chunks", {"rag_chunks": json.dumps(rag, ensure_ascii=False)}),  # as a JSON text
        ]
        assert all(line_bytes(parameters) >= REQUEST_LINE_BYTES for _, parameters in large)
        ten_mb = [plugin.start_tool(PROVIDER, tool, parameters) for tool, parameters in large]
        calls = [call for call, _ in searches] + answers + validations + ten_mb
        assert len(calls) == 50
        plugin.wait([call.session_id for call in calls], timeout=240)
        peak = peak_rss(pid)
        assert plugin.alive

    failed = [call.error for call in calls if call.error]
    assert not failed, failed[:3]
    for call, provider in searches:  # every search read all ten largest pages (4 new results each)
        assert call.variables["result_count"] == 40, (provider, call.variables.get("notes"))
    for call in answers:
        assert call.variables["answer"].count("<sup") >= 3 * (12_000 // len(ANSWER)) - 3
    assert all(call.variables["status"] == "cited" for call in validations)
    assert ten_mb[0].variables["chunk_count"] == ten_mb[2].variables["chunk_count"] > 0
    assert ten_mb[1].variables["kept_count"] == len(rag)
    print(f"peak resident memory {peak / MB:.0f} MiB (idle {idle / MB:.0f} MiB); declared {declared / MB:.0f} MiB")
    assert peak > idle + 64 * MB  # the load did reach the process
    assert peak < declared, f"the plugin peaked at {peak / MB:.0f} MiB, over the declared {declared / MB:.0f} MiB"
