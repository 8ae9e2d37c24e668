"""`cited_answer`'s answer as Dify's chat draws it: every streamed prefix and the final answer of a real-Dify run
(tests/fixtures/cited_answer/dify_stream.json, recorded by `make test-dify`) rendered in Debian's chromium with the
markdown renderer of Dify 1.16's chat — Streamdown with remark-gfm (singleTilde off), remark-breaks, rehype raw →
sanitize → harden, Dify's URL rule and link component (tests/fixtures/dify_markdown/render.jsx).

The renderer's packages are installed from the npm registry at test time, at the versions pinned in
tests/fixtures/dify_markdown/package-lock.json, into a cache folder keyed by those files (GCITE_NPM_CACHE, default
~/.cache/gcite/dify-markdown), and bundled with esbuild from the same install. No browser is downloaded.
The final answer's screenshot is docs/cited-answer-in-dify-chat.png.
"""

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

RENDERER = ROOT / "tests" / "fixtures" / "dify_markdown"
RENDERER_FILES = ("package.json", "package-lock.json", "render.jsx")
RECORDING = ROOT / "tests" / "fixtures" / "cited_answer" / "dify_stream.json"
SCREENSHOT = ROOT / "docs" / "cited-answer-in-dify-chat.png"
CACHE = Path(os.environ.get("GCITE_NPM_CACHE") or Path.home() / ".cache" / "gcite" / "dify-markdown")
SUP_MARKUP = re.compile(r'<sup title="([^"]*)">\[(\d+)\]\(#gcite-\d+\)</sup>')

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists() and not os.environ.get("CI"),
        reason="Debian's chromium is not installed (make test installs it; in CI this fails)",
    ),
]

PAGE = """<!doctype html><html lang="zh-CN"><head><meta charset="utf-8"><style>
body { margin: 0; background: #f2f4f7; font: 14px/1.7 "Noto Sans CJK SC", "Noto Sans", sans-serif; color: #101828; }
.chat { width: 680px; padding: 20px 24px; }
.question { margin: 0 0 12px auto; width: fit-content; max-width: 80%; padding: 8px 14px; border-radius: 16px;
            background: #d1e0ff; }
.chat-answer-container { padding: 10px 16px; border-radius: 16px; background: #fff; overflow: auto;
                         box-shadow: 0 1px 2px rgba(16, 24, 40, .06); }
.chat-answer-container.short { max-height: 90px; }
p { margin: 6px 0; }
ol { margin: 4px 0; padding-left: 1.6em; }
li { margin: 2px 0; }
sup { font-size: 75%; line-height: 0; }
[data-streamdown="strong"] { font-weight: 600; }
a { color: #155eef; }
sup a { text-decoration: none; font-weight: 600; }
</style></head><body><div class="chat"><div class="question" id="question"></div>
<div class="chat-answer-container short" id="container"><div class="markdown-body" id="answer"></div></div></div>
</body></html>"""

SNAPSHOT = """() => {
  const answer = document.getElementById('answer');
  return {
    text: answer.textContent,
    sups: [...answer.querySelectorAll('sup')].filter(s => s.querySelector('a')).map(s => ({
      number: s.textContent.trim(), title: s.getAttribute('title') || '',
      href: s.querySelector('a').getAttribute('href')})),
    anchors: [...answer.querySelectorAll('li [id^="gcite-"]')].map(e => e.id),
  };
}"""


def run(command, cwd):
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command[:2])} failed: {(done.stderr or done.stdout)[-2000:]}")


