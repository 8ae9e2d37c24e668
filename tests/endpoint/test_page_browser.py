"""The reference page in headless Chromium (Debian's `chromium`, driven by Playwright) against `gcite serve`.

What a person sees: the answer streaming with superscript numbers in order and never a marker or part of one, the
sources bar holding exactly the cited sources, the popover, hostile source text shown as text, a restricted source
never reaching a user without the role, the insufficient-evidence and error states, a second turn.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from citations.validate import main as validate
from gcite import ROOT
from gcite.authoring.chatflows import PLUGIN_DSL
from gcite.local.knowledge import load_json
from gcite.local.runner import run_chatflow
from gcite.local.services import local_services
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

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

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists() and not os.environ.get("CI"),
        reason="Debian's chromium is not installed (make test installs it; in CI this fails)",
    ),
]

RECORDER = """
window.__texts = [];
new MutationObserver(() => {
  for (const body of document.querySelectorAll('.gc-answer')) window.__texts.push(body.textContent);
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """`python -m gcite serve` with a knowledge base that adds a hostile document, stopped at the end."""
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
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gcite",
            "serve",
            "--port",
            "0",
            "--pace",
            "0.01",
            "--knowledge-base",
            str(path),
            "--fail-on",
            FAIL_WORD,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = process.stdout.readline()
        assert first.startswith("G-Cite page:"), first + process.stderr.read()
        page_url = first.split(":", 1)[1].strip()
        base = page_url.split("/gcite/")[0]
        origin = base.split("/e/")[0]
        users = {u["id"]: u for u in requests.get(origin + "/local/users", timeout=30).json()}
        yield {"page": page_url, "base": base, "origin": origin, "users": users}
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture(scope="module")  # one sync Playwright at a time: other browser test modules start their own
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


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
    """The cited sources, computed without the endpoint or the page: the chatflow's raw LLM text through the
    validator with the merge node's chunk list."""
    with local_services() as services:  # as `gcite serve` runs it: web results from the local search server
        events = list(run_chatflow(PLUGIN_DSL.read_text(encoding="utf-8"), query, {"user_roles": roles}, services))
    finished = {e["data"]["node_id"]: e["data"]["outputs"] for e in events if e["event"] == "node_finished"}
    result = validate(finished["llm"]["text"], finished["merge"]["chunk_metadata"])
    chunks = {c["id"]: c for c in finished["merge"]["chunk_metadata"]}
    return [
        (c["index"], c["source_type"], c["document_title"], c["display_subtitle"], chunks[c["id"]])
        for c in result["citations"]
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


def test_cited_answer_streams_with_numbers_in_order_and_exact_sources(served, browser):
    expected = expected_citations(QUERY, "物业经理")
    visit = Visit(browser, served["page"]).as_user(served, "wang")
    answer = visit.ask(QUERY)
    texts = visit.page.evaluate("window.__texts")
    assert len(set(texts)) >= 5, "the answer did not stream"
    assert [t for t in texts if HALF_MARKER.search(t)] == []
    assert all("- [C:" not in t for t in texts)
    body = answer.locator(".gc-body").text_content()
    assert body.startswith("巡检过程中如发现异常") and "[" not in body

    numbers = superscripts(answer)
    first_seen = list(dict.fromkeys(numbers))
    assert first_seen == list(range(1, len(first_seen) + 1)) and len(first_seen) == 2
    assert chips(answer) == [e[:4] for e in expected]

    chip = answer.locator(".gc-source").nth(1)  # the web source: it has an https URL
    chip.click()
    popover = visit.page.locator("#gc-popover")
    assert popover.is_visible()
    assert popover.locator(".gc-pop-title").text_content() == expected[1][2]
    subtitle = popover.locator(".gc-pop-sub").text_content()  # the site and date once, though the subtitle holds them
    assert subtitle == expected[1][3] and subtitle.count(expected[1][4]["site_name"]) == 1
    assert popover.locator(".gc-pop-snippet").text_content() == expected[1][4]["content"][:300]
    link = popover.locator("a")
    assert link.count() == 1
    assert (link.get_attribute("href"), link.get_attribute("target"), link.get_attribute("rel")) == (
        expected[1][4]["url"],
        "_blank",
        "noopener noreferrer",
    )
    shot = visit.page.screenshot(full_page=True)
    assert len(shot) > 10_000
    if os.environ.get("GCITE_UPDATE_SCREENSHOT"):
        SCREENSHOT.parent.mkdir(exist_ok=True)
        SCREENSHOT.write_bytes(shot)

    answer.locator(".gc-source").nth(0).click()  # the knowledge-base source: oss:// URL, so no link
    assert popover.locator(".gc-pop-title").text_content() == expected[0][2]
    assert popover.locator("a").count() == 0
    visit.page.keyboard.press("Escape")
    assert not popover.is_visible()
    visit.close()


def test_hostile_source_text_is_shown_as_text(served, browser):
    visit = Visit(browser, served["page"]).as_user(served, "guest")
    answer = visit.ask("电梯困人怎么办？")
    assert "<img src=x" in answer.locator(".gc-body").text_content()
    chip = answer.locator(".gc-source", has_text="[点我]")
    assert chip.locator(".gc-title").text_content() == HOSTILE_TITLE
    chip.click()
    popover = visit.page.locator("#gc-popover")
    assert popover.locator(".gc-pop-title").text_content() == HOSTILE_TITLE
    assert popover.locator("a").count() == 0  # its javascript: URL never becomes a link
    assert visit.page.locator("img, b, strong, a[href^='javascript']").count() == 0
    assert visit.page.evaluate("window.__pwned") is None
    visit.close()


def test_restricted_source_never_reaches_a_user_without_the_role(served, browser):
    guest = Visit(browser, served["page"]).as_user(served, "guest")
    guest.ask(RESTRICTED_QUERY)
    seen, received = guest.page.content(), guest.received()
    assert len(received) > 100
    for text in RESTRICTED:
        assert text not in seen and text not in received
    guest.close()
    manager = Visit(browser, served["page"]).as_user(served, "wang")  # the same question with the role
    answer = manager.ask(RESTRICTED_QUERY)
    assert "暖通设备参数表（内部）" in [c[2] for c in chips(answer)]
    assert RESTRICTED[1] in manager.received()
    manager.close()


def test_insufficient_evidence_is_said_once(served, browser):
    visit = Visit(browser, served["page"]).as_user(served, "wang")
    answer = visit.ask(NO_ANSWER_QUERY)
    said = answer.locator(".gc-body").text_content()
    assert len(said) > 3
    notice = answer.locator(".gc-insufficient")
    assert notice.count() == 1 and notice.text_content() == said  # the model's own words, shown as the notice
    assert "现有资料无法回答这个问题" not in answer.text_content()  # and not said again by the page
    assert answer.locator(".gc-sources").count() == 0

    answer_with(visit, [("ready", {}), ("sources", {"sources": []}), done([], "insufficient_evidence")])
    answer = visit.ask("另一个问题")  # the model said nothing: the page says it, once
    assert answer.locator(".gc-insufficient").count() == 1
    assert answer.text_content() == "现有资料无法回答这个问题。"
    visit.close()


def test_error_states(served, browser):
    visit = Visit(browser, served["page"]).as_user(served, "wang")
    answer = visit.ask(f"{FAIL_WORD}：巡更怎么打卡？")
    error = answer.locator(".gc-error")
    assert error.is_visible() and error.text_content()
    page_text = visit.page.content()
    assert "RuntimeError" not in page_text and "simulated" not in page_text
    assert "RuntimeError" not in visit.received()
    visit.close()

    forged = Visit(
        browser, served["page"].replace("#local", "#token=eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."), locale="en-US"
    )
    assert forged.page.locator("#gc-send").text_content() == "Ask"
    answer = forged.ask(QUERY)
    assert answer.locator(".gc-error").text_content().startswith("Your session is not valid")
    assert "token=" not in forged.page.url  # the token left the address bar
    forged.close()


def test_second_turn_continues_the_conversation(served, browser):
    visit = Visit(browser, served["page"]).as_user(served, "wang")
    first = visit.ask(QUERY)
    first_text = first.text_content()
    second = visit.ask(FOLLOW_UP)
    bodies = [json.loads(r.post_data) for r in visit.requests]
    done = [
        json.loads(block.split("data: ", 1)[1])
        for block in visit.responses[0].body().decode().split("\n\n")
        if block.startswith("event: done")
    ][0]
    assert bodies == [{"query": QUERY}, {"query": FOLLOW_UP, "conversation": done["conversation"]}]
    assert visit.responses[1].status == 200
    assert first.text_content() == first_text
    assert "会议室须提前在楼宇小程序预约" in second.locator(".gc-body").text_content()
    assert superscripts(second)[0] == 1
    assert chips(second)[0][2] == "会议室使用规范"
    visit.close()


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


def test_weak_citations_are_hollow_and_can_be_hidden_and_replace_redraws(served, browser):
    source = {
        "id": "1",
        "source_type": "rag",
        "document_title": "甲",
        "display_subtitle": "库",
        "site_name": "",
        "published_date": "",
        "url": "",
        "snippet": "甲的片段",
    }
    web = {**source, "id": "2", "source_type": "web", "document_title": "乙", "url": "https://example.com/b"}
    same_document = {**source, "id": "3", "snippet": "甲的另一段"}
    events = [
        ("ready", {}),
        ("sources", {"sources": [source, web, same_document]}),
        ("text", {"text": "旧文本"}),
        ("cite", {"numbers": [1], "ids": ["1"], "new": [1]}),
        ("replace", {"text": "新的**正文**"}),
        ("text", {"text": "第一句"}),
        ("cite", {"numbers": [1, 2], "ids": ["1", "2"], "new": [1, 2]}),
        ("text", {"text": "第二句"}),
        ("cite", {"numbers": [3], "ids": ["3"], "new": [3]}),
        (
            "done",
            {
                "status": "cited",
                "invalid_ids": [],
                "conversation": "h",
                "message_id": "m",
                "citations": [
                    {"number": 1, "id": "1", "count": 1, **source, "support": 0.8, "weak": False},
                    {"number": 2, "id": "2", "count": 1, **web, "support": 0.05, "weak": True},
                    {"number": 3, "id": "3", "count": 1, **same_document, "support": 0.7, "weak": False},
                ],
            },
        ),
    ]
    body = "".join(f"event: {n}\ndata: {json.dumps(d, ensure_ascii=False)}\n\n" for n, d in events)
    visit = Visit(browser, served["page"]).as_user(served, "wang")
    visit.page.route(
        "**/gcite/chat",
        lambda route: route.fulfill(status=200, body=body.encode(), headers={"Content-Type": "text/event-stream"}),
    )
    answer = visit.ask("任意问题")
    assert answer.locator(".gc-body").text_content() == "新的正文第一句12第二句3"
    assert answer.locator(".gc-body strong").text_content() == "正文"
    # two passages of one document share a chip; each number opens its own passage
    assert [c.get_attribute("data-numbers") for c in answer.locator(".gc-source").all()] == ["1,3", "2"]
    answer.locator(".gc-source .gc-num", has_text="3").click()
    assert visit.page.locator("#gc-popover .gc-pop-snippet").text_content() == "甲的另一段"
    visit.page.keyboard.press("Escape")
    weak = answer.locator(".gc-body .gc-num.gc-weak")
    assert weak.count() == 1 and weak.text_content() == "2" and "可能不支持" in weak.get_attribute("title")
    toggle = visit.page.locator("#gc-hide-weak")
    assert toggle.is_visible()
    toggle.check()
    assert not weak.is_visible() and not answer.locator(".gc-source.gc-weak").is_visible()
    assert answer.locator(".gc-body .gc-num").nth(0).is_visible()
    visit.close()


EMBEDDER = """<!doctype html><meta charset="utf-8"><title>host site</title>
<iframe id="gcite" src="{src}" style="width:900px;height:600px"></iframe>
<script>
  const frame = document.getElementById("gcite");
  window.messages = [];
  window.addEventListener("message", (e) => {{
    window.messages.push([e.origin, e.data && e.data.type]);
    if (e.source === frame.contentWindow && e.data && e.data.type === "gcite:ready")
      frame.contentWindow.postMessage({{type: "gcite:token", token: {token}}}, "{target}");
  }});
  frame.addEventListener("load", () => frame.contentWindow.postMessage({{type: "gcite:token", token: {token}}}, "*"));
</script>"""


def embed(browser, served, host, parent, user="wang"):
    """A page on `host` (served by the test itself) that frames the chat page and sends the token by postMessage."""
    context = browser.new_context(locale="zh-CN")
    page = context.new_page()
    src = served["page"].replace("#local", f"#parent={parent}")
    html = EMBEDDER.format(src=src, token=json.dumps(served["users"][user]["token"]), target=served["origin"])
    page.route(
        f"{host}/embed.html", lambda route: route.fulfill(status=200, body=html, headers={"Content-Type": "text/html"})
    )
    page.goto(f"{host}/embed.html")
    return context, page


def test_embedded_page_takes_the_token_by_postmessage_from_its_parent_only(served, browser):
    context, page = embed(browser, served, served["origin"], served["origin"])  # an allowed origin
    frame = page.frame_locator("#gcite")
    frame.locator("#gc-query").fill(QUERY)
    frame.locator("#gc-send").click()
    frame.locator(".gc-answer:not(.gc-streaming) .gc-sources").wait_for()
    assert frame.locator(".gc-source").count() == 2
    assert [served["origin"], "gcite:ready"] in page.evaluate("window.messages")
    context.close()

    # the fragment names another parent: the page ignores the token its real parent sends
    context, page = embed(browser, served, served["origin"], "https://other.example")
    frame = page.frame_locator("#gcite")
    frame.locator("#gc-ask").wait_for()
    page.wait_for_timeout(300)
    assert frame.locator("#gc-send").is_disabled()
    assert page.evaluate("window.messages") == []  # "ready" went to https://other.example only
    context.close()

    # a site not in the allowed origins cannot frame the page at all (CSP frame-ancestors)
    context, page = embed(browser, served, "http://evil.example", "http://evil.example")
    page.wait_for_load_state("load")
    child = page.frames[1]
    assert child.url.startswith("chrome-error://") and child.locator("#gc-ask").count() == 0
    context.close()


def test_without_a_token_the_page_says_how_to_get_one(served, browser):
    visit = Visit(browser, served["page"].replace("#local", ""), locale="en-US")
    notice = visit.page.locator("#gc-notice")
    notice.wait_for()
    assert notice.text_content().startswith("No access token") and visit.page.locator("#gc-send").is_disabled()
    visit.close()


# --- drawing: numbering after every construct, appending, linear cost -------------------------------------------

MODULE = "import(new URL('gcite.js', document.baseURI).href)"
# "@" is a citation; each construct below is followed by one (or holds one)
CONSTRUCTS = (
    "## 标题@\n"
    "巡检发现异常应立即上报@。\n"
    "```python@\n"  # a fence's info string
    "report('异常')@\n"  # inside a code block
    "```@\n"  # right after a closing code fence
    "- 列表项@\n"
    "  续行@\n"  # a list item's continuation
    "1. 有序项@\n"
    "**加粗@**与*强调@*，`代码@`后@\n"
    "**未闭合的加粗@\n"
    "> 引用@\n"
    "| 表 | 格 |@\n"
    "---@\n"
    "[链接](https://example.com)@\n"
    "\n"
    "```\n"
    "```\n"
    "@段落@\n"
    "```\n"
    "未闭合的代码块@"
)
SEQUENCE_RECORDER = """
window.__sequences = [];
new MutationObserver(() => window.__sequences.push(
  [...document.querySelectorAll('.gc-body .gc-num')].map((n) => n.dataset.number).join(','))
).observe(document, {subtree: true, childList: true, characterData: true});
"""


def cited_stream(text, piece=3):
    """`text` ("@" = a citation) as protocol events: deltas of `piece` characters, citation k numbered k, source k."""
    count = text.count("@")
    events = [("ready", {}), ("sources", {"sources": [source(n) for n in range(1, count + 1)]})]
    for k, part in enumerate(text.split("@")):
        events += [("text", {"text": part[i : i + piece]}) for i in range(0, len(part), piece)]
        if k < count:
            events.append(("cite", {"numbers": [k + 1], "ids": [str(k + 1)], "new": [k + 1]}))
    return events + [done([citation(n) for n in range(1, count + 1)])]


def test_numbering_stays_right_after_every_markdown_construct(served, browser):
    count = CONSTRUCTS.count("@")
    visit = Visit(browser, served["page"]).as_user(served, "wang")
    visit.page.add_init_script(SEQUENCE_RECORDER)
    visit.page.reload()
    visit.as_user(served, "wang")
    answer_with(visit, cited_stream(CONSTRUCTS))
    answer = visit.ask("任意问题")
    assert superscripts(answer) == list(range(1, count + 1))
    full = ",".join(map(str, range(1, count + 1)))
    sequences = visit.page.evaluate("window.__sequences")
    assert len(set(sequences)) > count // 2  # it streamed
    assert [s for s in sequences if not (full + ",").startswith(s + ",") and s] == []  # never a wrong number
    assert answer.locator("pre").count() == 3 and "report('异常')" in answer.locator("pre").first.text_content()
    popover = visit.page.locator("#gc-popover")
    for k in range(1, count + 1):  # each number opens its own source
        answer.locator(f".gc-body .gc-num[data-number='{k}']").click()
        assert popover.locator(".gc-pop-title").text_content() == f"来源{k}", k
        visit.page.keyboard.press("Escape")
    visit.close()


INCREMENTAL = (
    """async ([texts, seed]) => {
  const { Markdown } = await %s;
  let state = seed;
  const random = () => (state = (state * 16807) %% 2147483647) / 2147483647;
  const draw = (text, pieces) => {
    const root = document.createElement('div');
    const markdown = new Markdown(root, (k) => Object.assign(document.createElement('sup'), {textContent: k}));
    for (const piece of pieces) markdown.feed(piece);
    return root.innerHTML;  // the test reads the DOM as HTML to compare it; the page never writes HTML
  };
  return texts.map((text) => {
    const whole = draw(text, [text]);
    const chars = draw(text, [...text]);
    const pieces = [];
    for (let i = 0; i < text.length;) {
      const n = 1 + Math.floor(random() * 7);
      pieces.push(text.slice(i, i + n));
      i += n;
    }
    return [whole, chars, draw(text, pieces), (whole.match(/<sup>/g) || []).length];
  });
}"""
    % MODULE
)


def test_appending_draws_what_drawing_the_whole_text_draws(served, browser):
    visit = Visit(browser, served["page"]).as_user(served, "wang")
    texts = [
        CONSTRUCTS.replace("@", "\ue000"),
        "第一段\n\n- a\n- b\n  c\n\n1. x\n2. y\n\n# 题\n*em* __strong__ `co`de`",
        "```\nno end",
        "**a** *b* _c_ **d*",
        "\n\n\n",
        "x\n```js\ny\n```\n\n\ue000\ue000。\n",
        "巡检发现异常应立即上报\ue000。" * 40 + "\n- " + "列表项很长\ue000，" * 30 + "\n   续行\ue000」。",
        "5 * 3 = 15, a_b and * c " * 20 + "**粗\ue000**。*斜*`码\ue000`" * 10 + "未闭合*" + "后文" * 30,
        "#" * 7 + " 不是标题 " * 5 + "\n12345678901. 不是列表\n1234. 是列表 " * 3 + "\n      ```\n代码\n  ```\ue000。",
        "**" + "很长的未闭合加粗" * 40 + "\ue000。",
        "` 码 `" * 20 + "_a_b_" * 20,
    ]
    drawn = visit.page.evaluate(INCREMENTAL, [texts, 7])
    for text, (whole, chars, pieces, sups) in zip(texts, drawn):
        assert chars == whole and pieces == whole  # fed a character at a time, or in random pieces
        assert sups == text.count("\ue000")  # every citation drawn, whatever construct it is in or after
    visit.close()


STREAM_COST = (
    """async ([sizes, observe, oneLine, layout]) => {
  const { Answer } = await %s;
  const doc = "## 巡更异常上报\\n巡检过程中如发现异常情况，应立即通过对讲机向值班经理报告@。" +
    "同时在巡更系统中登记异常的" +
    "时间、地点和现象@，必要时拍照留存。\\n\\n- 消防通道被占用：先劝离，再记录@；\\n- 设备异常：**不要自行处理**，" +
    "联系运维工程师@。\\n\\n```\\nreport(`巡更`)\\n```@\\n\\nPatrol staff report anomalies to the duty manager@, " +
    "then log the *time* and place@.\\n\\n";
  const pieces = (oneLine ? doc.replaceAll("\\n", " ") : doc).split(/(@)/)
    .flatMap((part) => part === "@" ? [null] : part.match(/[^]{1,4}/g) || []);
  const sources = [1, 2, 3, 4, 5].map((n) => ({ id: String(n), source_type: n %% 2 ? "rag" : "web",
                                               document_title: `源${n}` }));
  const run = async (n) => {  // n events, 50 per task (a network read), each task ending with the browser's layout
    const box = document.getElementById("gc-thread").appendChild(document.createElement("div"));
    const answer = new Answer(box, document.getElementById("gc-popover"));
    answer.apply("sources", { sources });
    const observer = new MutationObserver(() => {});
    let busy = 0, added = 0, cites = 0;
    if (observe) observer.observe(box, { subtree: true, childList: true });
    for (let i = 0; i < n && busy < 30000;) {  // a quadratic page would take minutes: stop after 30 s
      const start = performance.now();
      for (let k = 0; k < 50 && i < n; k++, i++) {
        const piece = pieces[i %% pieces.length];
        const c = (cites %% 5) + 1;
        if (piece === null) { cites++; answer.apply("cite", { numbers: [c], ids: [String(c)] }); }
        else answer.apply("text", { text: piece });
      }
      if (layout) box.getBoundingClientRect();
      busy += performance.now() - start;
      for (const record of observer.takeRecords()) added += record.addedNodes.length;
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    const start = performance.now();  // and the end: the numbers take the citations' flags, the bar their sources
    answer.apply("done", { status: "cited",
                           citations: sources.map((s, i) => ({ ...s, number: i + 1, weak: i === 2 })) });
    if (layout) box.getBoundingClientRect();
    busy += performance.now() - start;
    for (const record of observer.takeRecords()) added += record.addedNodes.length;
    observer.disconnect();
    const length = box.textContent.length;
    box.remove();
    return { n, ms: busy, added, length, stopped: busy >= 30000 };
  };
  const out = [];
  for (const n of sizes) out.push(await run(n));
  return out;
}"""
    % MODULE
)


def test_streaming_cost_is_linear_in_the_answer(served, browser, capsys):
    """20,000 deltas (and 5,000 in the same run): the page's main-thread time per delta does not grow with the
    answer. A full redraw per event made it quadratic (20,000 deltas: 37 s; 5,000 → 20,000 ×16). Ratios in one run,
    the fastest of three, so a loaded machine does not decide; the inserted nodes are counted, not timed."""
    visit = Visit(browser, served["page"]).as_user(served, "wang")
    nodes = {r["n"]: r for r in visit.page.evaluate(STREAM_COST, [[5000, 20000], True, False, True])}
    assert not any(r["stopped"] for r in nodes.values()), nodes
    assert nodes[20000]["length"] > 50_000
    # the DOM work, counted: the nodes inserted per delta stay the same (a redraw inserts the whole answer each time)
    assert nodes[20000]["added"] / nodes[5000]["added"] < 4.5 and nodes[20000]["added"] < 20 * 20000
    # one line: the unfinished line is all of the answer. There the browser's own layout of one paragraph grows with
    # the paragraph (not the page's doing), so that shape measures the page's script alone.
    for shape, one_line in (("paragraphs, script and layout", False), ("one line, script", True)):
        runs = visit.page.evaluate(STREAM_COST, [[5000, 20000] * 3, False, one_line, not one_line])
        assert not any(r["stopped"] for r in runs), runs
        small = min(r["ms"] for r in runs if r["n"] == 5000)
        large = min(r["ms"] for r in runs if r["n"] == 20000)
        with capsys.disabled():
            print(
                f"\n{shape}: 20,000 deltas {large:.0f} ms of main thread, 5,000 {small:.0f} ms: ratio "
                f"{large / small:.1f} (linear 4, quadratic 16)",
                end="",
            )
        assert large / small < 10, shape  # linear is 4; quadratic is 16
    with capsys.disabled():
        print(f"; nodes inserted: {nodes[20000]['added']} / {nodes[5000]['added']}")
    visit.close()


# --- what the reader sees: punctuation, errors, examples, chips, why a citation is weak --------------------------

LINE_BREAKS = (
    """async ([glued]) => {
  const { Answer } = await %s;
  const box = document.getElementById("gc-thread").appendChild(document.createElement("div"));
  const answer = new Answer(box, document.getElementById("gc-popover"));
  answer.apply("sources", { sources: [{ id: "1", document_title: "甲" }, { id: "2", document_title: "乙" }] });
  answer.apply("text", { text: "巡检过程中如发现异常情况应立即上报值班经理" });
  answer.apply("cite", { numbers: [1, 2], ids: ["1", "2"] });
  answer.apply("text", { text: "。随后在系统中登记时间和地点" });
  answer.apply("cite", { numbers: [1], ids: ["1"] });
  answer.apply("text", { text: "」，完毕" });
  if (!glued) for (const glue of box.querySelectorAll(".gc-glue")) glue.style.whiteSpace = "normal";
  const middle = (rect) => (rect.top + rect.bottom) / 2;
  const wraps = [];
  for (let width = 100; width <= 480; width++) {
    box.style.width = `${width}px`;
    for (const glue of box.querySelectorAll(".gc-glue")) {
      const range = document.createRange();
      range.selectNodeContents(glue.lastChild);  // the punctuation after the superscript
      const punctuation = middle(range.getBoundingClientRect());
      const numbers = [...glue.querySelectorAll(".gc-num")].map((n) => middle(n.getBoundingClientRect()));
      if (numbers.some((n) => Math.abs(n - punctuation) > 10) || Math.max(...numbers) - Math.min(...numbers) > 2) {
        wraps.push(width);
      }
    }
  }
  box.remove();
  return wraps;
}"""
    % MODULE
)


def test_closing_punctuation_never_wraps_alone_after_a_superscript(served, browser):
    visit = Visit(browser, served["page"]).as_user(served, "wang")
    # without the glue, some widths put "。" or "」，" (or the second number) alone at the start of a line ...
    assert len(visit.page.evaluate(LINE_BREAKS, [False])) > 3
    assert visit.page.evaluate(LINE_BREAKS, [True]) == []  # ... with it, none of 381 widths does
    answer = visit.ask(QUERY)  # a real answer: its superscripts sit in glue spans with their punctuation
    glued = answer.locator(".gc-body .gc-glue").evaluate_all("gs => gs.map((g) => g.textContent)")
    assert glued and all(re.fullmatch(r"\S?\d+[。，；：、！？」）.,;:!?)]*", g) for g in glued), glued
    visit.close()


def test_an_unknown_error_code_shows_the_pages_message(served, browser):
    visit = Visit(browser, served["page"]).as_user(served, "wang")
    for code in ("__proto__", "constructor", "toString", "hasOwnProperty"):
        answer_with(visit, [("ready", {}), ("error", {"code": code})])
        assert visit.ask("任意问题").locator(".gc-error").text_content() == "服务器拒绝了请求。", code
    answer_with(visit, [("ready", {}), ("error", {"code": "__proto__", "message": {"a": 1}})])
    assert visit.ask("任意问题").locator(".gc-error").text_content() == "服务器拒绝了请求。"
    answer_with(visit, [("ready", {}), ("error", {"code": "app_unavailable", "message": "The app is unavailable."})])
    assert visit.ask("任意问题").locator(".gc-error").text_content() == "The app is unavailable."
    assert "[object" not in visit.page.content()
    visit.close()


EXAMPLES = {
    "wang": ["巡更时发现异常怎么上报？", "冷水机组供水温度设定是多少？", "会议室怎么预约？", "第四个不显示"],
    "guest": ["电梯困人怎么办？", "会议室怎么预约？"],
    "chen": {"zh": ["访客怎么登记？"], "en": ["How do I register a visitor?", "How do I book a meeting room?"]},
}


def with_examples(page):
    """/local/users as `gcite serve` lists it, each sample user with example questions (`examples`)."""

    def handle(route):
        response = route.fetch()
        users = [{**u, "examples": EXAMPLES.get(u["id"], [])} for u in response.json()]
        route.fulfill(response=response, json=users)

    page.route("**/local/users", handle)


def test_an_empty_page_offers_the_users_example_questions(served, browser):
    visit = Visit(browser, served["page"], setup=with_examples).as_user(served, "wang")
    examples = visit.page.locator("#gc-examples")
    examples.wait_for()
    assert examples.locator(".gc-example").all_text_contents() == EXAMPLES["wang"][:3]
    assert examples.text_content().startswith("可以这样问")
    examples.locator(".gc-example").nth(0).click()  # clicking one asks it
    visit.page.wait_for_function(
        "document.querySelector('.gc-answer') && !document.querySelector('.gc-answer.gc-streaming')", timeout=60_000
    )
    assert json.loads(visit.requests[0].post_data) == {"query": EXAMPLES["wang"][0]}
    assert visit.page.locator(".gc-question").text_content() == EXAMPLES["wang"][0]
    assert visit.page.locator(".gc-body .gc-num").count() > 0 and not examples.is_visible()
    visit.as_user(served, "guest")  # another user: a new, empty conversation with their examples
    assert visit.page.locator(".gc-turn").count() == 0
    assert examples.locator(".gc-example").all_text_contents() == EXAMPLES["guest"]
    visit.as_user(served, "chen")  # one list per language: the page's
    assert examples.locator(".gc-example").all_text_contents() == EXAMPLES["chen"]["zh"]
    visit.as_user(served, "li")  # no examples: nothing offered
    assert not examples.is_visible()
    visit.close()
    english = Visit(browser, served["page"], locale="en-US", setup=with_examples).as_user(served, "chen")
    assert english.page.locator("#gc-examples .gc-example").all_text_contents() == EXAMPLES["chen"]["en"]
    assert english.page.locator("#gc-examples").text_content().startswith("Try asking")
    english.close()


def test_source_chips_use_their_room_before_cutting_a_title(served, browser):
    fits = "物业服务中心关于地下车库夜间巡更路线与异常情况上报流程的补充说明（第二版）"
    too_long = "超长标题" * 60
    visit = Visit(browser, served["page"]).as_user(served, "wang")
    answer_with(
        visit,
        [
            ("ready", {}),
            ("sources", {"sources": [source(1), source(2)]}),
            ("text", {"text": "答案"}),
            ("cite", {"numbers": [1, 2], "ids": ["1", "2"]}),
            done(
                [
                    citation(1, document_title=fits, display_subtitle="库 · 2026-01-01"),
                    citation(2, document_title=too_long, display_subtitle="很长的副标题" * 20),
                ]
            ),
        ],
    )
    answer = visit.ask("任意问题")
    sizes = answer.locator(".gc-source").evaluate_all("""chips => chips.map((chip) => {
      const title = chip.querySelector('.gc-title');
      return [title.scrollWidth, title.clientWidth, chip.getBoundingClientRect().right,
              chip.parentNode.getBoundingClientRect().right];
    })""")
    (scroll, client, _, _), (long_scroll, long_client, right, bar_right) = sizes
    assert client > 400 and scroll <= client  # a title that fits the bar is shown whole
    assert long_scroll > long_client > 400 and right <= bar_right + 0.5  # a longer one is cut at the bar's edge
    visit.close()


def test_a_weak_citations_popover_says_why(served, browser):
    weak = [
        citation(
            1,
            weak=True,
            support=0.1,
            reasons=[
                {"kind": "missing", "items": ["460 mm", "橡木"]},
                {"kind": "number", "claim": "7", "source": "12"},
            ],
            reason='missing: ["460 mm", "橡木"]; number: 7 ≠ 12',
        ),
        citation(
            2,
            weak=True,
            support=0.2,
            reasons=[{"kind": "antonym", "claim": "末", "source": "首"}, {"kind": "negation", "claim": "不"}],
        ),
        citation(3, weak=True, support=0.2, reason="roles: a比b/b比a"),  # only the one-line text
        citation(4, weak=True, support=0.2, reasons=[{"kind": "__proto__"}]),
        citation(5, support=0.9, reasons=[]),
    ]
    events = [("ready", {}), ("sources", {"sources": [source(n) for n in range(1, 6)]})]
    for n in range(1, 6):
        events += [("text", {"text": f"第{n}句"}), ("cite", {"numbers": [n], "ids": [str(n)]})]
    events.append(done(weak))
    expected = {
        "zh-CN": [
            ["来源中未找到：“460 mm”、“橡木”", "数字不同：句中是 7，来源是 12"],
            ["意思相反：句中是“末”，来源是“首”", "句子作了否定（“不”），来源没有"],
            ["roles: a比b/b比a"],
            ["__proto__"],
            [],
        ],
        "en-US": [
            ["Not found in the source: “460 mm”, “橡木”", "Another number: 7 in the sentence, 12 in the source"],
            [
                "Opposite words: “末” in the sentence, “首” in the source",
                "The sentence negates it (“不”), the source does not",
            ],
            ["roles: a比b/b比a"],
            ["__proto__"],
            [],
        ],
    }
    for locale, lines in expected.items():
        visit = Visit(browser, served["page"], locale=locale).as_user(served, "wang")
        answer_with(visit, events)
        answer = visit.ask("any question")
        popover = visit.page.locator("#gc-popover")
        for n, want in enumerate(lines, 1):
            answer.locator(f".gc-body .gc-num[data-number='{n}']").click()
            assert popover.locator(".gc-pop-reasons li").all_text_contents() == want, (locale, n)
            assert popover.locator(".gc-pop-weak").count() == (1 if n < 5 else 0)
            visit.page.keyboard.press("Escape")
        visit.close()


def test_a_40000_character_reason_is_cut_and_wrapped_in_the_popover(served, browser):
    huge = "x" * 40_000
    weak = [
        citation(1, weak=True, support=0.1, reasons=[{"kind": "missing", "items": [huge]}]),
        citation(2, weak=True, support=0.1, reason=huge),
    ]
    events = [("ready", {}), ("sources", {"sources": [source(n) for n in (1, 2)]})]
    for n in (1, 2):
        events += [("text", {"text": f"第{n}句"}), ("cite", {"numbers": [n], "ids": [str(n)]})]
    events.append(done(weak))
    visit = Visit(browser, served["page"], locale="en-US").as_user(served, "wang")
    answer_with(visit, events)
    answer = visit.ask("any question")
    popover = visit.page.locator("#gc-popover")
    for n in (1, 2):
        answer.locator(f".gc-body .gc-num[data-number='{n}']").click()
        line = popover.locator(".gc-pop-reasons li").first
        assert len(line.text_content()) <= 300 and line.text_content().endswith("…")
        box = popover.bounding_box()
        assert box["height"] < 1_500 and box["width"] <= visit.page.viewport_size["width"], box
        visit.page.keyboard.press("Escape")
    visit.close()
