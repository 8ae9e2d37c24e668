"""What the page's browser tests share (tests/endpoint/test_page_browser.py, test_page_drawing.py): the questions
and hostile texts, a tab recording the answer's every change (`Visit`), the expected citations computed without
the page, and protocol streams a test writes itself."""

import json
import re

from gcite import ROOT
from gcite.authoring.chatflows import PLUGIN_DSL
from gcite.local.runner import run_chatflow
from gcite.local.services import local_services

QUERY = "巡更时发现异常怎么上报？"
FOLLOW_UP = "会议室怎么预约？"
RESTRICTED_QUERY = "冷水机组供水温度设定是多少？"
RESTRICTED = ("暖通设备参数表", "冷水机组供水温度设定为")  # title and text of a document only some roles may read
NO_ANSWER_QUERY = "火星基地的氧气配额是多少？"
FAIL_WORD = "模型故障演练"
HOSTILE_TITLE = '<img src=x onerror="window.__pwned=1">[点我](javascript:window.__pwned=2) **粗**'
HOSTILE_TEXT = '电梯困人时<img src=x onerror="window.__pwned=3">请按下轿厢内的紧急呼叫按钮<b>值班人员</b>五分钟内到达。'
HALF_MARKER = re.compile(r"[\[【［]\s*[Cc]\s*[:：]|[\[【［]\s*[Cc]\s*$|[\[【［]\s*$")
SCREENSHOT = ROOT / "docs" / "page-cited-answer.png"

RECORDER = """
window.__texts = [];
new MutationObserver(() => {
  for (const body of document.querySelectorAll('.gc-answer')) window.__texts.push(body.textContent);
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


class Visit:
    """One browser tab on the page, recording every change of the answers' text and every chat response."""

    def __init__(self, browser, url, locale="zh-CN", setup=None):
        # bypass_csp: the page must be safe by itself (the CSP is a second wall), and Playwright's waits evaluate
        self.context = browser.new_context(locale=locale, viewport={"width": 1000, "height": 760}, bypass_csp=True)
        self.page = self.context.new_page()
        self.page.add_init_script(RECORDER)
        self.responses, self.requests, self.errors = [], [], []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("response", lambda r: self.responses.append(r) if r.url.endswith("/gcite/chat") else None)
        self.page.on("request", lambda r: self.requests.append(r) if r.url.endswith("/gcite/chat") else None)
        if setup:
            setup(self.page)
        self.page.goto(url)

    def as_user(self, served, user_id):
        self.page.wait_for_selector("#gc-user option", state="attached")
        self.page.select_option("#gc-user", served["users"][user_id]["token"])
        return self

    def ask(self, query):
        page = self.page
        count = page.locator(".gc-answer").count()
        page.fill("#gc-query", query)
        page.click("#gc-send")
        page.wait_for_function(
            f"document.querySelectorAll('.gc-answer').length > {count} && "
            "!document.querySelector('.gc-answer.gc-streaming')",
            timeout=60_000,
        )
        return page.locator(".gc-answer").nth(count)

    def received(self) -> str:
        """Every byte of every chat response the page received, as text."""
        return "".join(r.body().decode("utf-8") for r in self.responses)

    def close(self):
        assert self.errors == []
        self.context.close()


def expected_citations(query, roles):
    """The cited sources, computed without the endpoint or the page: the chatflow run on the local engine, its
    `cited_answer` node's structured `citations` (the tool's own validation of the model's text) looked up in the
    merge node's chunk list."""
    with local_services() as services:  # as `gcite serve` runs it: web results from the local search server
        events = list(run_chatflow(PLUGIN_DSL.read_text(encoding="utf-8"), query, {"user_roles": roles}, services))
    finished = {e["data"]["node_id"]: e["data"]["outputs"] for e in events if e["event"] == "node_finished"}
    chunks = {c["id"]: c for c in finished["merge"]["chunk_metadata"]}
    return [
        (c["index"], c["source_type"], c["document_title"], c["display_subtitle"], chunks[c["id"]])
        for c in finished["cite"]["citations"]
    ]


def chips(answer):
    return [
        (
            int(chip.get_attribute("data-number")),
            "web" if "gc-web" in chip.get_attribute("class") else "rag",
            chip.locator(".gc-title").text_content(),
            chip.locator(".gc-sub").text_content(),
        )
        for chip in answer.locator(".gc-source").all()
    ]


def superscripts(answer):
    return [int(n) for n in answer.locator(".gc-body .gc-num").evaluate_all("ns => ns.map(n => n.dataset.number)")]


def sse(events):
    return "".join(f"event: {n}\ndata: {json.dumps(d, ensure_ascii=False)}\n\n" for n, d in events).encode()


def answer_with(visit, events):
    """The chat endpoint answers the next questions with these protocol events (a stream the test writes)."""
    visit.page.unroute("**/gcite/chat")
    visit.page.route(
        "**/gcite/chat",
        lambda route: route.fulfill(status=200, body=sse(events), headers={"Content-Type": "text/event-stream"}),
    )


def source(n, **extra):
    return {
        "id": str(n),
        "source_type": "rag",
        "document_title": f"来源{n}",
        "display_subtitle": "",
        "site_name": "",
        "published_date": "",
        "url": "",
        "snippet": f"片段{n}",
        **extra,
    }


def citation(n, **extra):
    return {"number": n, "count": 1, **source(n), "support": 0.8, "weak": False, **extra}


def done(citations, status="cited"):
    return "done", {"status": status, "citations": citations, "invalid_ids": [], "conversation": "h", "message_id": "m"}