@pytest.fixture(scope="module")
def renderer_js():
    """The renderer bundled for the browser: installed and bundled once per version of the pinned files."""
    npm = shutil.which("npm")
    if npm is None:
        if os.environ.get("CI"):
            pytest.fail("npm is not installed: the renderer of Dify's chat is installed from the npm registry")
        pytest.skip("npm is not installed (Debian's npm package)")
    key = hashlib.sha256(b"".join((RENDERER / name).read_bytes() for name in RENDERER_FILES)).hexdigest()[:16]
    bundle = CACHE / key / "render.js"
    if not bundle.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as work:
            for name in RENDERER_FILES:
                shutil.copy(RENDERER / name, work)
            run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], work)  # the lock's exact versions
            run(
                [
                    str(Path(work) / "node_modules" / ".bin" / "esbuild"),
                    "render.jsx",
                    "--bundle",
                    "--format=iife",
                    "--jsx=automatic",
                    "--minify",
                    '--define:process.env.NODE_ENV="production"',
                    "--outfile=render.js",
                ],
                work,
            )
            bundle.parent.mkdir(exist_ok=True)
            os.replace(Path(work) / "render.js", bundle)
    return bundle.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def page(renderer_js):
    from playwright.sync_api import sync_playwright

    recording = json.loads(RECORDING.read_text(encoding="utf-8"))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(locale="zh-CN", viewport={"width": 730, "height": 600})
        tab = context.new_page()
        errors = []
        tab.on("pageerror", lambda error: errors.append(str(error)))
        tab.set_content(PAGE)
        tab.add_script_tag(content=renderer_js)
        tab.evaluate("q => { document.getElementById('question').textContent = q; }", recording["query"])
        yield tab, recording
        assert errors == []
        context.close()
        browser.close()


def render(tab, markdown, streaming):
    tab.evaluate("([markdown, streaming]) => window.renderAnswer(markdown, streaming)", [markdown, streaming])
    return tab.evaluate(SNAPSHOT)


def expected_titles(answer):
    return {int(n): html.unescape(title) for title, n in SUP_MARKUP.findall(answer)}


def test_every_streamed_prefix_shows_numbers_in_order_and_nothing_raw(page):
    tab, recording = page
    answers = [m["answer"] for m in recording["messages"]]
    final = "".join(answers)
    titles = expected_titles(final)
    assert len(titles) >= 2 and len([a for a in answers if a]) >= 10  # a real stream with several citations
    shown = 0
    for n in range(1, len(answers) + 1):
        prefix = "".join(answers[:n])
        seen = render(tab, prefix, streaming=n < len(answers))
        text = seen["text"]
        assert "[C:" not in text and "【C" not in text, (n, text)
        for raw in ("<sup", "</sup", "sup>", "](#gcite", "#gcite-"):
            assert raw not in text, (n, raw, text)
        numbers = [int(s["number"]) for s in seen["sups"]]
        assert list(dict.fromkeys(numbers)) == list(range(1, len(set(numbers)) + 1)), (n, numbers)
        for sup in seen["sups"]:
            assert sup["href"] == f"#gcite-{sup['number']}" and sup["title"] == titles[int(sup["number"])], (n, sup)
        shown = max(shown, len(set(numbers)))
    assert shown == len(titles)


def test_the_final_answer_lists_each_source_and_each_number_scrolls_to_it(page):
    tab, recording = page
    final = "".join(m["answer"] for m in recording["messages"])
    seen = render(tab, final, streaming=False)
    count = len(expected_titles(final))
    assert list(dict.fromkeys(int(s["number"]) for s in seen["sups"])) == list(range(1, count + 1))
    assert seen["anchors"] == [f"gcite-{n}" for n in range(1, count + 1)]  # one list item per cited source
    for number in range(1, count + 1):
        tab.evaluate("document.getElementById('container').scrollTop = 0")
        visible = f"""() => {{
          const box = document.getElementById('container').getBoundingClientRect();
          const item = document.getElementById('gcite-{number}').closest('li').getBoundingClientRect();
          return item.top >= box.top - 1 && item.bottom <= box.bottom + 1;
        }}"""
        assert not tab.evaluate(visible), "the list must start out of view for the scroll to show"
        tab.locator(f'sup a[href="#gcite-{number}"]').first.click()
        tab.wait_for_function(visible, timeout=5000)


def test_a_screenshot_of_the_final_answer_goes_in_the_docs(page):
    tab, recording = page
    render(tab, "".join(m["answer"] for m in recording["messages"]), streaming=False)
    tab.evaluate("document.getElementById('container').classList.remove('short')")
    tab.locator(".chat").screenshot(path=str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 10_000
